"""Calibration: the smallest noise (or largest rate / number of steps) that meets a target.

Contract of :func:`calibrate_decreasing` (``fn`` non-increasing, e.g. epsilon as a function of
the noise multiplier):

* the returned ``value`` always satisfies ``fn(value) <= target (1 - 1e-12)`` -- it is the
  *upper* end of a bracket ``(lo, value]`` both of whose ends were evaluated (``fn(lo)`` above
  that), so this is checked, not assumed. The 1e-12 relative margin keeps the promise when the
  same epsilon is recomputed elsewhere and differs at rounding level;
* the bracket is narrowed until ``value <= lo * (1 + rtol)``; hence for a continuous,
  strictly decreasing ``fn`` the exact root x* lies in ``(lo, value]`` and
  ``x* <= value <= x* (1 + rtol)`` (default ``rtol = 1e-6``). Where ``fn`` is an upper bound
  that ripples or jumps in x (a sigma-grid bound; D2P2's projection failure split), the
  returned value still meets the target, but it is only the crossing the search found, not
  necessarily within ``rtol`` of the smallest x that meets it.

Search: bracketing from 1 (or the given bounds) by power-law extrapolation of the last two
values, then safeguarded regula falsi on ``(log x, log fn(x))`` ending with a straddle of the
estimate (typically 6-10 evaluations in all, against 9-26 for factor-2 bracketing plus
Brent); every evaluation updates the bracket, and a final log-space bisection guarantees the
tolerance if the root finder stopped short of it.  No scipy import (start-up time).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from accounting.errors import UnreachableTarget

__all__ = ["CalibrationResult", "calibrate_decreasing", "calibrate_increasing", "calibrate_steps"]

DEFAULT_RTOL = 1e-6
_MIN_X = 1e-12
_MAX_X = 1e12


@dataclass(frozen=True)
class CalibrationResult:
    """``value`` (meets the target), ``achieved = fn(value)``, evaluations used, final bracket.

    Attributes:
        value: the calibrated value (meets the target).
        achieved: ``fn(value)``.
        iterations: evaluations of ``fn`` used.
        bracket: the final ``(lower, upper)`` bracket.
    """

    value: float
    achieved: float
    iterations: int
    bracket: tuple[float, float]


#: relative margin below the target that a calibrated value must meet (see ``_Tracker``)
_GUARD = 1e-12


class _Tracker:
    """Evaluates fn, keeping the tightest bracket seen: largest failing x, smallest passing x."""

    def __init__(self, fn: Callable[[float], float], target: float) -> None:
        self.fn, self.target = fn, target
        # A value passes only with a relative margin of _GUARD below the target: the same epsilon
        # recomputed elsewhere (another process, a cold grid cache, another batch of orders) can
        # differ at rounding level (~1e-16 relative), and must still meet the target.
        self.bar = target - abs(target) * _GUARD
        self.lo, self.lo_val = -math.inf, math.nan  # largest x with fn(x) > target
        self.hi, self.hi_val = math.inf, math.nan  # smallest x with fn(x) <= target
        self.calls = 0

    def ok(self, x: float) -> bool:
        self.calls += 1
        v = float(self.fn(x))
        passed = v <= self.bar  # NaN compares False: treated as failing (conservative)
        if passed and x < self.hi:
            self.hi, self.hi_val = x, v
        if not passed and x > self.lo:
            self.lo, self.lo_val = x, v
        return passed

    def g(self, u: float) -> float:
        """Brent's objective on u = log x; infinities/NaN mapped to large finite values."""
        x = math.exp(u)
        self.ok(x)
        v = self.hi_val if x == self.hi else self.lo_val
        if not math.isfinite(v):
            return 1e300
        return v - self.target


