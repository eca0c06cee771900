"""What dp-accounting's PLD accountant would cost, estimated from the event before calling it.

dp-accounting's pessimistic ``PLDAccountant`` builds, for each (rate, noise) step kind and each
direction (add, remove), a discretised privacy-loss PMF (``n1`` points: the loss range between the
1e-15 tails divided by the value discretization interval), then self-composes it with one FFT whose
length is the Chernoff truncation window of ``pld.common.compute_self_convolve_bounds`` (40 orders
``k / n1``, ``k = +-1..20``, tail 1e-15).  Both sizes follow from the loss distribution alone, so
:func:`pld_size` evaluates the same quantities by quadrature of the loss ``L(x)`` of the Gaussian
pair, each loss rounded up to the grid as the pessimistic PMF does (no PMF is built): ``n1`` and the
window ``n_out``.  At ``T = 1e9``, ``q = 0.02``, ``z = 4`` the
window is ~1e9 points (dp-accounting then asks for 9 GiB); at ``z = 0.1`` the single PMF alone has
~1.5e6 points per direction and takes minutes to build.

:func:`check_pld_cost` turns the sizes into seconds with rates measured on the 2-core reference
machine (about 0.4 us per output point, 5 us per PMF point) and refuses, naming
``--accountant rdp``, past :data:`PLD_BUDGET_S`.  The estimate only decides whether to start; it
never changes a reported number.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accounting.errors import InvalidParameter

__all__ = ["PLD_BUDGET_S", "pld_size", "pld_seconds", "check_pld_cost"]

#: Refuse a PLD evaluation estimated above this many seconds (the envelope promises ~30 s).
PLD_BUDGET_S = 30.0
#: Or one whose FFT window (points, both directions) would exceed this (8 bytes x 4 arrays each).
PLD_MAX_POINTS = 1.5e8

#: And at most this many composed steps: the estimate is not trusted past the envelope (T <= 1e9).
#: At q = 1e-9, z = 0.45 the add direction's window was 7x the estimate at T = 1e9 and ~50x at
#: T = 3e13 (rare large negative losses dominate its Chernoff window), so a count cap backs it up.
PLD_MAX_STEPS = 10**10

_TAIL = 1e-15
_US_PER_OUT = 0.4e-6
_US_PER_PMF = 5e-6
_Z_TAIL = 8.3  # N(0,1) quantile of the 1e-15 tail mass each side (dp-accounting's truncation)


def _loss_grid(q: float, z: float, add: bool) -> tuple[np.ndarray, np.ndarray]:
    """Loss values and their log-weights on a quadrature grid for one direction of one step.

    Remove: ``x ~ (1-q) N(0, z^2) + q N(1, z^2)``, ``L = log(1 - q + q e^{(2x-1)/(2z^2)})``.
    Add: ``x ~ N(0, z^2)``, ``L = -log(1 - q + q e^{(2x-1)/(2z^2)})`` (the pair swapped)."""
    x = np.linspace(-_Z_TAIL * z, 1.0 + _Z_TAIL * z, 4001)
    s = (2.0 * x - 1.0) / (2.0 * z * z)
    if q >= 1.0:
        lr = s
    else:
        lr = np.logaddexp(math.log1p(-q), math.log(q) + s)
    log_n0 = -0.5 * (x / z) ** 2
    if add:
        return -lr, log_n0
    log_n1 = -0.5 * ((x - 1.0) / z) ** 2
    w = log_n1 if q >= 1.0 else np.logaddexp(math.log1p(-q) + log_n0, math.log(q) + log_n1)
    return lr, w


def pld_size(q: float, z: float, count: int, vdi: float) -> tuple[float, float]:
    """(PMF points, FFT window points), summed over both directions, of ``count`` self-composed
    Poisson-subsampled Gaussian steps (rate ``q``, noise multiplier ``z``) at interval ``vdi``."""
    n1_total, out_total = 0.0, 0.0
    for add in (False, True):
        loss, logw = _loss_grid(q, z, add)
        # the pessimistic PMF rounds every loss up to the grid: at tiny q each step then carries
        # ~vdi/2 of loss (not ~q^2), so the composed window grows like T/2 points
        loss = np.ceil(loss / vdi) * vdi
        logw = logw - np.logaddexp.reduce(logw)
        lo, hi = float(loss.min()), float(loss.max())
        n1 = max(2.0, (hi - lo) / vdi)
        rng = hi - lo
        if rng <= 0:
            n1_total += n1
            out_total += n1
            continue
        shifted = loss - lo
        best_hi, best_lo = count * rng, 0.0
        for k in range(1, 21):
            for sign in (1.0, -1.0):
                lam = sign * k / rng  # dp-accounting's order k / n1 in grid units, in loss units
                with np.errstate(over="ignore", invalid="ignore"):  # inf: this order gives no bound
                    log_mgf = float(np.logaddexp.reduce(logw + lam * shifted))
                if not math.isfinite(log_mgf):
                    continue
                bound = (count * log_mgf + math.log(2.0 / _TAIL)) / lam
                if sign > 0:
                    best_hi = min(best_hi, bound)
                else:
                    best_lo = max(best_lo, bound)
        window = max(best_hi - best_lo, 0.0) / vdi + 1.0
        n1_total += n1
        out_total += max(window, n1)
    return n1_total, out_total


def _kinds(event: Any, count: int = 1) -> list[tuple[float, float, int]] | None:
    """[(q, z, count)] of the subsampled-Gaussian steps ``event`` composes, or None if unknown."""
    from accounting import events as ev

    if isinstance(event, ev.SelfComposedEvent):
        return _kinds(event.event, count * int(event.count))
    if isinstance(event, ev.ComposedEvent):
        out: list[tuple[float, float, int]] = []
        for e in event.events:
            k = _kinds(e, count)
            if k is None:
                return None
            out += k
        return out
    if isinstance(event, ev.SubsampledGaussianEvent):
        return [(float(event.sample_rate), float(event.noise_multiplier), count)]
    if isinstance(event, ev.GaussianEvent):
        return [(1.0, float(event.effective_noise_multiplier), count)]
    if isinstance(event, ev.ScheduleEvent):
        z = np.asarray(event.noise_multipliers, dtype=float)
        q = np.broadcast_to(np.asarray(event.sample_rate, dtype=float), z.shape)
        pairs, counts = np.unique(np.stack([q, z], axis=1), axis=0, return_counts=True)
        return [(float(a), float(b), int(c) * count) for (a, b), c in zip(pairs, counts, strict=True)]
    return None


def pld_seconds(event: Any, vdi: float) -> tuple[float, float] | None:
    """(estimated seconds, FFT points) of dp-accounting's PLD of ``event``; None if not estimable."""
    kinds = _kinds(event)
    if kinds is None:
        return None
    secs, points = 0.0, 0.0
    for q, z, c in kinds:
        with np.errstate(all="ignore"):  # an overflow at tiny z gives inf or nan: refused below
            n1, n_out = pld_size(q, z, c, vdi)
        secs += _US_PER_PMF * n1 + _US_PER_OUT * n_out * max(1.0, math.log2(n_out) / 20.0)
        points += n_out
    return secs, points


