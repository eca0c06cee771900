"""Epsilon of a Poisson-subsampled Gaussian composition by *order screening*: evaluate the RDP
exactly only at the orders that can attain the minimum of the conversion, with the same answer as
converting the whole curve.

Why: a caller that wants epsilon needs the curve only near its optimal order, and most of the
cost of a heterogeneous schedule is in the fractional orders far from it (dp-accounting's grid
has 156 orders, 99 of them below 11, of which 90 are fractional).

How: ``f(alpha) = (alpha - 1) R(alpha)`` of the true RDP ``R`` is convex with ``f(1) = 0`` and
``R`` is non-decreasing, so the evaluated integer orders (values bracketed within their rounding
allowance, :func:`_relative_excess`) give a lower bound ``L(alpha) <= R(alpha)`` at every other
order, with the KL floor besides, and the closed-form bound of :mod:`accounting.rdp_lower`
where it was asked (fractional orders cost ~100x an integer one to evaluate; at small integer
orders the bound is the binomial sum itself, and it also picks the first orders to evaluate).
An order whose epsilon at ``L`` exceeds the best evaluated epsilon cannot be the minimum; the rest are
evaluated until no candidate is left.

Soundness never depends on the screening: the reported epsilon is the conversion of exactly
evaluated orders.  What the screening buys is equality with the whole curve (value to rounding,
same order, same warnings except that a never-evaluated order is never reported as dropped).
Falls back to the whole curve on dropped or grid-bounded values, a short or unsorted grid, or no
finite epsilon.  Derivation, steps 1-5: ``docs/rdp-numerics.md``, "Order screening"; checked by
``tests/accounting/test_order_screen.py`` and ``test_order_screen_random_cases.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from accounting.conversion import (
    MIN_IMPROVED_ORDER,
    EpsilonResult,
    check_method,
    epsilon_per_order,
    rdp_to_epsilon,
)
from accounting.rdp_curve import RdpCurve

__all__ = ["event_epsilon", "kl_floor", "screenable", "screened_epsilon"]

#: Grids with at most this many orders are converted whole (screening would not pay).
_MIN_SCREEN_ORDERS = 12
#: Ratio of neighbouring orders of the first (geometric) subset.
_FIRST_RATIO = 2.0
#: Relative slack on ``B`` for the candidate test (rounding between separate evaluations).
_SLACK = 1e-9
_ULP = 2.0**-52
#: Fractional candidates evaluated per round (see :func:`screened_epsilon`).
_FRAC_BATCH = 4
#: Integer candidates evaluated per round when there are more than twice as many.
_INT_BATCH = 4
#: With a closed-form lower bound: fractional candidates evaluated per round (it leaves few,
#: and the most promising two usually settle the rest).
_FRAC_BATCH_CLOSED = 2
#: With a closed-form lower bound: it is asked at every integer order up to _FIRST_UP_TO (and
#: first-subset points above it may be deferred, see :func:`screened_epsilon`); fractional
#: candidates up to _CLOSED_UP_TO get no integer neighbours evaluated for their chords (the
#: closed-form bound is tighter there).
_FIRST_UP_TO = 20.0
_CLOSED_UP_TO = 20.0
#: Fractional orders this close (relative) to an integer make the whole curve be converted.
_NEAR_INT = 1e-9


def _relative_excess(alpha: np.ndarray) -> np.ndarray:
    """Bound on (computed - true) / computed RDP at integer orders (step 3 in ``docs/rdp-numerics.md``):
    100 x (8 ulp of ``alpha (log alpha + 38) + 2``, divided by the 1e-2 floor of ``log A`` of
    the plain sum) plus 1e-12 for pruning and summation."""
    a = np.asarray(alpha, dtype=float)
    return 100.0 * 8.0 * _ULP * (a * (np.log(a) + 38.0) + 2.0) / 1e-2 + 1e-12


def _first_subset(orders: np.ndarray) -> np.ndarray:
    """Indices of the first evaluated orders: the largest order, and near each point of a
    geometric sequence the closest integer order (they give the lower bounds) -- or the closest
    order when the grid has fewer than two integers.  The smallest usable order, often a slow
    fractional one, is evaluated only when the edge-of-grid warning needs it
    (:func:`screened_epsilon`)."""
    n = orders.size
    pick = {n - 1}
    ints = np.flatnonzero(orders == np.floor(orders))
    pool = ints if ints.size >= 2 else np.arange(n)
    k = int(math.ceil(math.log(orders[-1] / orders[0]) / math.log(_FIRST_RATIO))) + 1
    for t in np.geomspace(orders[0], orders[-1], max(k, 2)):
        pick.add(int(pool[np.argmin(np.abs(np.log(orders[pool] / t)))]))
    return np.array(sorted(pick), dtype=np.intp)


def lower_rdp(orders: np.ndarray, points: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``L(alpha)`` of the module docstring at every order: a lower bound on the true RDP from
    computed RDP ``values`` (upper bounds within :func:`_relative_excess`) at integer ``points``
    (sorted, > 1).  Entries at the points themselves are not meaningful."""
    a = np.asarray(orders, dtype=float)
    if np.size(points) == 0:
        return np.zeros(a.shape)
    p = np.concatenate([[1.0], np.asarray(points, dtype=float)])
    hi = np.concatenate([[0.0], (p[1:] - 1.0) * values])
    lo = np.concatenate([[0.0], (p[1:] - 1.0) * values * (1.0 - _relative_excess(p[1:]))])
    lo = np.maximum(lo, 0.0)
    m = p.size
    f = np.zeros(a.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        # monotone R: the largest lower value below alpha (points sorted: a running max)
        r_lo = np.concatenate([[0.0], lo[1:] / (p[1:] - 1.0)])
        run = np.maximum.accumulate(r_lo)
        j = np.searchsorted(p, a, side="left") - 1  # largest point < alpha (>= 0 since alpha > 1)
        f = np.maximum(f, run[j] * (a - 1.0))
        # right extension of the chord (p[j-1], p[j])
        ok = j >= 1
        jj = np.where(ok, j, 1)
        slope = (lo[jj] - hi[jj - 1]) / (p[jj] - p[jj - 1])
        f = np.where(ok, np.maximum(f, lo[jj] + slope * (a - p[jj])), f)
        # left extension of the chord (p[k], p[k+1]), p[k] the smallest point > alpha
        k = np.searchsorted(p, a, side="right")
        ok = k + 1 < m
        kk = np.where(ok, k, 0)
        kk1 = np.minimum(kk + 1, m - 1)
        slope = (hi[kk1] - lo[kk]) / np.where(ok, p[kk1] - p[kk], 1.0)
        f = np.where(ok, np.maximum(f, lo[kk] - slope * (p[kk] - a)), f)
    f = np.where(np.isfinite(f), f, 0.0)
    return np.maximum(f, 0.0) / (a - 1.0)


def upper_rdp(orders: np.ndarray, points: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Chord of ``(alpha - 1) R`` between the evaluated integer points around each order (inf
    outside them): only a guide for the order in which candidates are evaluated."""
    a = np.asarray(orders, dtype=float)
    if np.size(points) == 0:
        return np.full(a.shape, np.inf)
    p = np.concatenate([[1.0], np.asarray(points, dtype=float)])
    f = np.concatenate([[0.0], (p[1:] - 1.0) * values])
    k = np.searchsorted(p, a, side="right")
    ok = (k >= 1) & (k < p.size)
    k = np.clip(k, 1, p.size - 1)
    w = (a - p[k - 1]) / (p[k] - p[k - 1])
    with np.errstate(invalid="ignore", over="ignore"):
        chord = (1.0 - w) * f[k - 1] + w * f[k]
    return np.where(ok, chord / (a - 1.0), np.inf)


def kl_floor(sample_rate: Any, noise_multiplier: Any, counts: Any = 1) -> float:
    """A lower bound on the RDP at every order > 1 of Poisson-subsampled Gaussian steps
    (``counts`` times each): ``R(alpha) >= KL >= 2 TV^2`` (monotonicity, Pinsker), summed over
    steps, with the exact total variation ``TV = q erf(1 / (2 sqrt 2 sigma))`` of the pair
    ``(1-q) N(0, s^2) + q N(1, s^2)`` vs ``N(0, s^2)`` (their difference is q times that of the two
    Gaussians), with erf itself bounded below by four series terms for small arguments.
    Lowered by 1e-9 relative for rounding.  It keeps orders near 1 out of the candidates, where
    no integer order gives a lower bound."""
    q, z, c = np.broadcast_arrays(
        np.asarray(sample_rate, dtype=float),
        np.asarray(noise_multiplier, dtype=float),
        np.asarray(counts, dtype=float),
    )
    q, z, c = q.reshape(-1), z.reshape(-1), c.reshape(-1)
    uz, inv = np.unique(z, return_inverse=True)
    erf = np.empty(uz.size)
    with np.errstate(divide="ignore", over="ignore"):
        x = 1.0 / (2.0 * math.sqrt(2.0) * uz)
    # For x <= 1/2 the Maclaurin series of erf alternates with decreasing terms, so it is at
    # least its first four terms (relative loss < x^8 / 216 <= 2e-5): one array expression for
    # the many large noises of a long schedule instead of a math.erf call each.
    small = x <= 0.5
    xs = x[small]
    x2 = xs * xs
    erf[small] = (2.0 / math.sqrt(math.pi)) * xs * (1.0 - x2 * (1.0 / 3.0 - x2 * (0.1 - x2 / 42.0)))
    # a per-step noise that underflowed to 0 (e.g. z = 1e-300 on an exp schedule) has TV = q
    erf[~small] = [math.erf(v) if math.isfinite(v) else 1.0 for v in x[~small].tolist()]
    erf = erf[inv.reshape(-1)]
    tv = q * erf
    return float(np.sum(c * 2.0 * tv * tv)) * (1.0 - 1e-9)


def event_floor(event: Any) -> float:
    """:func:`kl_floor` of a :func:`screenable` event."""
    from accounting.events import ComposedEvent, GaussianEvent, ScheduleEvent, SelfComposedEvent

    if isinstance(event, GaussianEvent):
        return kl_floor(1.0, event.effective_noise_multiplier)
    if isinstance(event, ScheduleEvent):
        return kl_floor(*event.step_arrays)
    if isinstance(event, SelfComposedEvent):
        return event.count * event_floor(event.event)
    if isinstance(event, ComposedEvent):
        return sum(event_floor(e) for e in event.events)
    return kl_floor(event.sample_rate, event.noise_multiplier)  # SubsampledGaussianEvent


def screened_epsilon(
    evaluate: Callable[[np.ndarray], RdpCurve],
    orders: np.ndarray,
    delta: float,
    *,
    method: str = "improved",
    floor: float = 0.0,
    lower: Callable[[np.ndarray], np.ndarray] | None = None,
) -> EpsilonResult:
    """``rdp_to_epsilon(evaluate(orders), delta)`` evaluating only the orders that can attain it.

    ``evaluate(sub)`` must return the RDP curve of a composition of Poisson-subsampled Gaussian
    (or plain Gaussian) steps at the orders ``sub`` -- the same values it would give for them
    within the whole grid, up to rounding.  ``floor`` is a lower bound on the true RDP at every
    order (e.g. :func:`kl_floor`; 0 is always valid).  ``lower(sub)``, if given, returns lower
    bounds on the true RDP at the orders ``sub`` (e.g. :func:`accounting.rdp_lower.step_lower_function`);
    it is asked about the first subset with every integer order up to ``_FIRST_UP_TO`` (the
    first round then starts at the integer order of least epsilon at the bound, with its integer
    neighbours), and about the fractional orders that the chords and ``floor`` cannot rule out,
    each order at most once.  See the module docstring for the derivation and the cases that
    fall back to the whole curve.
    """
    method = check_method(method)
    o = np.asarray(orders, dtype=float).reshape(-1)

    def full() -> EpsilonResult:
        return rdp_to_epsilon(evaluate(o), delta, method=method)

    if (
        o.size <= _MIN_SCREEN_ORDERS
        or not np.all(np.isfinite(o))
        or not np.all(np.diff(o) > 0)
        or not o[0] > 1.0
    ):
        return full()  # includes invalid grids (inf, NaN, <= 1): the whole path's error
    n = o.size
    is_int = o == np.floor(o)
    if np.any(~is_int & (np.abs(o - np.round(o)) < _NEAR_INT * o)):
        # e.g. 6.000000000000001 from a stepped --orders range: the fractional series gives
        # NaN there and the whole curve lists the order as dropped, which only evaluating it
        # shows -- so evaluate everything and keep that warning
        return full()
    done = np.zeros(n, dtype=bool)
    rdp = np.full(n, np.inf)
    todo = _first_subset(o)
    closed = np.zeros(n)  # lower(...) at the orders asked so far
    asked = np.zeros(n, dtype=bool)
    if lower is not None:
        # Ask the closed-form bound at the first subset and at every integer order up to
        # _FIRST_UP_TO (one call).  There it is the binomial sum itself, to ~1e-11 a step
        # (rdp_lower), so it rules integer candidates in or out almost as an evaluation would,
        # and its least epsilon points at the optimum: the first round evaluates that integer
        # order and its integer neighbours (their chords bound the fractional orders around it)
        # instead of the whole geometric subset.  Only the order of evaluation changes; any
        # order the bounds leave a candidate is evaluated later like the others.
        ask = np.union1d(todo, np.flatnonzero(is_int & (o <= _FIRST_UP_TO)))
        closed[ask] = lower(o[ask])
        asked[ask] = True
        at_int = ask[is_int[ask]]
        eps_int = epsilon_per_order(o[at_int], closed[at_int], delta, method)
        if np.any(np.isfinite(eps_int)):
            ints = np.flatnonzero(is_int)
            pick = at_int[int(np.argmin(np.where(np.isfinite(eps_int), eps_int, np.inf)))]
            k = int(np.searchsorted(ints, pick))
            todo = ints[max(0, k - 1) : k + 2]
        else:
            # Leave out the first subset's points above _FIRST_UP_TO (the largest too) whose
            # epsilon at the bound exceeds the least such epsilon of the subset.
            eps_first = epsilon_per_order(o[todo], closed[todo], delta, method)
            if np.any(np.isfinite(eps_first)):
                far = (o[todo] > _FIRST_UP_TO) & (eps_first > np.min(eps_first))
                todo = todo[~far]
    usable = np.flatnonzero(o > (MIN_IMPROVED_ORDER if method == "improved" else 1.0))
    idx = np.arange(n)
    while todo.size:
        curve = evaluate(o[todo])
        if curve.dropped or curve.bounded:
            return full()
        rdp[todo] = curve.rdp
        done[todo] = True
        eps = epsilon_per_order(o[done], rdp[done], delta, method)
        if not np.any(np.isfinite(eps)):
            return full()
        b = float(np.min(eps))
        best = int(idx[done][int(np.argmin(eps))])
        pts = done & is_int
        low = np.maximum(lower_rdp(o, o[pts], rdp[pts]), floor)
        low = np.where(asked, np.maximum(low, closed), low)
        eps_low = epsilon_per_order(o, low, delta, method)
        cand = ~done & (eps_low <= b * (1.0 + _SLACK))
        if lower is not None and not np.any(cand & is_int):
            # Fractional candidates only (integer ones are cheap to evaluate): the closed-form
            # bound, asked once per order, rules most of them out (rdp_lower's docstring).
            ask = np.flatnonzero(cand & ~asked)
            if ask.size:
                closed[ask] = lower(o[ask])
                asked[ask] = True
            sel = np.flatnonzero(cand)
            eps_closed = epsilon_per_order(o[sel], np.maximum(low[sel], closed[sel]), delta, method)
            cand[sel] = eps_closed <= b * (1.0 + _SLACK)
        if b == 0.0:
            cand &= idx < best  # ties go to the first order, and nothing beats 0
        if np.any(cand & is_int):
            cand &= is_int  # integer orders first: cheap, and they tighten L for the rest
            many = np.flatnonzero(cand)
            if many.size > 2 * _INT_BATCH:
                # the ones next to the best order first: chords of close neighbours rule out
                # the far ones (measured, inv-k sigma0 = 30, T = 200, q = 0.01, delta = 1e-5,
                # dp-accounting's grid: 22 orders in 4 rounds instead of 36 in 2)
                near_best = many[np.argsort(np.abs(many - best), kind="stable")[:_INT_BATCH]]
                cand = np.zeros(n, dtype=bool)
                cand[near_best] = True
        elif np.any(cand):
            # ... and the integer orders of the grid around fractional candidates (the chords
            # that bound them from below), before any fractional order is evaluated
            lo_n = np.floor(o[cand]).min() - 1.0
            hi_n = np.ceil(o[cand]).max() + 1.0
            near = np.zeros(n, dtype=bool)
            for a in np.unique(np.floor(o[cand])):
                near |= (o >= a - 1.0) & (o <= a + 2.0)
            near &= is_int & ~done & (o >= lo_n) & (o <= hi_n)
            if lower is not None and np.all(o[cand] <= _CLOSED_UP_TO):
                near[:] = False  # the closed-form bound is tighter there than the chords
            if near.any():
                cand = near
        todo = np.flatnonzero(cand)
        batch = _FRAC_BATCH if lower is None else _FRAC_BATCH_CLOSED
        if todo.size > batch and not is_int[todo[0]]:
            # Fractional orders cost ~100x more: the most promising few first (smallest epsilon
            # of the chord between evaluated integer neighbours, an upper estimate of their
            # computed value), so that B drops and the next round screens out more.
            up = epsilon_per_order(o[todo], upper_rdp(o[todo], o[pts], rdp[pts]), delta, method)
            todo = np.sort(todo[np.argsort(up, kind="stable")[:batch]])
        if not todo.size and not done[n - 1] and best == int(idx[done][-1]):
            # Likewise at the largest order (deferred above): the best evaluated order is on the
            # edge of the whole curve only if it is the largest order of the grid.
            todo = np.array([n - 1])
        if not todo.size and usable.size and not done[usable[0]]:
            # The conversion warns when the optimum is the smallest usable order of the curve.
            # If the best order is the smallest *evaluated* usable one, whether it is the
            # smallest of the whole curve depends on the orders below it: evaluate the first
            # (finite, or dropped and then the whole curve is converted).
            ev_usable = usable[done[usable]]
            if ev_usable.size and best == int(ev_usable[0]):
                todo = usable[:1]
    return rdp_to_epsilon(RdpCurve(o[done], rdp[done]), delta, method=method)


def screenable(event: Any) -> bool:
    """Whether ``event.rdp`` is a composition of Poisson-subsampled Gaussian / Gaussian steps
    evaluated exactly (step 3 of the module docstring holds for its integer orders)."""
    from accounting.events import (
        ComposedEvent,
        GaussianEvent,
        ScheduleEvent,
        SelfComposedEvent,
        SubsampledGaussianEvent,
    )

    if isinstance(event, GaussianEvent | SubsampledGaussianEvent | ScheduleEvent):
        return True
    if isinstance(event, SelfComposedEvent):
        return screenable(event.event)
    if isinstance(event, ComposedEvent):
        return all(screenable(e) for e in event.events)
    return False


def event_epsilon(event: Any, orders: np.ndarray, delta: float, *, method: str = "improved") -> EpsilonResult:
    """Epsilon of ``event`` over ``orders``: screened where :func:`screenable`, else the whole
    curve.  Equal to ``rdp_to_epsilon(event.rdp(orders), delta)`` up to rounding."""
    from accounting.events import ScheduleEvent, SubsampledGaussianEvent
    from accounting.rdp import exact_rdp_function
    from accounting.rdp_lower import event_lower_function

    if screenable(event):
        evaluate = event.rdp
        # steps validated and grouped once, not once per round (the same values as .rdp)
        if isinstance(event, ScheduleEvent):
            evaluate = exact_rdp_function(*event.step_arrays) or event.rdp
        elif isinstance(event, SubsampledGaussianEvent):
            evaluate = exact_rdp_function(event.sample_rate, event.noise_multiplier) or event.rdp
        return screened_epsilon(
            evaluate,
            orders,
            delta,
            method=method,
            floor=event_floor(event),
            lower=event_lower_function(event),
        )
    return rdp_to_epsilon(event.rdp(np.asarray(orders, dtype=float)), delta, method=method)