def calibrate_decreasing(
    fn: Callable[[float], float],
    target: float,
    *,
    option: str,
    lower: float | None = None,
    upper: float | None = None,
    rtol: float = DEFAULT_RTOL,
    max_iter: int = 200,
    start: float | None = None,
) -> CalibrationResult:
    """Smallest x (to relative tolerance ``rtol``) with ``fn(x) <= target``; fn non-increasing.

    ``lower``/``upper`` bound the search (defaults 1e-12 and 1e12).  If ``fn(lower) <= target``
    the answer is ``lower``.  If even ``fn(upper) > target`` (or fn is inf/NaN there) no value
    reaches the target: :class:`UnreachableTarget` naming ``option``.  ``start`` (a guess of the
    root, e.g. from a cheaper bound) starts the bracketing there with small first steps; it
    changes only which points are evaluated, never the contract.

    Args:
        fn: a non-increasing function of x (e.g. epsilon of the noise multiplier).
        target: the value ``fn`` must not exceed.
        option: the option named in errors (e.g. ``"--eps"``).
        lower: smallest x searched (default 1e-12).
        upper: largest x searched (default 1e12).
        rtol: relative tolerance on x.
        max_iter: evaluations allowed after bracketing.
        start: an optional guess of the root.

    Returns:
        A :class:`CalibrationResult` whose ``value`` satisfies ``fn(value) <= target``.

    Raises:
        UnreachableTarget: ``fn(upper) > target`` (or is inf/NaN).
    """
    if not (isinstance(target, int | float) and math.isfinite(target)):
        raise UnreachableTarget(option, f"target must be a finite number (got {target!r})")
    if not 0 < rtol < 0.5:
        raise ValueError("rtol must be in (0, 0.5)")
    x_min = _MIN_X if lower is None else float(lower)
    x_max = _MAX_X if upper is None else float(upper)
    if not (0 < x_min < x_max and math.isfinite(x_max)):
        raise ValueError(f"need 0 < lower < upper < inf (got {x_min}, {x_max})")
    tr = _Tracker(fn, target)

    # 1. Bracket: from a starting point inside [x_min, x_max], step towards the target, by a
    #    factor 2 at first and then by the log-log extrapolation of the last two values (the
    #    epsilon of a noise multiplier is close to a power law in it), overshooting a little so
    #    that one step usually crosses.  Any step sequence is sound: only evaluations decide.
    x = min(max(1.0, x_min), x_max) if lower is None or upper is None else math.sqrt(x_min * x_max)
    min_factor = 2.0
    if start is not None and math.isfinite(start) and start > 0:
        x, min_factor = min(max(float(start), x_min), x_max), _HINT_FACTOR
    prev: tuple[float, float] | None = None
    if tr.ok(x):
        while tr.lo == -math.inf:
            if x <= x_min:
                return CalibrationResult(tr.hi, tr.hi_val, tr.calls, (x_min, tr.hi))
            nxt = _bracket_step(x, tr.hi_val, prev, target, down=True, min_factor=min_factor)
            prev, x = (x, tr.hi_val), max(nxt, x_min)
            tr.ok(x)
            if tr.calls > max_iter:
                raise RuntimeError("calibration did not bracket the target")
    else:
        while tr.hi == math.inf:
            if x >= x_max:
                raise UnreachableTarget(
                    option,
                    f"no value up to {x_max:g} reaches the target {target:g} "
                    f"(still {tr.lo_val:g} at {x_max:g})",
                )
            nxt = _bracket_step(x, tr.lo_val, prev, target, down=False, min_factor=min_factor)
            prev, x = (x, tr.lo_val), min(nxt, x_max)
            tr.ok(x)
            if tr.calls > max_iter:
                raise RuntimeError("calibration did not bracket the target")

    # 2. Root: safeguarded regula falsi on (log x, log fn) inside the bracket, then a final
    #    straddle of the estimate (see _refine); every evaluation narrows the tracked bracket.
    _refine(tr, target, rtol, max_iter)

    # 3. Guarantee: bisect in log space until value <= lo * (1 + rtol).
    while tr.hi > tr.lo * (1.0 + rtol):
        tr.ok(math.sqrt(tr.lo * tr.hi))
        if tr.calls > 10 * max_iter:
            raise RuntimeError("calibration did not converge")
    return CalibrationResult(tr.hi, tr.hi_val, tr.calls, (tr.lo, tr.hi))


