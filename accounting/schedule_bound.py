"""Certified RDP of a smooth decaying noise schedule at a cost independent of its length.

For the named schedules of :mod:`accounting.schedules` with decreasing noise (``inv-k``,
``inv-sqrt-k``, ``exp`` with ``rho > 1``) the steps ``k = 1..T`` are never enumerated: the RDP
is evaluated exactly (:mod:`accounting.rdp`) at the points of an anchored geometric sigma lattice
(neighbours at most ``ratio`` apart, shared with the sigma grid's cache), and the sum over the
steps whose noise falls in each lattice cell is bounded in closed form from the two end values.
Cost: ``~ log(sigma_1 / sigma_T) / log(ratio)`` exact evaluations plus O(lattice) arithmetic, the
same for T = 10^3 and T = 10^9.

Why it is an upper bound: per cell, the smallest of monotonicity in sigma (data processing), the
chord of ``log A`` (convex in ``s = 1/(2 sigma^2)``, integer orders), the chord of ``A`` (convex
in s at every order > 1, an Ito/martingale argument) and the alpha-chord (Hoelder), with the step
sums in closed form rounded up.  ``bounded`` reports each order's bracket width.  Measured at the
D2P2 defaults: epsilon 7e-5 relative above the exact per-step evaluation.

Derivation steps 1-6, the closed-form sums and the measurements: ``docs/rdp-numerics.md``,
"Smooth schedules"; tested in ``tests/accounting/test_schedule_integral_bound.py``.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from accounting import validate
from accounting._rdp_evaluate import evaluate_steps
from accounting.cache import BoundedCache
from accounting.conversion import epsilon_per_order
from accounting.errors import InvalidParameter
from accounting.rdp import RdpCurve, coarse_settings, orders_array
from accounting.sigma_grid import lattice, sigma_grid_points

__all__ = ["SMOOTH_BUDGET", "SMOOTH_RATIO", "SMOOTH_SCHEDULES", "smooth_schedule_rdp"]

#: Schedules this bound covers (decreasing noise, closed-form inverse and step sums).
SMOOTH_SCHEDULES: tuple[str, ...] = ("inv-k", "inv-sqrt-k", "exp")
#: Default ratio of neighbouring points of the initial lattice.
SMOOTH_RATIO = 1.05
#: Cells with at most this many steps are summed term by term (step 4).
_DIRECT_MAX = 4096

#: Largest T the bound takes (beyond 2^53 a float no longer holds every step index).
_MAX_STEPS = 2**53
#: Lattice passes (the first at ``ratio``, then refined where the brackets are widest) ...
_PASSES = 3
#: ... adding at most this many points per pass (at most this many exact evaluations in all,
#: beyond the initial lattice, whatever T).
SMOOTH_BUDGET = 24

#: Fewest steps the bound replaces the exact per-step evaluation at (where it also costs at most
#: half): below, exact fractional orders are cheap enough; above, they are the T = 1000 cliff
#: of the T x q sweep (1-4 s against 0.2 s with the bound).
SMOOTH_MIN_STEPS = 500
#: Lattice ratio of the integer-order pass that selects the fractional orders worth evaluating.
_SELECT_RATIO = 1.1
_EPS = np.finfo(float).eps
#: Rounding allowance of an evaluated per-step value, in ulps per unit of ``order + 8`` (the
#: evaluation sums ~order nonnegative terms, each addition rounding by half an ulp): used only
#: by the bracket's lower end, where chord slopes over narrow cells amplify it.
_VALUE_ULPS = 8.0


#: Exact per-step values keyed by ``(q, sigma)``, each ``{order: value}``: order-wise, so that calls
#: evaluating different subsets of orders (the selection of smooth_schedule_rdp moves with sigma
#: during a calibration) still share every value.  Rows of ~170 floats: a few MB; a calibration
#: uses a few hundred.  :mod:`accounting.cache` says what a cached row can and cannot change.
CACHE = BoundedCache(4_000)
#: ``(q, order) -> reason`` for orders found not evaluable.
_REASONS = BoundedCache(4_000)


def _values(q: float, g: np.ndarray, o: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Exact per-step RDP (:func:`accounting._rdp_evaluate.evaluate_steps`) at noise ``g`` (rows) and orders
    ``o`` (columns) for rate q, NaN where not evaluable, through :data:`CACHE`; and
    ``{column: reason}`` for the orders that failed at some point.  The missing orders are
    evaluated in one batch at every point that misses any (a few extra values, one call)."""
    keys = [(q, x) for x in g.tolist()]
    orders = o.tolist()
    wanted = set(orders)
    rows = CACHE.get_many(keys)
    miss_rows = [i for i, r in enumerate(rows) if r is None or not r.keys() >= wanted]
    if miss_rows:
        need = sorted(set().union(*(wanted - (rows[i] or {}).keys() for i in miss_rows)))
        na = np.array(need, dtype=float)
        sig = g[miss_rows]
        mat, why = evaluate_steps(np.full(sig.size, q), sig, na, None)
        for r_i, i in enumerate(miss_rows):
            row = CACHE.setdefault(keys[i], {})
            row.update(zip(need, mat[r_i].tolist(), strict=True))
            rows[i] = row
        for col, reason in why.items():
            _REASONS.setdefault((q, need[col]), reason)
    pick = operator.itemgetter(*orders)  # C-level lookups (one tuple per row)
    vals = np.array([pick(row) for row in rows], dtype=float).reshape(g.size, o.size)
    reasons = {
        c: _REASONS.get((q, a), "not evaluable") for c, a in enumerate(orders) if np.isnan(vals[:, c]).any()
    }
    return vals, reasons


