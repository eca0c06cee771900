"""DiceSGD's certified RDP from the conservation law of its hidden state.

Derivation: docs/hidden-state.md, "The certified bound outside the flush regime: trajectory-level
conservation", steps K1-K7, and its assumptions list.  In short (noise ``sigma1 = z C1 / B`` on the
averaged update, add/remove adjacency, Poisson rate q, fixed divisor B, only the iterates released):
condition on the others' bits (K1); mix over xi''s whole bit vector by joint convexity (K2); for a
fixed bit vector each release is a Gaussian shift ``Delta_t = b_t c_t / B + u_t``, and since
``clip(., C2)`` is a firmly non-expansive projection, what it releases leaves the hidden difference:
``sum_t ||u_t||^2 <= (n rho / B)^2`` after n inclusions, so ``sum_t ||Delta_t||^2 <= S(n) =
(sqrt(n) C1/B + n rho/B)^2`` on every history (K3-K5); a Renyi filter turns that budget into
``alpha S(n) / (2 sigma1^2)`` (K6, proved in the docs); and
``RDP(alpha) <= log E_{n ~ Bin(T, q)} exp((alpha - 1) alpha S(n) / (2 sigma1^2)) / (alpha - 1)`` (K7).

``rho`` bounds every per-example residual ``g - clip(g, C1)`` (``max(0, G - C1)``, or the residual
clip R; ``residual_norm_bound`` covers automatic clipping).  In units of z,
``S(n) / sigma1^2 = (sqrt(n) + n rho / C1)^2 / z^2``; the bound does not depend on C2, and at rho = 0
it is T full-weight Gaussian releases each present with probability q (never below DP-SGD).  S(n) is
inflated by :data:`FLOAT_MARGIN` for the optimizer's rounding, since K4's equality cases are reachable.

Exact small-T Renyi divergences and every audit stay below it (test_dicesgd_conservation.py).
DiceSGD's ``--mode certified`` takes the minimum of this and its other regimes, each an upper bound;
inside :func:`left_out` (scoped to the calling thread or task) the numbers are the others' alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter
from accounting.rounding import up

__all__ = ["FLOAT_MARGIN", "MAX_STEPS", "conservation_rdp", "conservation_epsilon", "in_use", "left_out"]

_LEFT_OUT: ContextVar[bool] = ContextVar("dptheory_conservation_left_out", default=False)


def in_use() -> bool:
    """Whether DiceSGD's certified minimum includes this bound here (always, outside :func:`left_out`)."""
    return not _LEFT_OUT.get()


@contextmanager
def left_out() -> Iterator[None]:
    """Leave this bound out of DiceSGD's certified minimum inside the block, for this thread or task
    only (a ``ContextVar``): the numbers are then the other regimes' alone, bit for bit.  No global
    is changed, so other threads and later calls are unaffected."""
    token = _LEFT_OUT.set(True)
    try:
        yield
    finally:
        _LEFT_OUT.reset(token)

#: Relative inflation of the squared-shift budget S(n).  K4 is tight (a residual stored, then
#: released in one step, reaches ``sum ||u_t||^2 = (n a)^2``), so the bound has no slack for the
#: optimizer's arithmetic: each projection ``clip(e, C2)`` and each update rounds with relative error
#: about 2^-24 = 6e-8 in float32 (1e-16 in float64).  1e-6 covers some ten float32 roundings of the
#: released shift, on the order of what one step computes, and costs about 5e-7 in relative z.  It
#: is a relative margin: rounding of a large state against a small difference is not covered
#: (docs/hidden-state.md, "Assumptions of the conservation regime").
FLOAT_MARGIN = 1e-6

#: The expectation over n ~ Bin(T, q) is summed exactly over n = 0..T; beyond this many steps the
#: bound is not evaluated (``+inf`` at every order: sound, it then never wins the minimum).
MAX_STEPS = 1_000_000

#: Relative slack on the log-expectation, for the rounding of its log and exp (a few ulps each).
_REL_SLACK = 1e-12
_DROPPED_LARGE_T = "conservation bound only evaluated for T <= 1e6 steps; bound set to +inf"
_DROPPED_ORDER = "conservation bound not evaluable at this order (overflow or alpha = 1); set to +inf"


