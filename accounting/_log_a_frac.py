"""Fractional-order ``log A_alpha`` of the Poisson-subsampled Gaussian: dp-accounting's two
series with a rigorous remainder check (:func:`_frac_certify`), the special-function-free far
tail, rounding allowances and the chord between neighbouring integer orders.  Part of
:mod:`accounting.rdp`; the numerics and their bounds are derived in ``docs/rdp-numerics.md``."""

from __future__ import annotations

import functools
import math

import numpy as np

from accounting import special
from accounting._log_phi import log_ndtr_upper

# Fractional series: cap each block of terms at about this many (row, term) elements (cache-sized).
_FRAC_BLOCK_ELEMS = 1 << 18


@functools.lru_cache(maxsize=16)
def _log_factorials(n: int) -> np.ndarray:
    """``log i!`` for ``i <= n``, read-only: the same for every order, so computed once per length
    (a third of a table's cost, and the tables are built for thousands of distinct orders)."""
    out = special.gammaln(np.arange(n + 1, dtype=float) + 1.0)
    out.flags.writeable = False
    return out


def _log_factorials_for(n: int) -> np.ndarray:
    """:func:`_log_factorials`, cached only up to :data:`CACHED_TERMS` (the same values)."""
    return _log_factorials(n) if n <= CACHED_TERMS else _log_factorials.__wrapped__(n)