def _sigma_of(name: str, sigma: float, k: np.ndarray, steps: int, rho: float) -> np.ndarray:
    """sigma_k exactly as :func:`accounting.schedules.noise_multipliers` computes it."""
    if name == "inv-k":
        return sigma / np.sqrt(k)
    if name == "inv-sqrt-k":
        return sigma / k**0.25
    return sigma * np.exp(-(k / steps) * math.log(rho))


def _count_at_least(name: str, sigma: float, steps: int, rho: float, g: np.ndarray) -> np.ndarray:
    """``#{k in 1..T : sigma_k >= g}`` for each g (sigma_k is strictly decreasing in k).

    A float estimate from the schedule's inverse, corrected (a few +-1 moves) against the
    schedule's own float values, so the cells agree with the evaluated steps bit for bit."""
    with np.errstate(divide="ignore", over="ignore"):
        ratio = sigma / g
        if name == "inv-k":
            est = ratio**2
        elif name == "inv-sqrt-k":
            est = ratio**4
        else:
            est = steps * np.log(ratio) / math.log(rho)
    cnt = np.clip(np.floor(np.nan_to_num(est, nan=0.0, posinf=steps, neginf=0.0)), 0, steps).astype(np.int64)
    for _ in range(64):
        up = (cnt < steps) & (_sigma_of(name, sigma, (cnt + 1).astype(float), steps, rho) >= g)
        down = (cnt > 0) & (_sigma_of(name, sigma, np.maximum(cnt, 1).astype(float), steps, rho) < g)
        if not (up.any() or down.any()):
            return cnt
        cnt = cnt + up.astype(np.int64) - down.astype(np.int64)
    raise RuntimeError("schedule inverse did not converge")  # pragma: no cover - float sanity


