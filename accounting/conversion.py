"""RDP -> (epsilon, delta) conversion.

``improved`` (default) is the conversion dp-accounting uses (``compute_epsilon`` /
``compute_delta`` in ``rdp_privacy_accountant.py``), reimplemented here:

* at an order ``a > 1.01``: ``eps = rdp + log1p(-1/a) - (log(delta) + log(a)) / (a - 1)``
  (Balle et al. 2020, "Hypothesis testing interpretations and Renyi DP", Prop. 12 (v4);
  Canonne, Kamath, Steinke 2020, Eq. 20).  Below 1.01 the formula is numerically unstable and
  useless, so it is not applied (exactly as dp-accounting).
* KL fallback at every order ``a >= 1``: RDP at ``a`` upper-bounds the KL divergence, and by
  Bretagnolle-Huber the total variation is ``<= sqrt(1 - exp(-KL))``; since
  ``delta(eps) <= delta(0) = TV``, ``eps = 0`` is valid whenever
  ``delta >= sqrt(1 - exp(-rdp))`` (dp-accounting's test ``delta^2 + expm1(-rdp) > 0``).

``classic`` is Mironov 2017, Prop. 3: ``eps = rdp + log(1/delta)/(a - 1)`` (for reproducing papers).

The reported epsilon is the minimum over the orders with a finite RDP value; orders listed in
``curve.dropped`` (rdp = inf) never count.  A negative RDP value (only possible as log-space
rounding, a Renyi divergence is >= 0) is raised to 0 rather than turned into eps = 0 as
dp-accounting does -- the conservative choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter
from accounting.rdp import RdpCurve

__all__ = ["METHODS", "EpsilonResult", "epsilon_per_order", "rdp_to_delta", "rdp_to_epsilon"]

METHODS = ("improved", "classic")
#: Lowest order the improved conversion uses (its ``log((alpha-1)/alpha)`` term blows up at 1).
MIN_IMPROVED_ORDER = 1.01


@dataclass(frozen=True)
class EpsilonResult:
    """Epsilon at ``delta``, the order attaining it, and warnings (e.g. optimum on the grid edge).

    Attributes:
        epsilon: the epsilon (``inf`` when no order gives a finite value).
        delta: the delta it holds at.
        order: the Renyi order attaining it (``nan`` with ``epsilon = inf``).
        method: the conversion used (``"improved"`` or ``"classic"``).
        on_edge: whether the optimum is the smallest or largest usable order of the grid.
        warnings: human-readable warnings.
    """

    epsilon: float
    delta: float
    order: float
    method: str
    on_edge: bool
    warnings: tuple[str, ...] = ()


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else InvalidParameter naming ``--conversion``."""
    if method not in METHODS:
        raise InvalidParameter("--conversion", f"must be one of {', '.join(METHODS)} (got {method!r})")
    return method


def epsilon_per_order(
    orders: np.ndarray, rdp: np.ndarray, delta: float, method: str = "improved"
) -> np.ndarray:
    """Epsilon bound at each order (inf where the order gives nothing)."""
    delta = validate.open_unit("--delta", delta)
    check_method(method)
    a = np.asarray(orders, dtype=float)
    r = np.maximum(np.asarray(rdp, dtype=float), 0.0)
    eps = np.full(a.shape, np.inf)
    fin = np.isfinite(r)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if method == "classic":
            use = fin & (a > 1)
            eps[use] = r[use] + math.log(1.0 / delta) / (a[use] - 1.0)
        else:
            use = fin & (a > MIN_IMPROVED_ORDER)
            au = a[use]
            eps[use] = r[use] + np.log1p(-1.0 / au) - (math.log(delta) + np.log(au)) / (au - 1.0)
            # RDP bounds KL only at orders >= 1 (D_alpha is non-decreasing in alpha)
            kl = fin & (a >= 1) & (delta**2 + np.expm1(-r) > 0)
            eps[kl] = 0.0
    return np.maximum(eps, 0.0)