_MAX_BRACKET_FACTOR = 1024.0
_OVERSHOOT = 1.25  # in log x: aim a quarter beyond the extrapolated root
_HINT_FACTOR = 1.002  # first step when started from a guess of the root


def _log_pos(v: float) -> float:
    """log v for a finite positive v, else NaN (the caller then falls back to a fixed step)."""
    return math.log(v) if math.isfinite(v) and v > 0 else math.nan


def _bracket_step(
    x: float, v: float, prev: tuple[float, float] | None, target: float, *, down: bool, min_factor: float
) -> float:
    """Next bracketing point from x (value v): the power-law extrapolation through (x, v) and
    ``prev`` towards ``target``, overshot by :data:`_OVERSHOOT` (in log x) and kept between
    ``min_factor`` and :data:`_MAX_BRACKET_FACTOR` away from x; without an extrapolation
    ``min_factor`` (the first step), then factors that double in log x."""
    log_step = math.log(min_factor)
    if prev is not None:
        log_step = 2.0 * abs(math.log(x) - math.log(prev[0]))
        lx0, lv0, lv1, lt = math.log(prev[0]), _log_pos(prev[1]), _log_pos(v), math.log(target)
        slope = (lv1 - lv0) / (math.log(x) - lx0) if math.log(x) != lx0 else math.nan
        if slope < 0:  # decreasing, as it must be; NaN compares False
            guess = abs((lt - lv1) / slope) if math.isfinite(lv1) else math.nan
            if math.isfinite(guess):
                log_step = max(guess * _OVERSHOOT, math.log(min_factor))
    factor = math.exp(min(log_step, math.log(_MAX_BRACKET_FACTOR)))
    return x / factor if down else x * factor


def _refine(tr: _Tracker, target: float, rtol: float, max_iter: int) -> None:
    """Shrink the bracket ``(tr.lo, tr.hi]`` towards the root of ``log fn(x) = log target``.

    Regula falsi with the Illinois modification on ``(log x, log fn)`` (nearly linear for the
    privacy curves calibrated here); a bisection step whenever an end value is not finite and
    positive, or the bracket did not halve over three steps.  Once two successive estimates
    agree to within the tolerance, the estimate is straddled at +-0.45 of the target log-width,
    which usually ends the search with two evaluations.  Termination and the final guarantee
    come from the bisection in :func:`calibrate_decreasing`; this only saves evaluations.
    """
    width_goal = math.log1p(rtol)
    lt = math.log(target)
    side_count = {True: 0, False: 0}
    last_est = math.nan
    widths: list[float] = []
    for _ in range(max_iter):
        ulo, uhi = math.log(tr.lo), math.log(tr.hi)
        width = uhi - ulo
        if width <= width_goal:
            return
        widths.append(width)
        flo, fhi = _log_pos(tr.lo_val) - lt, _log_pos(tr.hi_val) - lt
        stalled = len(widths) > 3 and width > 0.5 * widths[-4]
        if not (math.isfinite(flo) and math.isfinite(fhi)) or stalled:
            est = 0.5 * (ulo + uhi)
            widths.clear()
        else:
            # Illinois: halve the weight of an end that has not moved for two steps.
            # (passes move hi, so a run of passes leaves lo in place, and vice versa)
            wlo = 0.5 ** max(side_count[True] - 1, 0)
            whi = 0.5 ** max(side_count[False] - 1, 0)
            flo_w, fhi_w = flo * wlo, fhi * whi
            est = ulo + (uhi - ulo) * flo_w / (flo_w - fhi_w) if flo_w != fhi_w else 0.5 * (ulo + uhi)
            if abs(est - last_est) < 0.5 * width_goal:
                lo_probe = max(est - 0.45 * width_goal, ulo + 0.05 * width_goal)
                hi_probe = min(est + 0.45 * width_goal, uhi - 0.05 * width_goal)
                for probe in (hi_probe, lo_probe):
                    if math.log(tr.lo) < probe < math.log(tr.hi):
                        tr.ok(math.exp(probe))
                last_est = math.nan
                continue
        margin = 0.01 * width
        est = min(max(est, ulo + margin), uhi - margin)
        last_est = est
        passed = tr.ok(math.exp(est))
        side_count[passed] += 1
        side_count[not passed] = 0