def _sum_s(
    name: str, sigma: float, steps: int, rho: float, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds on ``sum_{k=a}^{b} s_k`` (``s_k = 1 / (2 sigma_k^2)``), one per
    cell (step 4; the lower ones only serve the bracket ``gap``)."""
    n = (b - a + 1).astype(float)
    af, bf = a.astype(float), b.astype(float)
    # sigma^2 underflows to 0 below ~1e-162: then s is +inf (the bound is +inf), never a ZeroDivisionError
    s_unit = 0.5 / (sigma * sigma) if sigma * sigma > 0.0 else math.inf
    if name == "inv-k":
        total = (af + bf) * n / 2.0 * s_unit
    elif name == "exp":
        c = 2.0 * math.log(rho) / steps
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.exp(c * af) * np.expm1(c * n) / math.expm1(c) * s_unit
    else:
        with np.errstate(invalid="ignore"):
            # trapezoid below a concave function: an upper bound on the sum (step 4)
            total = ((2.0 / 3.0) * (bf**1.5 - af**1.5) + 0.5 * (np.sqrt(af) + np.sqrt(bf))) * s_unit
    # lower: exact where ``total`` is; for inv-sqrt-k the midpoint rule, sqrt(k) >= its integral
    # over [k - 1/2, k + 1/2]
    if name != "inv-sqrt-k":
        low = total.copy()
    else:
        with np.errstate(invalid="ignore"):
            low = (2.0 / 3.0) * ((bf + 0.5) ** 1.5 - (af - 0.5) ** 1.5) * s_unit
    small = np.nonzero((n > 0) & (n <= _DIRECT_MAX))[0]
    if small.size:  # short cells term by term, all in one array
        lens = (b[small] - a[small] + 1).astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        k = np.repeat(a[small] - starts, lens) + np.arange(int(lens.sum()))
        sk = _sigma_of(name, sigma, k.astype(float), steps, rho)
        total[small] = low[small] = np.add.reduceat(0.5 / (sk * sk), starts)
    largest = 0.5 / _sigma_of(name, sigma, np.maximum(bf, 1.0), steps, rho) ** 2
    slack = 64.0 * _EPS * (n + bf + 1.0) * largest
    return np.where(n > 0, low - slack, 0.0), np.where(n > 0, total + slack, 0.0)


def _lower_cells(
    o: np.ndarray, vals: np.ndarray, big_s: np.ndarray, n: np.ndarray, tau_lo: np.ndarray
) -> np.ndarray:
    """Lower bounds on each cell's exact sum (only for the bracket ``gap`` and refinement).

    ``phi`` = the RDP (integer orders) or ``A = exp((alpha-1) RDP)`` (fractional), convex in s.
    Pointwise lower bounds on cell j, in ``tau in [0, 1]``: ``phi(g_{j+1})`` (monotonicity) and
    the extensions of the neighbouring cells' chords (a convex function lies above a chord's
    extension outside its interval): ``l1(tau) = phi_{j+1} + tau (S_j - S_{j+1}) m_{j+1}`` and
    ``l2(tau) = phi_j - (1 - tau)(S_j - S_{j+1}) m_{j-1}`` with the chords' slopes m >= 0.
    Both are affine in tau with a nonnegative coefficient, so their cell sums are bounded below
    with a lower bound on ``sum tau``.  For A the log of an affine l > 0 is concave, hence above
    its chord ``(1 - tau) log l(0) + tau log l(1)``, again affine in tau.

    Integer and fractional columns are computed apart (each kind only its own formulas; every
    value is the same elementwise expression either way)."""
    frac = o != np.floor(o)
    out = np.empty((n.size, vals.shape[1]))  # one row per cell
    for kind in (False, True):
        cols = np.flatnonzero(frac == kind)
        if cols.size:
            out[:, cols] = _lower_cells_of_kind(o[cols], vals[:, cols], big_s, n, tau_lo, kind)
    return out


def _lower_cells_of_kind(
    o: np.ndarray, vals: np.ndarray, big_s: np.ndarray, n: np.ndarray, tau_lo: np.ndarray, phi_is_a: bool
) -> np.ndarray:
    """:func:`_lower_cells` for columns of one kind: fractional (``phi_is_a``) or integer."""
    am1 = o - 1.0 if phi_is_a else 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        log_phi = vals * am1  # log A for fractional columns
        m = vals.shape[0]
        nn, tl = n[:, None], tau_lo[:, None]
        mono = nn * vals[1:]
        best = mono.copy()
        if m >= 3:
            ds = (big_s[:-1] - big_s[1:])[:, None]  # S_j - S_{j+1}, cell j
            # phi differences: RDP for integer orders, A_{j+1} (e^{dla} - 1) for fractional ones
            if phi_is_a:
                dla = log_phi[:-1] - log_phi[1:]  # log A difference per cell
                phi_hi = np.exp(log_phi[1:])
                dphi = phi_hi * np.expm1(np.maximum(dla, 0.0))
                phi_lo_ = np.exp(log_phi[:-1])
            else:
                dphi = np.maximum(vals[:-1] - vals[1:], 0.0)  # RDP difference per cell
                phi_hi, phi_lo_ = vals[1:], vals[:-1]
            # rounding allowances: each value within err of the truth, each S_j within s_err; the
            # slopes' intervals widen by (err_j + err_{j+1}) / ds, which is what keeps a narrow
            # neighbour cell (ds of a few ulps) from extrapolating its rounding noise
            err = _VALUE_ULPS * (o + 8.0) * _EPS * np.abs(np.vstack([phi_lo_[:1], phi_hi]))
            s_err = (4.0 * _EPS * big_s[:-1])[:, None]
            ds_lo, ds_hi = np.maximum(ds - s_err, 0.0), ds + s_err
            pair_err = err[:-1] + err[1:]
            slope_lo = np.maximum(dphi - pair_err, 0.0) / ds_hi  # cell j's chord slope in s, bracketed
            slope_hi = (dphi + pair_err) / ds_lo  # (+inf for a cell narrower than its rounding)
            # l1 on cell j uses cell j+1's slope: l1(1) = phi_{j+1} + ds_j m_{j+1}
            inc1 = np.zeros_like(mono)
            inc1[:-1] = ds_lo[:-1] * slope_lo[1:]
            inc2 = np.full_like(mono, np.inf)  # l2(0) = phi_j - ds_j m_{j-1}
            inc2[1:] = ds_hi[1:] * slope_hi[:-1]
            base_hi, base_lo = phi_hi - err[1:], phi_lo_ - err[:-1]
            l1_0, l1_1 = base_hi, base_hi + inc1
            l2_0, l2_1 = base_lo - inc2, base_lo
            for p0, p1 in ((l1_0, l1_1), (l2_0, l2_1)):
                if phi_is_a:
                    ok = p0 > 0
                    f0 = np.log(np.where(ok, p0, 1.0)) / am1
                    f1 = np.log(np.where(ok, p1, 1.0)) / am1
                    cand = np.where(ok, nn * f0 + tl * np.maximum(f1 - f0, 0.0), -np.inf)
                else:
                    cand = nn * p0 + tl * np.maximum(p1 - p0, 0.0)
                best = np.fmax(best, cand)
    return np.where(nn > 0, best, 0.0)


def _alpha_chord_cells(orders: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Step 5: for each fractional order, the alpha-chord of the integer orders' cell bounds
    (``cells`` has shape ``(n_cells, n_orders)``); ``inf`` where no integer order lies above."""
    out = np.full(cells.shape, np.inf)
    is_int = orders == np.floor(orders)
    int_cols = np.nonzero(is_int)[0]
    if not int_cols.size:
        return out
    io = orders[int_cols]
    srt = np.argsort(io)
    io, int_cols = io[srt], int_cols[srt]
    frac = np.nonzero(~is_int)[0]
    al = orders[frac]
    k = np.searchsorted(io, al)
    inside = k < io.size
    frac, al, k = frac[inside], al[inside], k[inside]
    if not frac.size:
        return out
    b, ub = io[k], cells[:, int_cols[k]]
    has_a = k > 0
    a = np.where(has_a, io[np.maximum(k - 1, 0)], 1.0)
    ua = np.where(has_a, cells[:, int_cols[np.maximum(k - 1, 0)]], 0.0)
    with np.errstate(invalid="ignore"):
        out[:, frac] = ((b - al) * (a - 1.0) * ua + (al - a) * (b - 1.0) * ub) / ((b - a) * (al - 1.0))
    return out