def check_pld_cost(event: Any, vdi: float) -> None:
    """Refuse (:class:`InvalidParameter` naming ``--accountant``) a PLD evaluation estimated past
    :data:`PLD_BUDGET_S` seconds or :data:`PLD_MAX_POINTS` points; the RDP accountant has no such
    cost (its work does not grow with T or 1/z)."""
    kinds = _kinds(event)
    steps = sum(c for _, _, c in kinds) if kinds else 0
    if steps > PLD_MAX_STEPS:
        raise InvalidParameter(
            "--accountant",
            f"pld supports at most {PLD_MAX_STEPS:.0e} steps (got {steps:.3g}); use --accountant rdp",
        )
    est = pld_seconds(event, vdi)
    if est is None:
        return
    secs, points = est
    if not (math.isfinite(secs) and math.isfinite(points)):
        raise InvalidParameter(
            "--accountant",
            "pld cannot be sized at these parameters (its cost estimate overflows); use --accountant rdp",
        )
    if secs > PLD_BUDGET_S or points > PLD_MAX_POINTS:
        raise InvalidParameter(
            "--accountant",
            f"pld would need about {secs:.2g} s and {points * 8 / 2**30:.2g} GiB per array here "
            f"(dp-accounting's privacy-loss grid grows with T and 1/z); use --accountant rdp",
        )