def calibrate_increasing(
    fn: Callable[[float], float],
    target: float,
    *,
    option: str,
    lower: float | None = None,
    upper: float | None = None,
    rtol: float = DEFAULT_RTOL,
    max_iter: int = 200,
) -> CalibrationResult:
    """Largest x (to relative tolerance ``rtol``) with ``fn(x) <= target``; fn non-decreasing
    (e.g. epsilon as a function of the sampling rate, with ``upper=1``).

    Solved as :func:`calibrate_decreasing` in ``y = 1/x``; the result satisfies the target and
    ``x* / (1 + rtol) <= value <= x*``.  If ``fn(upper) <= target`` the answer is ``upper``;
    if even ``fn(lower) > target``, :class:`UnreachableTarget`.

    Args:
        fn: a non-decreasing function of x (e.g. epsilon of the sampling rate).
        target: the value ``fn`` must not exceed.
        option: the option named in errors.
        lower: smallest x searched.
        upper: largest x searched (e.g. 1 for a rate).
        rtol: relative tolerance on x.
        max_iter: evaluations allowed after bracketing.

    Returns:
        A :class:`CalibrationResult` whose ``value`` satisfies ``fn(value) <= target``.

    Raises:
        UnreachableTarget: ``fn(lower) > target``.
    """
    lo_y = None if upper is None else 1.0 / float(upper)
    hi_y = None if lower is None else 1.0 / float(lower)
    res = calibrate_decreasing(
        lambda y: fn(1.0 / y), target, option=option, lower=lo_y, upper=hi_y, rtol=rtol, max_iter=max_iter
    )
    lo, hi = res.bracket
    return CalibrationResult(1.0 / res.value, res.achieved, res.iterations, (1.0 / hi, 1.0 / lo))


def calibrate_steps(
    fn_of_steps: Callable[[int], float],
    target: float,
    *,
    option: str,
    max_steps: int = 10**9,
) -> CalibrationResult:
    """Largest integer ``T >= 1`` with ``fn(T) <= target``; fn non-decreasing in T.

    Doubling from T = 1 then integer bisection, so the answer is exact.  If ``fn(1) > target``
    no number of steps works: :class:`UnreachableTarget`.  If the target still holds at
    ``max_steps`` that cap is returned (bracket ``(max_steps, inf)``).

    Args:
        fn_of_steps: a non-decreasing function of the number of steps.
        target: the value ``fn_of_steps`` must not exceed.
        option: the option named in errors.
        max_steps: the largest T searched.

    Returns:
        A :class:`CalibrationResult` whose ``value`` is the largest such T (a float holding an
        integer).

    Raises:
        UnreachableTarget: ``fn_of_steps(1) > target``.
    """
    calls = 1
    v1 = float(fn_of_steps(1))
    if not v1 <= target:
        raise UnreachableTarget(option, f"even a single step gives {v1:g} > target {target:g}")
    good, good_val, bad = 1, v1, None
    t = 1
    while bad is None:
        if t >= max_steps:
            return CalibrationResult(float(good), good_val, calls, (float(good), math.inf))
        t = min(2 * t, max_steps)
        v = float(fn_of_steps(t))
        calls += 1
        if v <= target:
            good, good_val = t, v
        else:
            bad = t
    while bad - good > 1:
        mid = (good + bad) // 2
        v = float(fn_of_steps(mid))
        calls += 1
        if v <= target:
            good, good_val = mid, v
        else:
            bad = mid
    return CalibrationResult(float(good), good_val, calls, (float(good), float(bad)))
