"""Long schedules: sound upper bounds on the composed RDP of many distinct steps from exact
values on an anchored sigma grid (integer orders: chord in ``s = 1/(2 sigma^2)``; fractional
orders: sigma rounded down, and the alpha-chord), the grid-value cache and the cost rule of
``evaluation="auto"``.  Part of :mod:`accounting.rdp`; the derivation of every bound is in that
module's docstring ("Long schedules")."""

from __future__ import annotations

import math

import numpy as np

from accounting._rdp_evaluate import evaluate_steps
from accounting.cache import BoundedCache
from accounting.rounding import up

__all__ = ["AUTO_GRID_MIN_ROWS", "AUTO_GRID_THRESHOLD", "EVALUATIONS", "GRID_RATIO", "GRID_TOL"]

#: Values of the ``evaluation`` keyword of :func:`subsampled_gaussian_rdp`.
EVALUATIONS = ("auto", "exact", "grid")
#: ``evaluation="auto"`` bounds a sample rate's steps from the sigma grid beyond this many
#: distinct steps whenever the grid is smaller than the steps, whatever the cost rule below says.
AUTO_GRID_THRESHOLD = 20_000
#: ... and from this many distinct steps on, whenever the grid is estimated to cost at most
#: half the exact evaluation (:func:`_grid_pays`).  Below it every step is exact, so short
#: schedules agree with dp-accounting to rounding.
AUTO_GRID_MIN_ROWS = 2_000
#: Default ratio of neighbouring points of the initial geometric sigma grid.
GRID_RATIO = 1.02
#: Default target for the refined grid: estimated relative excess of each order's RDP.
GRID_TOL = 1e-2
_GRID_MAX_POINTS = 20_000
_GRID_PASSES = 2
#: Smallest ``grid_ratio`` accepted (a geometric grid needs ratio > 1; its log is the lattice spacing).
GRID_MIN_RATIO = 1.0 + 1e-6


def _lattice_point(index: int, level: int, h: float) -> float:
    """``exp(index * h / 2**level)`` with (index, level) reduced first, so that a point reached
    at different refinement levels is the same float (the grid-value cache relies on it)."""
    while level > 0 and index % 2 == 0:
        index //= 2
        level -= 1
    return math.exp(index * (h / 2.0**level))


def lattice(lo: float, hi: float, h: float, level: int = 0) -> list[float]:
    """Points ``exp(j h / 2**level)`` of the anchored lattice from the one at or below ``lo`` to the
    one at or above ``hi``."""
    step = h / 2.0**level
    j0 = math.floor(math.log(lo) / step)
    j1 = math.ceil(math.log(hi) / step)
    pts = [_lattice_point(j, level, h) for j in range(j0, j1 + 1)]
    while pts[0] > lo:  # guard against rounding in log/floor
        j0 -= 1
        pts.insert(0, _lattice_point(j0, level, h))
    while pts[-1] < hi:
        j1 += 1
        pts.append(_lattice_point(j1, level, h))
    return pts


def sigma_grid_points(lo: float, hi: float, ratio: float) -> np.ndarray:
    """Grid covering ``[lo, hi]``: ``lo``, ``hi`` and the points ``ratio**j`` in between (coarser,
    by powers of 2 in the exponent, beyond ``_GRID_MAX_POINTS`` points); strictly increasing.

    The points are anchored (``ratio**j``, not spaced from ``lo``) so that schedules differing by
    a small rescaling -- the iterations of a calibration, or of the projection's failure
    split -- share almost all grid points, whose exact values are cached
    (:func:`_grid_values`).  Any grid covering the steps is sound."""
    if hi <= lo:
        return np.array([lo])
    h = math.log(ratio)
    while math.log(hi / lo) / h + 3 > _GRID_MAX_POINTS:
        h *= 2.0
    pts = [x for x in lattice(lo, hi, h) if lo < x < hi]
    return np.unique(np.array([lo, hi] + pts))