def _log_binomial_pmf(steps: int, q: float) -> np.ndarray:
    """Upper bounds on ``log P[Bin(T, q) = n]``, n = 0..T.

    The lgamma terms are O(T log T) and cancel; each entry is raised by 16 ulps of the sum of its
    terms' magnitudes (scipy's lgamma is accurate to a few ulps), so every entry is >= the exact value.
    """
    from scipy.special import gammaln

    n = np.arange(steps + 1, dtype=float)
    if q >= 1.0:
        out = np.full(steps + 1, -math.inf)
        out[-1] = 0.0
        return out
    lq, l1q = math.log(q), math.log1p(-q)
    g_t, g_n, g_rest = float(gammaln(steps + 1.0)), gammaln(n + 1.0), gammaln(steps - n + 1.0)
    logpmf = g_t - g_n - g_rest + n * lq + (steps - n) * l1q
    size = g_t + g_n + g_rest + n * abs(lq) + (steps - n) * abs(l1q) + 1.0
    return logpmf + 16.0 * np.finfo(float).eps * size


def conservation_rdp(
    *,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    c1: float,
    rho: float,
    orders,
):
    """RDP curve of T steps of DiceSGD from the conservation law (module docstring, K1-K7).

    ``noise_multiplier`` is ``z = sigma1 B / C1``; ``rho`` bounds every per-example residual norm
    (``max(0, G - C1)`` for flat clipping with gradient bound G).  The expectation over
    ``n ~ Bin(T, q)`` is a log-sum-exp of the log pmf plus ``(alpha - 1) alpha S(n) / (2 sigma1^2)``,
    every rounding allowance added on the upper side; an order whose value is not finite becomes
    ``+inf`` (listed in ``dropped``), never a wrong finite number.  Raises
    :class:`~accounting.errors.InvalidParameter` naming the bad parameter.
    """
    from scipy.special import logsumexp

    from accounting.rdp import RdpCurve

    q = validate.rate("sample_rate", sample_rate)
    z = validate.positive("noise_multiplier", noise_multiplier)
    t = validate.positive_int("steps", steps)
    c1v = validate.positive("c1", c1)
    r = validate.nonnegative("rho", rho) / c1v
    orders = validate.real_array("orders", orders).reshape(-1)
    if orders.size == 0 or np.any(~np.isfinite(orders)) or np.any(orders < 1):
        raise InvalidParameter("orders", "must be a non-empty list of finite orders >= 1")
    rdp = np.full(orders.size, math.inf)
    if t > MAX_STEPS:
        return RdpCurve(orders=orders, rdp=rdp, dropped=tuple((float(a), _DROPPED_LARGE_T) for a in orders))
    logpmf = _log_binomial_pmf(t, q)
    n = np.arange(t + 1, dtype=float)
    usable = orders > 1.0
    a = orders[usable]
    out = np.full(a.size, math.inf)
    chunk = max(1, 2**22 // (t + 1))  # (orders, n) temporaries stay ~32 MB
    # the sum of T + 1 positive terms rounds by at most (T + 2) ulps: added to the log
    sum_slack = (t + 2) * np.finfo(float).eps
    with np.errstate(over="ignore", invalid="ignore"):
        # S(n) / sigma1^2 / 2 with the float margin; each entry a few roundings of positive terms:
        # 8 ulps keep it above
        half_x = ((np.sqrt(n) + n * r) / z) ** 2 / 2.0 * (1.0 + FLOAT_MARGIN) * up(8)
        for i in range(0, a.size, chunk):
            aa = a[i : i + chunk]
            expo = ((aa - 1.0) * aa * up(2))[:, None] * half_x[None, :]
            log_e = logsumexp(logpmf[None, :] + expo, axis=1)
            log_e = log_e + _REL_SLACK * (1.0 + np.abs(log_e)) + sum_slack
            out[i : i + chunk] = np.maximum(log_e, 0.0) / (aa - 1.0) * up(4)
    out[~np.isfinite(out)] = math.inf
    rdp[usable] = out
    dropped = tuple(
        (float(o), _DROPPED_ORDER) for o, v in zip(orders, rdp, strict=True) if not np.isfinite(v)
    )
    return RdpCurve(orders=orders, rdp=rdp, dropped=dropped)


def conservation_epsilon(
    *,
    delta: float,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    c1: float,
    rho: float,
    orders,
    conversion: str = "improved",
):
    """The :class:`accounting.conversion.EpsilonResult` of :func:`conservation_rdp` at ``delta``."""
    from accounting.conversion import rdp_to_epsilon

    curve = conservation_rdp(
        sample_rate=sample_rate, noise_multiplier=noise_multiplier, steps=steps, c1=c1, rho=rho, orders=orders
    )
    return rdp_to_epsilon(curve, validate.open_unit("delta", delta), method=conversion)