@functools.lru_cache(maxsize=512)
def _frac_tables(alpha: float, n_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log|C(alpha,i)|`` and ``sign C(alpha,i)`` for i < n_terms, and ``log S(N)`` with
    ``S(N) >= sum_{i>=N} |C(alpha,i)|`` for N <= n_terms.

    For ``i > alpha``, ``|C(alpha,i+1)/C(alpha,i)| = (i-alpha)/(i+1) <= exp(-(alpha+1)/(i+1))``
    gives ``|C(alpha,i)| <= |C(alpha,M)| ((M+1)/(i+1))^(alpha+1)`` for ``i >= M > alpha``, hence
    ``sum_{i>M} |C(alpha,i)| <= |C(alpha,M)| (M+1)/alpha`` (integral test).  S is the exact suffix
    sum below ``n_terms`` plus that analytic tail (``n_terms > alpha + 1``).
    """
    i = np.arange(n_terms + 1, dtype=float)
    lc = special.gammaln(alpha + 1.0) - _log_factorials_for(n_terms) - special.gammaln(alpha - i + 1.0)
    sign = special.gammasgn(alpha - i + 1.0)
    m = n_terms
    tail = lc[m] + math.log1p((m + 1.0) / alpha)  # bound on sum_{i >= m}
    ls = np.empty(n_terms + 1)
    ls[n_terms] = tail
    # suffix log-sum-exp, in reverse
    rev = np.logaddexp.accumulate(np.concatenate([[tail], lc[:n_terms][::-1]]))
    ls[:n_terms] = rev[1:][::-1]
    return lc[:n_terms], sign[:n_terms], ls


#: Tables of more terms than this (orders above ~8000) are built for the call and not cached:
#: at order 1e6 one order's tables take ~80 MB, and the caches hold up to 512 entries.
CACHED_TERMS = 1 << 14


@functools.lru_cache(maxsize=64)
def frac_tables_stacked(alphas: tuple[float, ...], n_terms: int) -> tuple[np.ndarray, ...]:
    """(log|C|, sign C, log S) stacked per order, plus terms-major copies of the first two."""
    tables = _frac_tables if n_terms <= CACHED_TERMS else _frac_tables.__wrapped__
    tabl = [tables(al, n_terms) for al in alphas]
    lc, sg, ls = (np.stack([t[k] for t in tabl]) for k in range(3))
    return lc, sg, ls, np.ascontiguousarray(lc.T), np.ascontiguousarray(sg.T)


def frac_tables(alphas: tuple[float, ...], n_terms: int) -> tuple[np.ndarray, ...]:
    """:func:`frac_tables_stacked`, cached only up to :data:`CACHED_TERMS` terms (the same values)."""
    build = frac_tables_stacked if n_terms <= CACHED_TERMS else frac_tables_stacked.__wrapped__
    return build(alphas, n_terms)


# First argument from which log Phi is the closed-form asymptotic series (cheap far-tail terms).
_NDTR_ASYMP = -40.0


def _frac_tail_log_bound(
    n: np.ndarray,
    a: np.ndarray,
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    z0: np.ndarray,
    log_s_n: np.ndarray,
    sigma: np.ndarray,
) -> np.ndarray:
    """Log of a rigorous bound on ``sum_{i >= n}`` of both series' terms (absolute values).

    Let ``g(x) = q^x (1-q)^(alpha-x) exp((x^2-x)/(2 sigma^2))``, i.e.
    ``(1-q)^alpha exp((x^2 - 2 x z0)/(2 sigma^2))`` with ``z0 = sigma^2 log(1/q-1) + 1/2``:
    log-convex, minimal at z0.  Term i of the first series is ``|C(alpha,i)| g(i) Phi((z0-i)/sigma)``,
    of the second ``|C(alpha,i)| g(j) Phi((j-z0)/sigma)`` with ``j = alpha - i``.
    Using ``Phi <= 1`` and, for ``y >= 0``, ``Phi(-y) <= psi(y) exp(-y^2/2)`` with the decreasing
    Mills factor ``psi(y) = min(1/2, 1/(y sqrt(2 pi)))``, together with the identity
    ``g(x) exp(-(x-z0)^2/(2 sigma^2)) = g(z0)``:

    * first series, every ``i >= n``: term <= |C| G0, ``G0 = g(n)`` if ``n <= z0`` else
      ``g(z0) psi((n-z0)/sigma)``;
    * second series (``j <= alpha - n``): term <= |C| G1, ``G1 = g(alpha-n)`` if ``alpha-n >= z0``
      else ``g(z0) psi((z0-alpha+n)/sigma)``.

    So the remainder is at most ``(G0 + G1) S(n)``, S from :func:`_frac_tables`.
    """

    def logg(x: np.ndarray) -> np.ndarray:
        return x * lq + (a - x) * l1q + (x * x - x) * s

    def log_psi(y: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.minimum(math.log(0.5), -np.log(np.maximum(y, 0.0) * math.sqrt(2 * math.pi)))

    lgz0 = logg(z0)
    g0 = np.where(n <= z0, logg(n), lgz0 + log_psi((n - z0) / sigma))
    g1 = np.where(a - n >= z0, logg(a - n), lgz0 + log_psi((z0 - a + n) / sigma))
    return np.logaddexp(g0, g1) + log_s_n


def _mills(r: np.ndarray) -> np.ndarray:
    """``sum_{n<=5} (-1)^n (2n-1)!! r^n``: ``Phi(-y) = phi(y)/y * _mills(1/y^2)`` up to a relative
    error below the first omitted term ``10395 r^6`` (< 6e-16 for y >= 40).

    Evaluated in place, innermost factor first, with the roundings of
    ``1 - r (1 - 3 r (1 - 5 r (1 - 7 r (1 - 9 r))))`` (each ``c r`` times the inner factor, then
    ``1 -``): the same bits, without a temporary per operation on the far tail's blocks."""
    acc = r * 9.0
    np.subtract(1.0, acc, out=acc)
    cr = np.empty_like(acc)
    for c in (7.0, 5.0, 3.0):
        np.multiply(r, c, out=cr)
        acc *= cr
        np.subtract(1.0, acc, out=acc)
    acc *= r
    np.subtract(1.0, acc, out=acc)
    return acc


def _frac_far_tail(
    rows: np.ndarray,
    n0: int,
    a: np.ndarray,
    s: np.ndarray,
    sigma: np.ndarray,
    z0: np.ndarray,
    base0: np.ndarray,
    tab_idx: np.ndarray,
    tabs: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    state: tuple[np.ndarray, ...],
    out: tuple[np.ndarray, ...],
) -> None:
    """Continue the fractional series of ``rows`` from index ``n0`` in the far tail.

    There both Phi arguments are <= -40 (``y0 = (i-z0)/sigma``, ``y1 = (i+z0-alpha)/sigma``
    >= 40) and ``i >= alpha + 2``.  With ``log g(x) - y^2/2 = alpha log(1-q) - z0^2 s`` (exact,
    see :func:`_frac_tail_log_bound`) each term is
    ``|C(alpha,i)| exp(alpha log(1-q) - z0^2 s) / sqrt(2 pi) * M(1/y^2) / y`` with the Mills series
    :func:`_mills` -- no special functions.  Both terms strictly decrease in i here
    (``|C(alpha,i)|`` decreases for i > alpha + 1 and ``M(1/y^2)/y`` decreases for y >= 40),
    so dp-accounting's stopping rule reduces to ``max(term) < total e^-30`` (checked against
    the previous block at each block's first index).  Same state/output arrays as the caller.
    """
    lc_tab, sg_tab, _ = tabs
    partial, negpart, last0, last1 = state
    result, stop_at, status = out
    n_max = lc_tab.shape[1]
    e30 = math.exp(-30.0)
    with np.errstate(over="ignore", invalid="ignore"):
        kk = base0 - z0 * z0 * s - 0.5 * math.log(2.0 * math.pi)
    act = rows
    n = n0
    width = 32
    while act.size and n < n_max:
        w = max(1, min(width, n_max - n, _FRAC_BLOCK_ELEMS // max(1, act.size)))
        i = np.arange(n, n + w, dtype=float)
        tix = tab_idx[act]
        lc = lc_tab[tix, n : n + w]
        pa = partial[act]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ref = np.maximum(pa, kk[act] + lc[:, 0])  # |C| decreases: column 0 is the block max
            ref = np.where(np.isfinite(ref), ref, 0.0)
            # in place, with the roundings of big = exp(lc + (kk - ref)), u0 = sg / (i - zz),
            # u1 = sg / ((i + zz) - a), t = big * (u * M(u^2)) and cm1 = cumsum(t0 + t1) + expm1(.)
            big = np.add(lc, (kk[act] - ref)[:, None])
            np.exp(big, out=big)
            sg, zz = sigma[act, None], z0[act, None]
            u0 = np.subtract(i, zz)
            np.divide(sg, u0, out=u0)
            u1 = np.add(i, zz)
            u1 -= a[act, None]
            np.divide(sg, u1, out=u1)
            t0 = _mills(u0 * u0)
            t0 *= u0
            t0 *= big
            t1 = _mills(u1 * u1)
            t1 *= u1
            t1 *= big
            tt = t0 + t1
            cm1 = np.cumsum(tt, axis=1)
            cm1 += np.expm1(pa - ref)[:, None]  # total/exp(ref) - 1, precise
            c = 1.0 + cm1
            cond = np.maximum(t0, t1) < c * e30
            cond[:, 0] &= (ref + np.log(t0[:, 0]) < last0[act]) & (ref + np.log(t1[:, 0]) < last1[act])
            neg = sg_tab[tix, n : n + w] < 0
            cn = np.cumsum(np.where(neg, tt, 0.0), axis=1) + np.exp(negpart[act] - ref)[:, None]
        finite = np.isfinite(c).all(axis=1)
        has = cond.any(axis=1) & finite
        first = np.argmax(cond, axis=1)
        pick = np.nonzero(has)[0]
        done = act[pick]
        with np.errstate(divide="ignore"):
            result[done] = ref[pick] + np.log1p(cm1[pick, first[pick]])
            negpart[done] = ref[pick] + np.log(cn[pick, first[pick]])
        stop_at[done] = n + first[pick]
        status[done] = 0
        status[act[~finite]] = 3
        cont = ~has & finite
        rest = act[cont]
        with np.errstate(divide="ignore"):
            partial[rest] = ref[cont] + np.log1p(cm1[cont, -1])
            negpart[rest] = ref[cont] + np.log(cn[cont, -1])
            last0[rest] = ref[cont] + np.log(t0[cont, -1])
            last1[rest] = ref[cont] + np.log(t1[cont, -1])
        act = rest
        n += w
        width = min(2 * width, 512)


_CERTIFY_TERMS = 16


def _frac_certify(
    rows: np.ndarray,
    stop_at: np.ndarray,
    result: np.ndarray,
    negpart: np.ndarray,
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    sigma: np.ndarray,
    z0: np.ndarray,
    a: np.ndarray,
    tab_idx: np.ndarray,
    tabs: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Upper bound on the true ``log A`` for rows whose truncated sum ``S_N`` is not yet certified.

    The true value is the *signed* series: ``A = S_N - 2 neg_N + sum_{N<i<=M} sign_i t_i + R_M``
    with ``|R_M|`` at most the remainder bound of :func:`_frac_tail_log_bound` at ``M + 1``.  We
    evaluate the next ``_CERTIFY_TERMS`` terms exactly and return
    ``log(S_N + max(0, extras - 2 neg_N) + bound)``: dp-accounting's value ``S_N`` plus a
    correction that is tiny in practice -- never below the truth.
    """
    lc_tab, sg_tab, ls_tab = tabs
    n_max = lc_tab.shape[1]
    start = stop_at[rows].astype(int) + 1
    idx = start[:, None] + np.arange(_CERTIFY_TERMS)
    valid = idx < n_max
    idx = np.minimum(idx, n_max - 1)
    i = idx.astype(float)
    tix = tab_idx[rows]
    lc = lc_tab[tix[:, None], idx]
    sgn = sg_tab[tix[:, None], idx]
    aa, sa, siga, z0a = a[rows, None], s[rows, None], sigma[rows, None], z0[rows, None]
    lqa, l1qa = lq[rows, None], l1q[rows, None]
    j = aa - i
    ref = result[rows]
    with np.errstate(over="ignore", invalid="ignore"):
        ls0 = lc + i * lqa + j * l1qa + (i * i - i) * sa + log_ndtr_upper((z0a - i) / siga)
        ls1 = lc + j * lqa + i * l1qa + (j * j - j) * sa + log_ndtr_upper((j - z0a) / siga)
        t = np.exp(ls0 - ref[:, None]) + np.exp(ls1 - ref[:, None])
        extras = np.where(valid, sgn * t, 0.0).sum(axis=1)
        nxt = np.minimum(start + _CERTIFY_TERMS, n_max)
        bound = np.exp(
            _frac_tail_log_bound(
                nxt.astype(float),
                a[rows],
                lq[rows],
                l1q[rows],
                s[rows],
                z0[rows],
                ls_tab[tix, nxt],
                sigma[rows],
            )
            - ref
        )
        corr = np.maximum(0.0, extras - 2.0 * np.exp(negpart[rows] - ref)) + bound
        out = ref + np.log1p(corr)
    return np.where(np.isfinite(out), out, np.nan)


#: Fractional orders: absolute rounding allowance added to the series' ``log A``.  The series
#: sums O(1) terms to ``A = 1 + tiny``, so its error is absolute (a few ulp of 1), not relative;
#: against 60-digit quadrature (``tests/accounting/test_rdp_extremes.py``) it undercuts the true value by
#: at most 6e-16 where ``log A`` is 1e-6 and by a relative 1e-4 at ``log A`` = 1e-20 (there
#: the raw series can even be negative).  1e-14 covers that with a 15x margin.
_FRAC_ROUNDING = 1e-14


def frac_rounding(alpha: np.ndarray) -> np.ndarray:
    """Absolute rounding allowance on the series' ``log A`` at order alpha.

    Besides the summation (:data:`_FRAC_ROUNDING`), every term carries the rounding of
    ``log|C(alpha, i)|``, i.e. of ``gammaln(alpha + 1)`` ~ alpha log alpha: about one ulp of that,
    which exceeds 1e-14 from alpha ~ 50 on (with the constant allowance alone, q = 4.4e-7,
    sigma = 1e4, alpha = 5000.5 is undercut by 44% in RDP).  16 ulps of it are added.
    """
    a = np.asarray(alpha, dtype=float)
    # one gammaln per distinct order (the rows repeat a few orders over every step)
    uniq, inv = np.unique(a, return_inverse=True)
    g = special.gammaln(uniq + 1.0)[inv].reshape(a.shape)
    return _FRAC_ROUNDING + 16.0 * np.finfo(float).eps * np.abs(g)


#: Up to this many columns ``np.cumsum`` beats the row loop (which wins on few long rows).
_CUMSUM_COLS = 160


def _cumsum0(x: np.ndarray) -> np.ndarray:
    """Running sum along axis 0, in place.  Both routes add ``x[k-1] + x[k]`` in order (numpy's
    accumulate is sequential), so the bits are the same; only the speed depends on the shape."""
    if x.shape[1] <= _CUMSUM_COLS:
        return np.cumsum(x, axis=0, out=x)
    for k in range(1, x.shape[0]):
        np.add(x[k - 1], x[k], out=x[k])
    return x


def log_a_frac(
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    sigma: np.ndarray,
    a: np.ndarray,
    tab_idx: np.ndarray,
    tabs: tuple[np.ndarray, ...],
    step: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """log A for fractional orders, one (step, order) pair per row.

    ``step`` (optional) names each row's step: rows of one step share ``q`` and ``sigma``, so
    the first series' ``log Phi((z0 - i)/sigma)`` does not depend on the order and is computed
    once per step and term (the same value, elementwise, as per row).

    Terms and stopping rule are dp-accounting's ``_compute_log_a_frac`` (absolute values of
    both series; stop after the first index i at which both series' terms decrease and are
    below ``total - 30``), so values agree with it to rounding.  Soundness check on top: the
    truncated *absolute* series upper-bounds the true (signed) series ``A_alpha`` whenever
    twice the included negative-sign terms exceed the remainder bound of
    :func:`_frac_tail_log_bound`; when that cannot be shown, the remainder bound is added.

    Returns ``(log_a, status)``: 0 ok, 2 not converged within the table length, 3 overflow.
    """
    lc_tab, sg_tab, ls_tab = tabs[:3]
    tabs_t = tabs[3:5]
    tabs = tabs[:3]
    nrows = lq.shape[0]
    n_max = lc_tab.shape[1]
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        z0 = sigma * sigma * (l1q - lq) + 0.5
        d = lq - l1q
        base0 = a * l1q
        base1 = a * lq
    partial = np.full(nrows, -np.inf)  # log of the sum of all terms so far
    negpart = np.full(nrows, -np.inf)  # log of the sum of negative-sign terms so far
    last0 = np.full(nrows, -np.inf)
    last1 = np.full(nrows, -np.inf)
    result = np.full(nrows, np.nan)
    stop_at = np.zeros(nrows)
    status = np.full(nrows, 2, dtype=np.int8)
    # z0 = +inf (sigma^2 overflows, s = 0): every second-series term is exactly 0 (log Phi(-inf)),
    # so its terms never decrease and the stopping rule never holds; such a row would run to the
    # table's end and leave status 2 (not converged, NaN) -- left there at once, same result.
    active = np.flatnonzero(z0 != np.inf)
    n = 0
    width = 3
    e30 = math.exp(-30.0)
    # first index from which both Phi arguments are <= _NDTR_ASYMP (cheap closed-form terms)
    with np.errstate(invalid="ignore", over="ignore"):
        i_tail = np.maximum(z0 - _NDTR_ASYMP * sigma, a - z0 - _NDTR_ASYMP * sigma)
    i_tail = np.where(np.isfinite(i_tail), i_tail, np.inf)
    # Blocks are laid out terms-major, shape (w, rows): reductions and running sums over the
    # few terms of a block are then cheap row-vector operations.
    lc_t, sg_t = tabs_t
    if step is not None:
        # one sort for the whole call: each row's step as an index into the distinct steps
        _, first_row, step_of = np.unique(step, return_index=True, return_inverse=True)
        step_of = step_of.reshape(-1)
    while active.size and n < n_max:
        w = max(1, min(width, n_max - n, _FRAC_BLOCK_ELEMS // max(1, active.size)))
        i = np.arange(n, n + w, dtype=float)[:, None]
        ii = i * i - i
        tix = tab_idx[active]
        lc = lc_t[n : n + w][:, tix]
        aa = a[active]
        j = aa - i
        sa, siga, z0a, da = s[active], sigma[active], z0[active], d[active]
        with np.errstate(over="ignore", invalid="ignore"):
            # term i of each series, as dp-accounting's _compute_log_a_frac:
            # i log q + (alpha-i) log(1-q) = alpha log(1-q) + i (log q - log(1-q)), and
            # symmetrically for the second series (j = alpha - i).
            ida = i * da
            if step is None:
                phi0 = log_ndtr_upper((z0a - i) / siga)
            else:
                live = np.zeros(first_row.size, dtype=bool)  # distinct steps with an active row
                live[step_of[active]] = True
                if live.sum() < active.size:
                    one = first_row[live]
                    back = (np.cumsum(live) - 1)[step_of[active]]
                    phi0 = log_ndtr_upper((z0[one] - i) / sigma[one])[:, back]
                else:
                    phi0 = log_ndtr_upper((z0a - i) / siga)
            ls0 = lc + base0[active] + ida + ii * sa + phi0
            ls1 = lc + base1[active] - ida + (j * j - j) * sa + log_ndtr_upper((j - z0a) / siga)
            pa = partial[active]
            ref = np.maximum(np.maximum(ls0.max(axis=0), ls1.max(axis=0)), pa)
            ref = np.where(np.isfinite(ref), ref, 0.0)
            e0 = np.exp(ls0 - ref)
            e1 = np.exp(ls1 - ref)
            # Running total / exp(ref), kept as c - 1 = (#terms equal to ref - 1) + (the others):
            # log1p(c - 1) keeps full precision when log A is tiny (A = 1 + 1e-24).
            # (a term equal to ref has e == 1.0 exactly, so e - top is exactly 0 there)
            top = (ls0 == ref).astype(float)
            top1 = ls1 == ref
            pa_top = pa == ref
            y = (e0 - top) + (e1 - top1)
            top += top1
            y[0] += np.where(pa_top, 0.0, np.exp(pa - ref))
            top[0] += pa_top - 1.0
            cm1 = _cumsum0(y) + _cumsum0(top)  # integer part kept apart: no cancellation
            c = 1.0 + cm1
            prev0 = np.concatenate([last0[active][None, :], ls0[:-1]], axis=0)
            prev1 = np.concatenate([last1[active][None, :], ls1[:-1]], axis=0)
            # dp-accounting's stop: both terms decrease and max(term) < total - 30 (linear scale)
            cond = (ls0 < prev0) & (ls1 < prev1) & (np.maximum(e0, e1) < c * e30)
            neg = sg_t[n : n + w][:, tix] < 0
            ne = (e0 + e1) * neg
            ne[0] += np.exp(negpart[active] - ref)
            cn = _cumsum0(ne)
        finite = np.isfinite(c).all(axis=0) & np.isfinite(ls0).any(axis=0)
        has = cond.any(axis=0) & finite
        broken = ~finite
        first = np.argmax(cond, axis=0)
        pick = np.nonzero(has)[0]
        rows_done = active[pick]
        with np.errstate(divide="ignore"):
            result[rows_done] = ref[pick] + np.log1p(cm1[first[pick], pick])
            negpart[rows_done] = ref[pick] + np.log(cn[first[pick], pick])
        stop_at[rows_done] = n + first[pick]
        status[rows_done] = 0
        status[active[broken]] = 3
        cont = ~has & ~broken
        rest = active[cont]
        with np.errstate(divide="ignore"):
            partial[rest] = ref[cont] + np.log1p(cm1[-1, cont])
            negpart[rest] = ref[cont] + np.log(cn[-1, cont])
        last0[rest] = ls0[-1, cont]
        last1[rest] = ls1[-1, cont]
        n += w
        to_tail = (n >= i_tail[rest]) & (n >= a[rest] + 2.0)
        if to_tail.any():
            _frac_far_tail(
                rest[to_tail],
                n,
                a,
                s,
                sigma,
                z0,
                base0,
                tab_idx,
                tabs,
                state=(partial, negpart, last0, last1),
                out=(result, stop_at, status),
            )
        active = rest[~to_tail]
        width = min(width + max(2, width // 2), 256)
    ok = np.nonzero(status == 0)[0]
    if ok.size:
        with np.errstate(over="ignore", invalid="ignore"):
            nxt = stop_at[ok] + 1.0
            tail = _frac_tail_log_bound(
                nxt, a[ok], lq[ok], l1q[ok], s[ok], z0[ok], ls_tab[tab_idx[ok], nxt.astype(int)], sigma[ok]
            )
            proven = negpart[ok] + math.log(2.0) >= tail
        # Remainder bound below e^-45 of the sum: add it directly (log(S+B) <= log S + B/S); the
        # change is < 3e-20, no extra terms needed.  Otherwise certify with extra exact terms.
        tiny = ~proven & (tail < result[ok] - 45.0)
        result[ok[tiny]] += np.exp(tail[tiny] - result[ok[tiny]])
        todo = ok[~proven & ~tiny]
        per = max(1, _FRAC_BLOCK_ELEMS // _CERTIFY_TERMS)
        for c0 in range(0, todo.size, per):
            sub = todo[c0 : c0 + per]
            result[sub] = _frac_certify(
                sub, stop_at, result, negpart, lq, l1q, s, sigma, z0, a, tab_idx, tabs
            )
    return result, status