# Non-finite intermediate values are expected at extreme schedules (sigma_T ~ 1e-300: 1/sigma^2
# overflows) and handled: _curve maps every non-finite total to inf (sound) and names the order
# as dropped.  numpy's RuntimeWarnings about them are noise on stderr, so the entry points run
# under errstate (a fresh one per call: an errstate instance is not re-entrant).
def _quiet(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return fn(*args, **kwargs)

    return inner


@_quiet
def smooth_schedule_rdp(
    name: str,
    sample_rate: float,
    base: float,
    steps: int,
    orders: np.ndarray,
    *,
    rho: float = 2.0,
    ratio: float = SMOOTH_RATIO,
    budget: int = SMOOTH_BUDGET,
    delta: float | None = None,
    method: str = "improved",
) -> RdpCurve:
    """Certified upper bound on the RDP of ``steps`` Poisson-subsampled Gaussian steps with the
    noise multipliers ``noise_multipliers(name, base, steps, rho=rho)`` and rate ``sample_rate``.

    ``name`` must be one of :data:`SMOOTH_SCHEDULES` (``exp`` with ``rho > 1``: decreasing noise).
    Every finite order is listed in ``.bounded`` with the width of a rigorous bracket
    (see the module docstring for the derivation and the meaning of the gap).

    ``delta`` (optional) only steers where exact evaluations are spent: the fractional orders
    that cannot improve epsilon at ``delta`` (``method`` as in
    :func:`accounting.conversion.epsilon_per_order`) -- judged from lower bounds at the integer
    orders, ``D_alpha`` being non-decreasing in alpha -- are not evaluated but bounded by the
    alpha-chord of the integer orders (step 5 summed), and the lattice is refined for the
    orders that can.  Every value stays a sound upper bound; with ``delta`` the epsilon at that
    delta is about as tight as without (measured within 3e-5 relative, either way), at a fraction
    of the cost.
    """
    if name not in SMOOTH_SCHEDULES:
        raise InvalidParameter("--schedule", f"must be one of {', '.join(SMOOTH_SCHEDULES)} (got {name!r})")
    q = float(sample_rate)
    if not 0.0 < q <= 1.0:
        raise InvalidParameter("--sample-rate", f"must be in (0, 1] (got {sample_rate!r})")
    sigma = validate.positive("--noise-multiplier", base)
    t = validate.positive_int("--steps", steps)
    if t > _MAX_STEPS:
        raise InvalidParameter("--steps", f"must be at most 2^53 for the smooth-schedule bound (got {t})")
    r = validate.positive("--rho", rho)
    if name == "exp" and not r > 1.0:
        raise InvalidParameter(
            "--rho", f"the smooth-schedule bound needs rho > 1 (decreasing noise; got {rho!r})"
        )
    ratio = float(ratio)
    if not (math.isfinite(ratio) and ratio > 1.0):
        raise InvalidParameter("ratio", f"must be a finite number > 1 (got {ratio!r})")
    o = orders_array(orders)
    ends = _sigma_of(name, sigma, np.array([1.0, float(t)]), t, r)
    hi, lo = float(ends[0]), float(ends[1])
    if t == 1 or not hi > lo:  # one step, or no decay representable in floats
        vals, why = _values(q, np.array([hi]), o)
        return _curve(o, vals[0] * t, np.zeros(o.size), why)
    sched = (name, sigma, t, r)
    is_int = o == np.floor(o)
    coarse = coarse_settings()
    if coarse is not None and is_int.any():
        # inside accounting.rdp.coarse_bounds (bracketing a calibration): integer orders on the
        # coarse lattice, fractional ones by the alpha-chord -- sound, looser, ~10x cheaper
        coarse["used"] = True
        oi = o[is_int]
        t_int, g_int, why_i = _lattice_bound(
            sched, q, lo, hi, oi, max(ratio, coarse["ratio"]), 0, np.ones(oi.size, bool)
        )
        total, gap = np.full(o.size, np.inf), np.zeros(o.size)
        total[is_int], gap[is_int] = t_int, g_int
        total = np.where(is_int, total, _alpha_chord_cells(o, total[None, :])[0])
        low = _lower_from_integers(o, oi, np.maximum(t_int - g_int, 0.0))
        gap = np.where(is_int, gap, np.maximum(total - low, 0.0))
        why = {int(np.nonzero(is_int)[0][c]): reason for c, reason in why_i.items()}
        return _curve(o, total, gap, why)
    if delta is None or is_int.all() or not is_int.any():
        total, gap, why = _lattice_bound(sched, q, lo, hi, o, ratio, budget, np.ones(o.size, bool))
        return _curve(o, total, gap, why)
    # Selection (tightness only, soundness never depends on it): from the integer orders on a
    # coarse lattice, the fractional orders that could still beat the best epsilon.
    oi = o[is_int]
    t_int, g_int, _ = _lattice_bound(sched, q, lo, hi, oi, _SELECT_RATIO, 0, np.ones(oi.size, bool))
    upper = np.full(o.size, np.inf)
    upper[is_int] = t_int
    upper = np.where(is_int, upper, _alpha_chord_cells(o, upper[None, :])[0])
    best = float(np.min(epsilon_per_order(o, upper, delta, method)))
    low = _lower_from_integers(o, oi, np.maximum(t_int - g_int, 0.0))
    hopeful = epsilon_per_order(o, low, delta, method) <= best * (1.0 + 1e-9)
    keep = is_int | hopeful
    sub = o[keep]
    total_s, gap_s, why_s = _lattice_bound(sched, q, lo, hi, sub, ratio, budget, hopeful[keep])
    total, gap = np.full(o.size, np.inf), np.zeros(o.size)
    total[keep], gap[keep] = total_s, gap_s
    why = {int(np.nonzero(keep)[0][c]): reason for c, reason in why_s.items()}
    # the other fractional orders: the alpha-chord of the integer totals (step 5, summed)
    skipped = ~keep
    total[skipped] = _alpha_chord_cells(o, total[None, :])[0][skipped]
    low_final = _lower_from_integers(o, oi, np.maximum(total[is_int] - gap[is_int], 0.0))
    gap[skipped] = np.maximum(total[skipped] - low_final[skipped], 0.0)
    return _curve(o, total, gap, why)


def _lower_from_integers(o: np.ndarray, oi: np.ndarray, low_int: np.ndarray) -> np.ndarray:
    """Lower bounds at every order from lower bounds at the integer orders ``oi`` (sorted):
    ``D_alpha`` is non-decreasing in alpha, so ``D_alpha >= D_a`` for the largest ``a <= alpha``
    (0 below the smallest)."""
    idx = np.searchsorted(oi, o, side="right") - 1
    return np.where(idx >= 0, low_int[np.maximum(idx, 0)], 0.0)


def _curve(o: np.ndarray, total: np.ndarray, gap: np.ndarray, why: dict[int, str]) -> RdpCurve:
    dropped = tuple(
        (float(o[c]), reason + " [at a point of the smooth-schedule lattice]") for c, reason in why.items()
    )
    bad = ~np.isfinite(total)
    bounded = tuple((float(o[c]), float(gap[c])) for c in range(o.size) if not bad[c] and c not in why)
    return RdpCurve(o, np.where(bad, np.inf, total), dropped, bounded)


def _lattice_bound(
    sched: tuple[str, float, int, float],
    q: float,
    lo: float,
    hi: float,
    o: np.ndarray,
    ratio: float,
    budget: int,
    focus: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """``(total, gap, reasons)`` on the lattice of ``ratio`` over ``[lo, hi]``, refined
    ``_PASSES - 1`` times by at most ``budget`` points where the brackets of the ``focus``
    orders are widest."""
    g = sigma_grid_points(lo, hi, ratio)
    every = np.ones(o.size, dtype=bool)  # the reported gaps use the sharp lower bounds throughout
    for it in range(_PASSES):
        last = it == _PASSES - 1 or budget <= 0 or not focus.any()
        total, gap, excess, why = _bound_on_lattice(sched, q, g, o, every if last else focus)
        if last:
            break
        finer = _refine(g, total[focus], excess[:, focus], ratio, budget)
        if finer is None:
            if not focus.all():
                total, gap, excess, why = _bound_on_lattice(sched, q, g, o, every)
            break
        g = finer
    return total, gap, why


def _bound_on_lattice(
    sched: tuple[str, float, int, float], q: float, g: np.ndarray, o: np.ndarray, focus: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    """Steps 1-6 on the lattice ``g`` (increasing, ``g[0] = sigma_T``, ``g[-1] = sigma_1``).

    Returns ``(total, gap, excess, reasons)``: the upper bound per order, the bracket width
    (upper minus a lower bound: :func:`_lower_cells` for the ``focus`` orders, monotonicity
    for the others), the same per cell (shape ``(m, n_orders)``, to
    refine) and the orders that could not be evaluated at some lattice point."""
    name, sigma, t, r = sched
    vals, why = _values(q, g, o)  # exact per-step RDP at the lattice points, cached
    # cell j = [g_j, g_{j+1}) holds the steps a_j..b_j (the top cell is closed)
    at_least = _count_at_least(name, sigma, t, r, g)
    at_least[-1] = 0  # the top cell takes sigma_k == g_m too
    b = at_least[:-1]
    a = at_least[1:] + 1
    n = (b - a + 1).astype(float)
    big_s = 0.5 / (g * g)
    d_s = big_s[:-1] - big_s[1:]  # S_j - S_{j+1} > 0
    sum_lo, sum_up = _sum_s(name, sigma, t, r, a, b)
    with np.errstate(invalid="ignore"):
        tau = (sum_up - n * big_s[1:]) / d_s
        tau_lo = (sum_lo - n * big_s[1:]) / d_s
    tau = np.clip(np.where(np.isfinite(tau), tau, n), 0.0, n)  # not computable: tau_k <= 1
    tau_lo = np.clip(np.where(np.isfinite(tau_lo), tau_lo, 0.0), 0.0, tau)
    f_lo, f_hi = vals[:-1], vals[1:]  # at g_j (less noise, the larger value) and at g_{j+1}
    nz = n[:, None] > 0
    with np.errstate(invalid="ignore"):
        mono = np.where(nz, n[:, None] * f_lo, 0.0)
        chord = np.where(nz, n[:, None] * f_hi + np.maximum(f_lo - f_hi, 0.0) * tau[:, None], 0.0)
        lower = np.where(nz, n[:, None] * f_hi, 0.0)  # monotonicity; sharper for the focus orders
        if focus.any():
            lower[:, focus] = _lower_cells(o[focus], vals[:, focus], big_s, n, tau_lo)
    is_int = o == np.floor(o)
    # fractional orders: chord of A = exp((alpha-1) f) in s (step 3b), averaged over the cell
    # (computed on the fractional columns only: the integer ones take the chord above)
    fc = np.flatnonzero(~is_int)
    am1 = o[fc] - 1.0
    a_chord = np.zeros(f_lo.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        d_log_a = np.maximum(f_lo[:, fc] - f_hi[:, fc], 0.0) * am1
        tau_bar = np.where(n > 0, tau / np.maximum(n, 1.0), 0.0)[:, None]
        a_chord[:, fc] = np.where(
            nz, n[:, None] * (f_hi[:, fc] + np.log1p(tau_bar * np.expm1(d_log_a)) / am1), 0.0
        )
    cells = np.where(is_int, np.minimum(chord, mono), np.fmin(a_chord, mono))
    cells = np.where(is_int, cells, np.fmin(cells, _alpha_chord_cells(o, cells)))
    with np.errstate(invalid="ignore"):
        excess = np.maximum(cells - lower, 0.0)
        total = cells.sum(axis=0)
        gap = excess.sum(axis=0)
    return total, gap, excess, why


def _refine(
    g: np.ndarray, total: np.ndarray, excess: np.ndarray, ratio: float, budget: int
) -> np.ndarray | None:
    """A finer lattice where the brackets are widest (``budget`` new points at most), or None.

    Cell j is split into about ``p_j ~ sqrt(e_j)`` pieces (``e_j`` its largest relative
    bracket over the orders): that minimises ``sum_j e_j / p_j`` for a given number of points,
    the bracket if it shrinks like 1/p_j (first order).  New points come from the anchored
    lattice of the next power-of-2 resolutions, so rescaled schedules share them (cache)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(np.isfinite(total) & (total > 0), excess / total, 0.0)
    e = np.nan_to_num(rel, nan=0.0, posinf=0.0).max(axis=1)
    if not e.sum() > 0:
        return None
    root = np.sqrt(e)
    pieces = np.floor(root * budget / root.sum() + 0.5)  # the widest cells get >= 1 point
    h = math.log(ratio)
    extra: list[float] = []
    for j in np.nonzero(pieces >= 1)[0].tolist():
        width = math.log(g[j + 1] / g[j])
        level = max(0, math.ceil(math.log2((pieces[j] + 1) * h / width))) if width > 0 else 0
        extra.extend(x for x in lattice(g[j], g[j + 1], h, min(level, 30)) if g[j] < x < g[j + 1])
    if not extra:
        return None
    return np.unique(np.concatenate([g, np.array(extra)]))


@_quiet
def smooth_pays(name: str, base: float, steps: int, *, rho: float = 2.0, distinct: int | None = None) -> bool:
    """Whether :func:`smooth_schedule_rdp` should replace the per-step evaluation of a schedule.

    Cost model (both paths cost about the same per evaluated noise value): the bound evaluates
    its lattice plus at most ``(_PASSES - 1) * SMOOTH_BUDGET`` refinement points and a coarse
    integer-order pass; the per-step path evaluates the ``distinct`` noise values (T by
    default) or, from :data:`accounting.rdp.AUTO_GRID_MIN_ROWS` on, its own sigma grid.  The
    bound is taken from :data:`SMOOTH_MIN_STEPS` steps on (shorter schedules stay exact, so they
    agree with dp-accounting to rounding) where it costs at most half."""
    from accounting.sigma_grid import AUTO_GRID_MIN_ROWS  # its home: monkeypatches land there

    if name not in SMOOTH_SCHEDULES or (name == "exp" and not rho > 1.0) or steps <= 1:
        return False
    if steps > _MAX_STEPS:  # step counts above 2^53 are not exact in floats (cell counts, sums)
        return False
    n = steps if distinct is None else distinct
    if n < min(SMOOTH_MIN_STEPS, AUTO_GRID_MIN_ROWS):
        return False
    ends = _sigma_of(name, float(base), np.array([1.0, float(steps)]), int(steps), float(rho))
    if not (ends[0] > ends[1] > 0.0 and np.isfinite(ends[0])):  # zero/inf noise: the exact routes refuse it
        return False
    est = sigma_grid_points(float(ends[1]), float(ends[0]), SMOOTH_RATIO).size + (_PASSES - 1) * SMOOTH_BUDGET
    return 2 * est <= n