#: Exact grid rows, keyed by ``(q, orders.tobytes(), sigma)``; the grid's anchored points recur
#: across calls (:mod:`accounting.cache` says what a cached row can and cannot change).
GRID_CACHE = BoundedCache(20_000)
#: ``{column: reason}`` for the orders not evaluable at some grid row, keyed by ``(q, orders.tobytes())``.
_GRID_REASONS = BoundedCache(256)


def _grid_values(qg: float, new_g: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Exact per-step RDP at the grid points ``new_g`` (rows) for rate ``qg``, through
    :data:`GRID_CACHE`.

    The values are those of :func:`evaluate_steps`; evaluated in a different batch of noise values they
    can differ in the last bit (~1e-16 relative, either way), which calibration's 1e-12 margin
    below the target absorbs (:mod:`accounting.calibration`)."""
    qg = float(qg)
    ob = orders.tobytes()
    points = new_g.tolist()
    cached = GRID_CACHE.get_many([(qg, ob, g) for g in points])
    rows = {g: r for g, r in zip(points, cached, strict=True) if r is not None}
    reasons = _GRID_REASONS.setdefault((qg, ob), {})
    miss = np.array([g for g in points if g not in rows], dtype=float)
    if miss.size:
        mat, why = evaluate_steps(np.full(miss.size, qg), miss, orders, None)
        for g, row in zip(miss.tolist(), mat, strict=True):
            GRID_CACHE.put((qg, ob, g), row)
            rows[g] = row
        for col, r in why.items():
            reasons.setdefault(col, r)
    out = np.array([rows[g] for g in points]).reshape(new_g.size, orders.size)
    return out, dict(reasons)


def _grid_pays(n_rows: int, lo: float, hi: float, ratio: float) -> bool:
    """Whether ``evaluation="auto"`` should bound ``n_rows`` distinct steps with noise in
    ``[lo, hi]`` (one sample rate) from the sigma grid rather than evaluate each exactly.

    Cost model: both paths cost about the same per evaluated (q, sigma) row, so the exact path
    costs ``n_rows`` rows and the grid its initial points plus the refinement budget of
    :func:`_grid_group` (at most a quarter of the steps).  The grid is chosen when it costs at
    most half (from :data:`AUTO_GRID_MIN_ROWS` rows on), or is merely smaller (beyond
    :data:`AUTO_GRID_THRESHOLD`)."""
    if n_rows > AUTO_GRID_THRESHOLD:
        return sigma_grid_points(lo, hi, ratio).size < n_rows
    if n_rows < AUTO_GRID_MIN_ROWS:
        return False
    g0 = sigma_grid_points(lo, hi, ratio).size
    est = g0 + min(_GRID_MAX_POINTS, max(n_rows // 4, g0))
    return 2 * est <= n_rows


def _grid_layout(g: np.ndarray, sig: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """Where each step falls on the grid ``g`` and the weights it puts on the grid points.

    Fractional orders: the point at or below each sigma (``g[jf] <= sig``, exact float compare).
    Integer orders: interval ``i`` with ``g[i] <= sig <= g[i+1]``, i.e. ``S[i] >= s >= S[i+1]``
    (``S = 1/(2 g^2)``); chord ``(1-t) L[i] + t L[i+1]`` with ``t = (S[i] - s)/(S[i] - S[i+1])``.
    """
    m = g.size
    jf = np.searchsorted(g, sig, side="right") - 1
    hit = g[jf] == sig
    with np.errstate(over="ignore", invalid="ignore"):  # sigma above ~1e154: S = 0, no warning
        big_s = 0.5 / (g * g)
    if m >= 2:
        i = np.minimum(jf, m - 2)
        # S[i] = S[i+1] = 0 (both points overflowed) gives t = 0/0 = nan: that order's RDP is then
        # not finite and the order is dropped, as the report says
        with np.errstate(over="ignore", invalid="ignore"):
            s = 0.5 / (sig * sig)
            t = np.clip((big_s[i] - s) / (big_s[i] - big_s[i + 1]), 0.0, 1.0)
    else:
        i, t = np.zeros(sig.size, dtype=np.intp), np.zeros(sig.size)
    lay = {
        "S": big_s,
        "c_frac": np.bincount(jf, weights=w, minlength=m),
        "c_frac_gap": np.bincount(jf[~hit], weights=w[~hit], minlength=m),
        "a_w": np.bincount(i, weights=w * (1.0 - t), minlength=m),  # interval i, on point i
        "b_w": np.bincount(i, weights=w * t, minlength=m),  # interval i, on point i + 1
    }
    c_int = lay["a_w"].copy()
    c_int[1:] += lay["b_w"][:-1]
    lay["c_int"] = c_int
    need = (lay["c_frac"] > 0) | (c_int > 0)
    ev = need.copy()  # neighbours too: they sharpen the gap estimates (secant extensions)
    ev[1:] |= need[:-1]
    ev[:-1] |= need[1:]
    lay["need"], lay["ev"] = need, ev
    return lay


def _grid_bounds(
    lay: dict[str, np.ndarray], vals: np.ndarray, is_int: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bounds from the grid values ``vals`` (NaN where not evaluated / not evaluable).

    Returns ``(total, gap, err, bad)``: the upper bounds per order, the estimated excess over
    the exact sum, the same excess per grid interval (shape ``(m-1, n_ord)``, for refining) and
    the orders that failed at a point that carries weight.
    """
    m, n_ord = vals.shape
    big_s, a_w, b_w = lay["S"], lay["a_w"], lay["b_w"]
    bad = np.isnan(vals[lay["need"]]).any(axis=0)
    err = np.zeros((max(m - 1, 0), n_ord))
    with np.errstate(invalid="ignore", over="ignore"):
        vz = np.where(np.isnan(vals), 0.0, vals)  # NaN only ever meets zero weights (or `bad`)
        total = np.where(is_int, lay["c_int"] @ vz, lay["c_frac"] @ vz)
        if m >= 2:
            # fractional: rounding sigma up instead of down gives an (approximate) lower value
            err_frac = lay["c_frac_gap"][:-1, None] * np.maximum(vz[:-1] - vz[1:], 0.0)
            # integer: chord minus the larger of the monotone bound L[i+1] and the secant
            # extensions of the neighbouring intervals (lower bounds of a convex, monotone f);
            # both differences are linear in t: (1-t) A_i and t B_i.
            ds = (big_s[:-1] - big_s[1:])[:, None]  # S[i] - S[i+1] > 0
            a_coef = vz[:-1] - vz[1:]
            b_coef = np.full((m - 1, n_ord), np.inf)
            if m >= 3:
                # line through (S[i+2], L[i+2]), (S[i+1], L[i+1]) evaluated at S[i]
                e1 = vz[1:-1] + (vz[1:-1] - vz[2:]) / (big_s[1:-1] - big_s[2:])[:, None] * ds[:-1]
                a_coef[:-1] = np.where(np.isnan(vals[2:]), a_coef[:-1], np.minimum(a_coef[:-1], vz[:-2] - e1))
                # line through (S[i-1], L[i-1]), (S[i], L[i]) evaluated at S[i+1]
                e2 = vz[1:-1] - (vz[:-2] - vz[1:-1]) / (big_s[:-2] - big_s[1:-1])[:, None] * ds[1:]
                b_coef[1:] = np.where(np.isnan(vals[:-2]), np.inf, vz[2:] - e2)
            pa = np.maximum(a_coef, 0.0) * a_w[:-1, None]
            pb = np.where(b_w[:-1, None] > 0, np.maximum(b_coef, 0.0) * b_w[:-1, None], 0.0)
            err = np.where(is_int, np.minimum(pa, pb), err_frac)
        gap = err.sum(axis=0)
    total[bad] = np.nan
    return total, np.where(bad, 0.0, gap), err, bad


def _grid_group(
    qg: float, sig: np.ndarray, w: np.ndarray, orders: np.ndarray, ratio: float, tol: float
) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Upper bound on ``sum_k w_k rdp(qg, sig_k)`` at each order from exact values on a sigma grid.

    Returns ``(total, gap, reasons)``: ``gap`` estimates ``total`` minus the exact sum (see the
    :mod:`accounting.rdp` docstring); ``reasons`` maps dropped order indices to why.  Integer orders: chord in
    ``s = 1/(2 sigma^2)`` (log A is convex in s).  Fractional orders: each sigma rounded *down*
    to the grid (RDP is non-increasing in sigma).  The grid starts geometric (ratio ``ratio``)
    and is refined once (``_GRID_PASSES - 1`` times) where the estimated excess is largest,
    aiming at a summed relative excess per order of about ``tol`` (at most a quarter as many
    points as steps): any grid gives sound bounds, refinement only buys tightness.
    """
    n_ord = orders.size
    is_int = orders == np.floor(orders)
    g = sigma_grid_points(float(sig.min()), float(sig.max()), ratio)
    known_g = np.zeros(0)
    known_v = np.zeros((0, n_ord))
    why: dict[int, str] = {}
    for it in range(_GRID_PASSES):
        lay = _grid_layout(g, sig, w)
        want = g[lay["ev"]]
        pos = np.minimum(np.searchsorted(known_g, want), max(known_g.size - 1, 0))
        have = (known_g.size > 0) & (known_g[pos] == want) if known_g.size else np.zeros(want.size, bool)
        new_g = want[~have]
        if new_g.size:
            mat, r = _grid_values(qg, new_g, orders)
            for col, reason in r.items():
                why.setdefault(col, reason)
            known_g = np.concatenate([known_g, new_g])
            known_v = np.concatenate([known_v, mat])
            order = np.argsort(known_g)
            known_g, known_v = known_g[order], known_v[order]
        vals = np.full((g.size, n_ord), np.nan)
        vals[lay["ev"]] = known_v[np.searchsorted(known_g, want)]
        total, gap, err, bad = _grid_bounds(lay, vals, is_int)
        if it == _GRID_PASSES - 1 or g.size < 2:
            break
        # Refine: split interval j into n_j geometric pieces, n_j ~ sqrt(E_j) (minimises
        # sum E_j / n_j, the excess if it falls like 1/n_j, for a given number of new points).
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(np.isfinite(total) & (total > 0) & ~bad, err / total, 0.0)
        e = np.nan_to_num(rel, nan=0.0, posinf=0.0).max(axis=1)
        if e.sum() <= tol:
            break
        root = np.sqrt(e)
        pieces = np.ceil(root * root.sum() / tol)
        # never more grid points than a quarter of the steps (or the initial grid): stays cheap
        budget = min(_GRID_MAX_POINTS, max(sig.size // 4, g.size)) - g.size
        if pieces.sum() - pieces.size > budget:
            pieces = np.ceil(pieces * budget / max(pieces.sum(), 1.0))
        pieces = np.minimum(pieces, np.floor(np.log(g[1:] / g[:-1]) / math.log(GRID_MIN_RATIO)))
        split = np.nonzero(pieces >= 2)[0]
        if not split.size:
            break
        # new points on the anchored lattice of the next power-of-2 resolution (cacheable)
        h = math.log(ratio)
        extra: list[float] = []
        for j in split.tolist():
            level = max(0, round(math.log2(pieces[j] * h / math.log(g[j + 1] / g[j]))))
            extra.extend(x for x in lattice(g[j], g[j + 1], h, level) if g[j] < x < g[j + 1])
        if not extra:
            break
        g = np.unique(np.concatenate([g, np.array(extra)]))
    reasons = {
        int(col): why.get(int(col), "not evaluable") + " [at a point of the long-schedule grid]"
        for col in np.nonzero(bad)[0]
    }
    return total, gap, reasons


def _alpha_chord(orders: np.ndarray, total: np.ndarray, gap: np.ndarray) -> None:
    """Tighten fractional orders in place with the chord of ``(alpha-1) D_alpha`` in alpha.

    ``(alpha-1) D_alpha = log int p^alpha q^(1-alpha)`` is convex in alpha (Hoelder), and so is a
    sum over steps; it is 0 at alpha = 1.  For integer orders ``a < alpha < b`` of the grid (or
    ``a = 1``): ``(alpha-1) D_alpha <= ((b-alpha)(a-1) D_a + (alpha-a)(b-1) D_b) / (b-a)``, and
    upper bounds on ``D_a, D_b`` give one on ``D_alpha`` (the weights are >= 0).
    """
    is_int = (orders == np.floor(orders)) & np.isfinite(total)
    io = orders[is_int]
    if io.size == 0:
        return
    srt = np.argsort(io)
    io, iv = io[srt], total[is_int][srt]
    for col in np.nonzero((orders != np.floor(orders)) & np.isfinite(total))[0]:
        al = orders[col]
        k = int(np.searchsorted(io, al))
        if k >= io.size:
            continue
        b, rb = io[k], iv[k]
        a, ra = (io[k - 1], iv[k - 1]) if k > 0 else (1.0, 0.0)
        chord = ((b - al) * (a - 1.0) * ra + (al - a) * (b - 1.0) * rb) / ((b - a) * (al - 1.0))
        if chord < total[col]:
            lower = total[col] - gap[col]
            total[col] = chord
            gap[col] = max(0.0, chord - lower)


def grid_total(
    q: np.ndarray,
    sig: np.ndarray,
    w: np.ndarray,
    orders: np.ndarray,
    ratio: float,
    tol: float,
    force: bool,
) -> tuple[np.ndarray, dict[int, str], tuple[tuple[float, float], ...]]:
    """Weighted RDP totals of distinct steps, sigma-grid bounds per sample rate where it pays.

    Steps with ``q == 1`` (closed form) or an infinite ``s`` go to the exact path; so does a
    sample rate whose grid would not be smaller than its number of steps (unless ``force``).
    """
    n_ord = orders.size
    total = np.zeros(n_ord)
    gap = np.zeros(n_ord)
    reasons: dict[int, str] = {}
    with np.errstate(divide="ignore", over="ignore"):
        s = 0.5 / (sig * sig)
    grid_ok = (q < 1.0) & np.isfinite(s)
    exact = ~grid_ok
    used = False
    n_adds = 0  # additions into total: nonnegative terms, so the sum rounds by < n_adds ulps
    for qg in np.unique(q[grid_ok]):
        rows = np.nonzero(grid_ok & (q == qg))[0]
        lo, hi = float(sig[rows].min()), float(sig[rows].max())
        if not force and not _grid_pays(rows.size, lo, hi, ratio):
            exact[rows] = True
            continue
        tot, gp, why = _grid_group(float(qg), sig[rows], w[rows], orders, ratio, tol)
        used = True
        total += tot
        n_adds += 1
        gap += gp
        for col, r in why.items():
            reasons.setdefault(col, r)
    if exact.any():
        tot, why = evaluate_steps(q[exact], sig[exact], orders, w[exact])
        total += tot
        n_adds += 1
        for col, r in why.items():
            reasons.setdefault(col, r)
    with np.errstate(over="ignore", invalid="ignore"):
        total *= up(n_adds + 1)
    if not used:
        return total, reasons, ()
    _alpha_chord(orders, total, gap)
    bounded = tuple(
        (float(orders[c]), float(gap[c])) for c in range(n_ord) if np.isfinite(total[c]) and c not in reasons
    )
    return total, reasons, bounded