def rdp_to_epsilon(curve: RdpCurve, delta: float, *, method: str = "improved") -> EpsilonResult:
    """Smallest epsilon over the curve's orders at ``delta`` (in (0, 1)).

    If no order gives a finite epsilon the result is ``inf`` with a warning (never a guess).

    Args:
        curve: the RDP curve of the mechanism (its ``dropped`` orders are skipped).
        delta: the target delta, in (0, 1).
        method: ``"improved"`` (dp-accounting's conversion, with the KL fallback) or ``"classic"``
            (``eps = rdp + log(1/delta) / (alpha - 1)``).

    Returns:
        An :class:`EpsilonResult`: the epsilon (an upper bound when the curve is), its order and
        the warnings (optimum on the grid edge, dropped or grid-bounded orders).

    Raises:
        InvalidParameter: ``delta`` outside (0, 1) or an unknown ``method``.
    """
    delta = validate.open_unit("--delta", delta)
    method = check_method(method)
    eps = epsilon_per_order(curve.orders, curve.rdp, delta, method)
    warnings: list[str] = []
    if curve.dropped:
        shown = ", ".join(f"{o:g}" for o, _ in curve.dropped[:5])
        more = "" if len(curve.dropped) <= 5 else f" and {len(curve.dropped) - 5} more"
        warnings.append(
            f"RDP orders dropped (could not be evaluated): {shown}{more}; first reason: {curve.dropped[0][1]}"
        )
    if not np.any(np.isfinite(eps)):
        warnings.append("no RDP order gives a finite epsilon at this delta")
        return EpsilonResult(math.inf, delta, math.nan, method, False, tuple(warnings))
    idx = int(np.argmin(eps))
    best = float(eps[idx])
    order = float(curve.orders[idx])
    finite_orders = curve.orders[np.isfinite(curve.rdp)]
    usable = finite_orders[finite_orders > (MIN_IMPROVED_ORDER if method == "improved" else 1.0)]
    on_edge = False
    if best > 0 and usable.size and (order <= usable.min() or order >= usable.max()):
        on_edge = True
        side = "smallest" if order <= usable.min() else "largest"
        warnings.append(
            f"optimal RDP order {order:g} is the {side} usable order of the grid; "
            "epsilon may improve with a wider --orders grid"
        )
    gaps = dict(curve.bounded)
    if order in gaps and best > 0:
        # Certified upper bounds (sigma grid of accounting.rdp, or the smooth-schedule bound of
        # accounting.schedule_bound, long schedules): the exact epsilon is at least the
        # minimum over orders of (epsilon computed from rdp - gap) -- approximately, gaps are
        # estimates -- so the overstatement is about ``best`` minus that minimum.
        g = np.array([gaps.get(float(o), 0.0) for o in curve.orders])
        low = epsilon_per_order(curve.orders, np.maximum(curve.rdp - g, 0.0), delta, method)
        excess = max(0.0, best - float(np.min(low)))
        warnings.append(
            f"long schedule: the RDP at order {order:g} is a certified upper bound (sigma grid or "
            f"smooth-schedule bound), not an exact evaluation; epsilon "
            f"may exceed the exact value by about {excess:.3g} ({excess / best:.1e} relative)"
        )
    return EpsilonResult(best, delta, order, method, on_edge, tuple(warnings))


def rdp_to_delta(curve: RdpCurve, epsilon: float, *, method: str = "improved") -> float:
    """Smallest delta over the curve's orders at ``epsilon`` (>= 0), capped at 1.

    ``improved``: ``log delta = (a-1)(rdp - eps + log1p(-1/a)) - log(a)`` for ``a > 1.01``, with
    the KL bound ``delta <= sqrt(1 - exp(-rdp))`` (as dp-accounting's ``compute_delta``).
    ``classic``: ``delta = exp((a-1)(rdp - eps))``.

    Args:
        curve: the RDP curve of the mechanism.
        epsilon: the target epsilon, >= 0.
        method: ``"improved"`` or ``"classic"``, as in :func:`rdp_to_epsilon`.

    Returns:
        The smallest delta over the orders, in [0, 1].

    Raises:
        InvalidParameter: a negative or NaN ``epsilon`` or an unknown ``method``.
    """
    epsilon = validate.nonnegative("--eps", epsilon)
    method = check_method(method)
    a = curve.orders
    r = np.maximum(curve.rdp, 0.0)
    fin = np.isfinite(r)
    logd = np.full(a.shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if method == "classic":
            use = fin & (a > 1)
            logd[use] = (a[use] - 1.0) * (r[use] - epsilon)
        else:
            logd[fin] = np.where(r[fin] > 0, 0.5 * np.log(-np.expm1(-r[fin])), -np.inf)
            use = fin & (a > MIN_IMPROVED_ORDER)
            au = a[use]
            logd[use] = np.minimum(
                logd[use], (au - 1.0) * (r[use] - epsilon + np.log1p(-1.0 / au)) - np.log(au)
            )
    if not np.any(np.isfinite(logd) | (logd == -np.inf)):
        return 1.0
    return float(min(math.exp(float(np.min(logd))), 1.0))
