"""Per-step RDP of Poisson-subsampled Gaussian steps at every order (:func:`evaluate_steps`): the
dominant-term shortcut (:func:`_top_ok`) and the dispatch to the integer- and fractional-order
routines.  Part of :mod:`accounting.rdp`; the numerics are derived in ``docs/rdp-numerics.md``."""

from __future__ import annotations

import math

import numpy as np

from accounting._frac_chord import cached_log_a_int, frac_log_a
from accounting._log_a_frac import frac_tables
from accounting._log_a_int import (
    CHUNK_ELEMS,
    INT_PRUNE,
    log_a_int_dense,
    log_s_of_sigma,
)
from accounting._log_phi import NDTR_ONE
from accounting.rounding import ULP, up

# Fractional orders: give up (drop the order) after this many terms of each series.
_FRAC_MAX_TERMS = 4096
# Integer orders: sum every term of every order at once when rows x terms is below this.
# (only for few rows: with many rows the pruned per-order blocks of _log_a_int are cheaper)
_DENSE_BUDGET = 1 << 24
_DENSE_MAX_ORDER = 128
_DENSE_MAX_ROWS = 64
# Dominant-term search: test every (row, order) pair in one call up to this many pairs.
_TOP_TABLE = 1 << 16


def _top_ok(
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    sigma: np.ndarray,
    a: np.ndarray,
    is_int: np.ndarray,
    log_s0: np.ndarray,
) -> np.ndarray:
    """Elementwise test: does the ``k = alpha`` term certify ``log A = log g(alpha)``?

    With ``g(x) = q^x (1-q)^(alpha-x) exp((x^2-x)/(2 sigma^2))`` (log-convex, ``g(0) <= 1``), the
    top term is ``g(alpha)`` (times ``Phi((alpha-z0)/sigma)`` for fractional orders).  Bounds on
    everything else:

    * integer alpha: ``sum_{k<alpha} C(alpha,k) g(k) <= 2^alpha max(g(0), g(alpha-1))``
      (log-convexity) and ``<= exp((alpha-1)(alpha-2) s)`` (binomial weights sum to <= 1);
    * fractional alpha: by :func:`_frac_tail_log_bound` at n = 0 (first series) and n = 1
      (second series) the rest is ``<= 2 S(0) max(1, g(alpha-1))``; ``Phi((alpha-z0)/sigma) = 1``
      to within 1e-23 when its argument is >= 10.

    Where the rest is below ``g(alpha) e^-60``, ``log A = log g(alpha)`` to within ``e^-60``
    absolute (far below rounding) -- also what dp-accounting's sums evaluate to.  Then
    ``rdp = (alpha log q)/(alpha-1) + alpha s``.

    For fixed ``q <= 1/2`` the test is monotone in ``s`` (true for all s above a threshold):
    ``top - (alpha-1)(alpha-2)s``, ``top``, ``top - prev`` and the Phi argument all increase
    with s (the latter because ``z0 = sigma^2 log(1/q-1) + 1/2`` and ``log(1/q-1) >= 0``).
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        top = a * lq + (a * a - a) * s
        prev = (a - 1.0) * lq + l1q + (a - 1.0) * (a - 2.0) * s
        pmax = np.maximum(prev, 0.0)
        rest_int = np.minimum((a - 1.0) * (a - 2.0) * s, a * math.log(2.0) + pmax)
        rest_frac = math.log(2.0) + log_s0 + pmax
        rest = np.where(is_int, rest_int, rest_frac)
        ok = top - rest >= INT_PRUNE
        z0 = sigma * sigma * (l1q - lq) + 0.5
        ok &= is_int | ((a - z0) / sigma >= NDTR_ONE)
    return ok


def _top_value(x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray | float:
    """``x + y`` (the dominant term's RDP, ``x = alpha log q / (alpha - 1)``, ``y = alpha s``) plus
    4 ulps of ``|x| + |y|``: the products, the division and the sum each round by at most half an
    ulp of their size, and the true RDP is at least ``x + y``.  Without the pad, q = 0.5,
    sigma = 0.3, alpha = 16 comes out 1.7e-16 relative below a 60-digit reference."""
    with np.errstate(over="ignore", invalid="ignore"):
        return x + y + 4.0 * ULP * (np.abs(x) + np.abs(y))


def evaluate_steps(
    q: np.ndarray,
    sig: np.ndarray,
    orders: np.ndarray,
    weights: np.ndarray | None,
    int_cache: dict[int, np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[int, str]]:
    """RDP of steps ``(q_t, sigma_t)`` at each order.

    ``int_cache``: per-step integer-order ``log A`` kept between calls on the same steps
    (:func:`accounting._frac_chord.cached_log_a_int`; the same values, computed once).

    ``weights is None``: the ``(T, n)`` matrix (NaN where not evaluable).  Otherwise the
    weighted column sums ``sum_t w_t rdp[t]`` (NaN at orders with a non-evaluable entry).
    Also returns ``{order index: reason}`` for the first failure at each order.
    """
    t_len, n_ord = q.size, orders.size
    matrix = weights is None
    out = np.full((t_len, n_ord), np.nan) if matrix else None
    total = np.zeros(n_ord)
    n_adds = np.zeros(n_ord)  # additions into each total: each rounds by half an ulp of the total
    w = np.ones(t_len) if weights is None else np.asarray(weights, dtype=float)
    reasons: dict[int, str] = {}
    with np.errstate(divide="ignore", over="ignore"):
        s = 0.5 / (sig * sig)
    log_s = log_s_of_sigma(sig)

    def note(col: int, rows: np.ndarray, why: str) -> None:
        if col not in reasons and rows.size:
            r = rows[0]
            reasons[col] = f"{why} (q={q[r]:.6g}, noise multiplier={sig[r]:.6g})"

    def put(col: int, rows: np.ndarray, vals: np.ndarray) -> None:
        if matrix:
            out[rows, col] = vals
        else:
            # A sum of n nonnegative products rounds by at most (n + 1) ulps of the sum (relative):
            # scaled up by that, the total stays above the sum of the (upper-bound) values.
            with np.errstate(over="ignore", invalid="ignore"):
                d = float(np.dot(w[rows], np.maximum(vals, 0.0)))
                total[col] += d * up(rows.size + 2)
                n_adds[col] += 1

    def put_one_row_each(cols_: np.ndarray, rows_: np.ndarray | int, vals: np.ndarray) -> None:
        """:func:`put` for columns that each get exactly one row (distinct columns), as array
        ops: a dot of one product is that product, ``up(1 + 2)``, one addition per column --
        the same bits as calling ``put`` column by column."""
        if matrix:
            out[rows_, cols_] = vals
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                total[cols_] += (w[rows_] * np.maximum(vals, 0.0)) * up(3)
            n_adds[cols_] += 1

    full = np.nonzero(q == 1.0)[0]
    if full.size:
        for col in range(n_ord):
            with np.errstate(over="ignore"):
                put(col, full, orders[col] * s[full] * (1.0 + 4.0 * ULP))  # s = 1/(2 sigma^2) rounds
    with np.errstate(divide="ignore"):
        lq_all = np.log(q)
        l1q_all = np.log1p(-q)
    is_int = orders == np.floor(orders)
    frac_cols = np.nonzero(~is_int)[0]
    log_s0 = np.zeros(n_ord)
    # Fractional orders grouped by their series' table length (4096 terms up to order 2016, more
    # for larger ones): each order's table, hence its value, is the one it gets alone -- a grid
    # with one huge fractional order no longer gives every other order that order's length
    # (orders 1.5..59.5 with 621843.5 built 60 tables of 1.2e6 terms: 6 GB).
    by_length: dict[int, list[int]] = {}
    for c in frac_cols.tolist():
        by_length.setdefault(max(_FRAC_MAX_TERMS, int(2 * orders[c]) + 64), []).append(c)
    frac_groups = {nt: np.array(cols_g, dtype=np.intp) for nt, cols_g in by_length.items()}
    frac_tabs: dict[int, tuple[np.ndarray, ...]] = {}
    for nt, cols_g in frac_groups.items():
        frac_tabs[nt] = frac_tables(tuple(float(orders[c]) for c in cols_g), nt)
        log_s0[cols_g] = frac_tabs[nt][2][:, 0]

    slow: list[list[np.ndarray]] = [[] for _ in range(n_ord)]
    sub = np.nonzero(q < 1.0)[0]
    uq, grp = np.unique(q[sub], return_inverse=True)
    cols = np.arange(n_ord)
    for g, qg in enumerate(uq):
        rows = sub[grp.reshape(-1) == g]
        lq_g, l1q_g = float(lq_all[rows[0]]), float(l1q_all[rows[0]])
        # s = inf (sigma below ~1e-154) cannot be evaluated: straight to the slow path, which
        # reports the overflow; keeps the monotone search below well defined.
        inf_rows = rows[~np.isfinite(s[rows])]
        if inf_rows.size:
            rows = rows[np.isfinite(s[rows])]
            for col in cols:
                slow[col].append(inf_rows)
            if not rows.size:
                continue
        if qg <= 0.5:
            # Monotone in s: sort by s descending, binary-search the dominated prefix per order.
            rows = rows[np.argsort(-s[rows], kind="stable")]
            m = rows.size
            table = None
            if m * n_ord <= _TOP_TABLE:
                # every (row, order) test at once; the search below then only looks them up (the
                # same prefixes as testing at each probe, in a tenth of the array calls)
                table = _top_ok(
                    lq_g,
                    l1q_g,
                    s[rows, None],
                    sig[rows, None],
                    orders[None, :],
                    is_int[None, :],
                    log_s0[None, :],
                )
            lo, hi = np.zeros(n_ord, dtype=np.int64), np.full(n_ord, m, dtype=np.int64)
            cols = np.arange(n_ord)
            while np.any(lo < hi):
                act = lo < hi
                mid = (lo + hi) // 2
                probe = np.minimum(mid, m - 1)
                if table is None:
                    r = rows[probe]
                    ok = _top_ok(lq_g, l1q_g, s[r], sig[r], orders, is_int, log_s0) & act
                else:
                    ok = table[probe, cols] & act
                lo = np.where(ok, mid + 1, lo)
                hi = np.where(act & ~ok, mid, hi)
            prefix = lo
            with np.errstate(over="ignore"):  # an overflowing sum is inf: an infinite (sound) bound
                ws = np.concatenate([[0.0], np.cumsum(w[rows])])
                wss = np.concatenate([[0.0], np.cumsum(w[rows] * s[rows])])
            if not matrix:
                # every order's dominated prefix at once: per column the same operations as the
                # loop below (one addition into its total), so the same bits, without 170
                # Python-level iterations per call
                dom = np.flatnonzero(prefix > 0)
                if dom.size:
                    a_d, p_d = orders[dom], prefix[dom]
                    with np.errstate(over="ignore", invalid="ignore"):
                        xs, ys = (a_d * lq_g / (a_d - 1.0)) * ws[p_d], a_d * wss[p_d]
                        total[dom] += _top_value(xs, ys) + (p_d + 2) * ULP * (np.abs(xs) + ys)
                    n_adds[dom] += 1
                for col in np.flatnonzero(prefix < m):
                    slow[col].append(rows[int(prefix[col]) :])
                continue
            for col in cols:
                p = int(prefix[col])
                a = orders[col]
                if p:
                    x = a * lq_g / (a - 1.0)
                    out[rows[:p], col] = _top_value(x, a * s[rows[:p]])
                if p < m:
                    slow[col].append(rows[p:])
        else:
            chunk = max(1, CHUNK_ELEMS // n_ord)
            for a0 in range(0, rows.size, chunk):
                rr = rows[a0 : a0 + chunk]
                ok = _top_ok(
                    lq_g, l1q_g, s[rr, None], sig[rr, None], orders[None, :], is_int[None, :], log_s0[None, :]
                )
                for col in cols:
                    fr = rr[ok[:, col]]
                    a = orders[col]
                    if fr.size:
                        put(col, fr, _top_value(a * lq_g / (a - 1.0), a * s[fr]))
                    if fr.size < rr.size:
                        slow[col].append(rr[~ok[:, col]])

    # Small integer orders: one dense pass over all their terms (few rows) ...
    int_cols = [int(c) for c in np.nonzero(is_int)[0] if slow[c] and orders[c] <= _DENSE_MAX_ORDER]
    big_cols = [int(c) for c in np.nonzero(is_int)[0] if slow[c] and orders[c] > _DENSE_MAX_ORDER]
    for col in big_cols:  # ... large ones: pruned blocks, per order, on their own slow rows
        rows = np.concatenate(slow[col])
        alpha = int(orders[col])
        put(col, rows, cached_log_a_int(lq_all, l1q_all, s, log_s, rows, alpha, int_cache) / (alpha - 1))
    if int_cols:
        alphas = tuple(int(orders[c]) for c in int_cols)
        most = max(sum(x.size for x in slow[c]) for c in int_cols)
        # (the union has at least as many rows as the largest order's: skip it when that is too many)
        union = (
            np.unique(np.concatenate([np.concatenate(slow[c]) for c in int_cols]))
            if most <= _DENSE_MAX_ROWS
            else None
        )
        if (
            union is not None
            and union.size <= _DENSE_MAX_ROWS
            and union.size * sum(al + 1 for al in alphas) <= _DENSE_BUDGET
        ):
            la = log_a_int_dense(lq_all[union], l1q_all[union], s[union], log_s[union], alphas)
            if union.size == 1:  # one step: each order's slow rows are that step
                vals = la[0] / (np.asarray(alphas, dtype=float) - 1.0)
                put_one_row_each(np.asarray(int_cols, dtype=np.intp), int(union[0]), vals)
            else:
                pos = {int(r): i for i, r in enumerate(union)} if union.size < 64 else None
                for j, col in enumerate(int_cols):
                    rows = np.concatenate(slow[col])
                    idx = np.searchsorted(union, rows) if pos is None else [pos[int(r)] for r in rows]
                    put(col, rows, la[idx, j] / (alphas[j] - 1))
        else:
            for col, alpha in zip(int_cols, alphas, strict=True):
                rows = np.concatenate(slow[col])
                la_c = cached_log_a_int(lq_all, l1q_all, s, log_s, rows, alpha, int_cache)
                put(col, rows, la_c / (alpha - 1))
    for n_terms, frac_g in frac_groups.items():
        tabs = frac_tabs[n_terms]
        pr = [np.concatenate(slow[c]) if slow[c] else np.zeros(0, dtype=np.int64) for c in frac_g]
        r_idx = np.concatenate(pr)
        j_idx = np.repeat(np.arange(frac_g.size), [x.size for x in pr])
        per = 1 << 16
        for a0 in range(0, r_idx.size, per):
            rr, jj = r_idx[a0 : a0 + per], j_idx[a0 : a0 + per]
            alpha = orders[frac_g][jj]
            la, st = frac_log_a(lq_all, l1q_all, s, sig, log_s, alpha, rr, jj, tabs, int_cache, q=q)
            vals = la / (alpha - 1.0)
            if matrix or np.unique(jj).size == jj.size:  # (a matrix entry is one row anyway)
                put_one_row_each(frac_g[jj], rr, vals)
            else:
                for j in np.unique(jj):
                    sel = jj == j
                    put(int(frac_g[j]), rr[sel], vals[sel])
            for code, why in (
                (2, f"fractional-order series did not converge within {n_terms} terms"),
                (3, "overflow in the fractional-order series"),
            ):
                bad = st == code
                for j in np.unique(jj[bad]):
                    note(int(frac_g[j]), rr[bad & (jj == j)], why)

    if matrix:
        # RDP is a Renyi divergence, hence >= 0; tiny negative values are log-space rounding.
        with np.errstate(invalid="ignore"):
            out = np.where(out < 0, 0.0, out)
        for col in np.nonzero(~np.isfinite(out).all(axis=0))[0]:
            rows = np.nonzero(~np.isfinite(out[:, col]))[0]
            note(int(col), rows, "overflow: RDP not representable in double precision")
        out[~np.isfinite(out)] = np.nan
        return out, reasons
    # The group contributions are nonnegative, so their running sum rounds by at most
    # (n_adds - 1) ulps of the total (unpadded, 400 distinct sample rates come out 89 ulps low).
    with np.errstate(over="ignore", invalid="ignore"):
        total = total * up(n_adds + 1.0)
    for col in np.nonzero(~np.isfinite(total))[0]:
        if int(col) not in reasons:
            reasons[int(col)] = "overflow: composed RDP not representable in double precision"
    total[~np.isfinite(total)] = np.nan
    return total, reasons
