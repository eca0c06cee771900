"""The chord between neighbouring integer orders, which caps the fractional-order ``log A`` of
:mod:`accounting._log_a_frac` (``log A_alpha`` is convex in alpha), and when it can be skipped
(:func:`_chord_cannot_win`).  Part of :mod:`accounting.rdp`; derivations in
``docs/rdp-numerics.md``."""

from __future__ import annotations

import numpy as np

from accounting._log_a_frac import frac_rounding, log_a_frac
from accounting._log_a_int import log_a_int_precise

#: A chord below this is the fractional ``log A`` whatever the series gives.  The series enters
#: :func:`frac_with_chord` as ``la + frac_rounding(alpha)``; ``la`` is the log of a sum of absolute
#: values that is at least 1 exactly (it bounds ``A >= 1`` from above), computed with an error that
#: ``frac_rounding`` covers with room to spare (1e-14 for a measured 6e-16, 16 ulps of
#: ``gammaln(alpha + 1)`` for a few), so the candidate is at least half the constant part, 5e-15.
CHORD_WINS_BELOW = 5e-15


def frac_log_a(
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    sigma: np.ndarray,
    log_s: np.ndarray,
    alpha: np.ndarray,
    rows: np.ndarray,
    tab_idx: np.ndarray,
    tabs: tuple[np.ndarray, ...],
    int_cache: dict[int, np.ndarray] | None = None,
    q: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Fractional-order ``log A`` at ``rows`` (per-step arrays indexed by ``rows``): the series of
    :func:`log_a_frac` capped by the chord of :func:`frac_with_chord`, i.e. ``(log A, status)``
    exactly as ``frac_with_chord(*log_a_frac(...), ...)`` -- without the series where the chord
    certainly wins.

    Where the noise is so large that ``log A`` is far below the series' rounding allowance, the
    result is the chord whatever the series gives: ``fmin(series + frac_rounding, chord)`` is the
    chord once ``chord <`` :data:`CHORD_WINS_BELOW`, and a series that does not converge
    (at sigma >~ 1e8 its second half's terms stop decreasing in double precision, so every such
    row ran all its terms: ~2 minutes for one schedule reaching sigma = 1e150) also leaves the
    chord.  So those rows get their chord first, and the series runs only on the others.  Rows are
    tried where the Gaussian mechanism's chord ``((n+1-alpha) n(n-1) + (alpha-n) (n+1) n) s``, an
    upper bound on the subsampled one, is below half of it; the decision itself compares the
    computed chord.  Either way the value is a rigorous bound: the chord is one on its own.
    """
    la = np.full(rows.size, np.nan)
    status = np.full(rows.size, 2, dtype=np.int8)
    series = np.ones(rows.size, dtype=bool)
    n = np.floor(alpha)
    with np.errstate(over="ignore", invalid="ignore"):
        gauss = ((n + 1.0 - alpha) * (n * (n - 1.0)) + (alpha - n) * ((n + 1.0) * n)) * s[rows]
        tried = np.flatnonzero(np.isfinite(gauss) & (2.0 * gauss < CHORD_WINS_BELOW))
    if tried.size:
        c_la, c_st = frac_with_chord(
            np.full(tried.size, np.nan),
            np.full(tried.size, 2, dtype=np.int8),
            alpha[tried],
            rows[tried],
            lq,
            l1q,
            s,
            log_s,
            int_cache,
        )
        won = (c_st == 0) & (c_la < CHORD_WINS_BELOW)
        la[tried[won]], status[tried[won]] = c_la[won], 0
        series[tried[won]] = False
    run = np.flatnonzero(series)
    if run.size:
        r = rows[run]
        s_la, s_st = log_a_frac(lq[r], l1q[r], s[r], sigma[r], alpha[run], tab_idx[run], tabs, r)
        la[run], status[run] = frac_with_chord(s_la, s_st, alpha[run], r, lq, l1q, s, log_s, int_cache, q=q)
    return la, status


def frac_with_chord(
    la: np.ndarray,
    status: np.ndarray,
    alpha: np.ndarray,
    rows: np.ndarray,
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    log_s: np.ndarray,
    int_cache: dict[int, np.ndarray] | None = None,
    q: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Tighten fractional-order ``log A`` by the chord between the neighbouring integer orders.

    ``int_cache`` (optional): ``{m: log A_m per step, NaN where not yet known}`` from
    :func:`log_a_int_precise` on earlier calls with the same steps; read and filled here.

    ``log A_alpha = (alpha - 1) D_alpha = log int p^alpha q^(1-alpha)`` is convex in alpha
    (Hoelder's inequality) and 0 at alpha = 1, so for ``n < alpha < n + 1`` (n integer >= 1)
    ``log A_alpha <= (n + 1 - alpha) log A_n + (alpha - n) log A_(n+1)`` with ``log A_1 = 0``:
    a rigorous bound from the integer orders, which :func:`log_a_int_precise` evaluates with
    full relative precision.  It is far tighter than dp-accounting's absolute-value series when
    the noise is large (q = 0.3, sigma = 1e4, alpha = 1.1: 4.5e-11 instead of 1.9e-3 in log A).

    The series is an upper bound only up to its rounding, which is absolute, so it enters as
    ``series + _FRAC_ROUNDING``; the smaller of that and the chord is returned.  Where A is
    within ~1e-14 of 1 the chord (relative precision) therefore decides -- the plain series
    would round such an RDP to 0.  Rows whose series did not converge (status != 0) get the
    chord where it is finite (status reset to 0).

    ``q`` (optional, the per-step sample rates): rows where a closed-form *lower* bound on the
    chord already exceeds the series' value skip the chord's integer orders
    (:func:`_chord_cannot_win`): the result is the same to the bit, and a typical curve costs
    about a quarter less.
    """
    n = np.floor(alpha)
    cand = la + frac_rounding(alpha)
    need = np.ones(rows.size, dtype=bool)
    if q is not None:
        need = (status != 0) | ~_chord_cannot_win(cand, alpha, rows, q, s)
    la_int: dict[int, np.ndarray] = {}
    for m in np.unique(np.concatenate([n, n + 1])).astype(int):
        sel = np.nonzero(((n == m) | (n + 1 == m)) & need)[0]
        vals = np.zeros(rows.size)
        if m >= 2 and sel.size:
            # Each step once: the ~20 fractional orders next to m share their rows (per-row
            # values do not depend on the other rows, so this is the same value, ~20x cheaper).
            uniq, inv = np.unique(rows[sel], return_inverse=True)
            vals[sel] = cached_log_a_int(lq, l1q, s, log_s, uniq, int(m), int_cache)[inv.reshape(-1)]
        la_int[int(m)] = vals
    lo = np.empty(rows.size)
    hi = np.empty(rows.size)
    for m, vals in la_int.items():
        lo = np.where(n == m, vals, lo)
        hi = np.where(n + 1 == m, vals, hi)
    with np.errstate(over="ignore", invalid="ignore"):
        chord = (n + 1 - alpha) * lo + (alpha - n) * hi
    # rows that skipped the chord: +inf, so fmin below keeps their series value (as the chord,
    # being larger, would have)
    chord = np.where(np.isfinite(chord) & need, chord, np.inf)
    # fmin: a series that came back NaN with status 0 (large orders, e.g. q = 1e-3, sigma = 10,
    # alpha = 3000.5) leaves the chord, itself a rigorous bound, instead of dropping the order
    out = np.where(status == 0, np.fmin(cand, chord), chord)
    fixed = np.isfinite(out)
    return np.where(fixed, out, la), np.where(fixed, 0, status)


#: Relative margin by which the chord's lower bound must exceed the series before the chord is
#: skipped: far above every rounding in either bound, far below the chord's typical excess
#: (1e-3 and more: ``log A`` is strictly convex in alpha wherever the chord could matter).
_CHORD_SKIP_MARGIN = 1e-9


def _chord_cannot_win(
    cand: np.ndarray, alpha: np.ndarray, rows: np.ndarray, q: np.ndarray, s: np.ndarray
) -> np.ndarray:
    """Rows where the chord of :func:`frac_with_chord` is certainly above ``cand`` (the series'
    ``log A`` plus its allowance), so that ``fmin(cand, chord)`` is ``cand`` without the chord.

    Why this is exact: let ``L_m <= log A_m <= P_m`` at the integer neighbours (``L`` from the
    closed-form lower bound :func:`accounting.rdp_lower.log_a_lower_steps`, ``P`` the
    :func:`log_a_int_precise` values the chord uses; ``log A_1 = 0`` exactly).  The weights
    ``n + 1 - alpha`` and ``alpha - n`` are exact (Sterbenz) and nonnegative, so the computed
    chord is at least ``(1 - 4 ulp)`` times the chord of the ``L``, whose own computed value is
    within 4 ulp.  A relative margin of :data:`_CHORD_SKIP_MARGIN` covers both; where the lower
    chord, so reduced, is positive and above ``cand``, so is the chord.  Steps outside
    ``0 < q < 1`` with finite ``s > 0``, non-finite ``cand`` and orders above the lower bound's
    exact range give False (the chord is computed, as before)."""
    from accounting.rdp_lower import EXACT_ORDER_MAX, log_a_lower_steps

    n = np.floor(alpha)
    out = np.zeros(rows.size, dtype=bool)
    qs, ss = q[rows], s[rows]
    ok = np.isfinite(cand) & (n + 1.0 <= EXACT_ORDER_MAX)
    ok &= (qs > 0.0) & (qs < 1.0) & np.isfinite(ss) & (ss > 0.0)
    if not ok.any():
        return out
    idx = np.flatnonzero(ok)
    uniq, inv = np.unique(rows[idx], return_inverse=True)
    inv = inv.reshape(-1)
    ints = np.unique(np.concatenate([n[idx], n[idx] + 1.0]))
    ints = ints[ints >= 2.0]
    lower = np.zeros((uniq.size, ints.size + 1))  # column 0: log A_1 = 0
    if ints.size:
        lower[:, 1:] = log_a_lower_steps(q[uniq], s[uniq], ints)
    col = {1.0: 0, **{float(m): j + 1 for j, m in enumerate(ints)}}
    ni = n[idx]
    lo = lower[inv, [col[float(m)] for m in ni]]
    hi = lower[inv, [col[float(m) + 1.0] for m in ni]]
    a = alpha[idx]
    with np.errstate(over="ignore", invalid="ignore"):
        chord_lower = ((ni + 1.0 - a) * lo + (a - ni) * hi) * (1.0 - _CHORD_SKIP_MARGIN)
    out[idx] = (chord_lower > 0.0) & (chord_lower > cand[idx])
    return out


def cached_log_a_int(
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    log_s: np.ndarray,
    rows: np.ndarray,
    alpha: int,
    cache: dict[int, np.ndarray] | None,
) -> np.ndarray:
    """:func:`log_a_int_precise` at ``rows``, reading and filling ``cache`` (see
    :func:`frac_with_chord`): a row's value does not depend on the other rows evaluated with it,
    so a cached value is the one a fresh call would give."""
    if cache is None:
        return log_a_int_precise(lq, l1q, s, log_s, rows, alpha)
    known = cache.setdefault(alpha, np.full(lq.size, np.nan))
    miss = rows[np.isnan(known[rows])]
    if miss.size:
        known[miss] = log_a_int_precise(lq, l1q, s, log_s, miss, alpha)
    return known[rows]
