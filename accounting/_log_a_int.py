"""Integer-order ``log A_alpha`` of the Poisson-subsampled Gaussian (pruned blocks, dense pass,
and the precise ``log(A - 1)`` route near A = 1).  Part of :mod:`accounting.rdp`; the
numerics and their bounds are derived in ``docs/rdp-numerics.md``."""

from __future__ import annotations

import functools
import math

import numpy as np

from accounting import special
from accounting.rounding import ULP

# Integer orders: skip a block of terms when its upper bound is below (max found) - INT_PRUNE.
INT_PRUNE = 60.0
_INT_BLOCK = 16
# Integer orders above this get their coefficient tables built per call, not cached.
_CACHED_ORDER = 1 << 16
# Row chunking: keep every temporary array below about this many float64 elements.
CHUNK_ELEMS = 1 << 22


def _log_expm1_kk(kk: np.ndarray, s: np.ndarray, log_s: np.ndarray) -> np.ndarray:
    """``log(expm1(kk * s))`` for ``kk >= 0`` (``-inf`` at kk = 0), an upper bound to rounding.

    Written as ``log kk + log s + log(expm1(x)/x)`` with ``x = kk s`` and ``log s`` passed in
    separately, so that nothing underflows even when ``s = 1/(2 sigma^2)`` itself does.  For
    ``x < 1e-5`` the series ``log(expm1(x)/x) = x/2 + x^2/24 - x^4/2880 + ...`` is cut after its
    second term (an overestimate by < 4e-24); for ``x > 700`` ``expm1(x) = e^x (1 - e^-x)``.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x = kk * s
        small = x < 1e-5
        big = x > 700.0
        xm = np.where(small | big, 1.0, x)
        mid = np.log(np.expm1(xm) / xm)
        ratio = np.where(small, x * (0.5 + x / 24.0), np.where(big, x - np.log(x), mid))
        return np.log(kk) + log_s + ratio


@functools.lru_cache(maxsize=512)
def _int_tables(alpha: int) -> tuple[np.ndarray, np.ndarray]:
    """log C(alpha, k) padded to whole blocks (-inf padding) and the max per block."""
    k = np.arange(alpha + 1, dtype=float)
    lc = special.gammaln(alpha + 1.0) - special.gammaln(k + 1.0) - special.gammaln(alpha - k + 1.0)
    nb = -(-(alpha + 1) // _INT_BLOCK)
    pad = np.full(nb * _INT_BLOCK, -np.inf)
    pad[: alpha + 1] = lc
    blk = pad.reshape(nb, _INT_BLOCK)
    return pad, blk.max(axis=1)


#: One unit of double rounding (2^-52).


def _rounding_allowance(alpha: np.ndarray | float, l1q: np.ndarray) -> np.ndarray:
    """An upper bound on the absolute rounding error of each term ``L(k)`` in log space.

    ``log C(alpha, k)`` is a difference of ``gammaln`` values of size up to ``gammaln(alpha+1)``
    (each within 4 ulps, see :mod:`accounting.special`), so the dominant terms (small k, large
    alpha) carry an absolute error of a few ulps of ``gammaln(alpha+1)`` -- about 5e-10 at
    alpha = 2e5, far above the rounding of the sum.  ``alpha log(1-q)`` adds a few ulps of its own
    size.  Adding 8 ulps of both to ``log A`` (or to ``log(A-1)``, where it is relative to
    ``A-1``) keeps every integer-order value an upper bound (without it, alpha = 2e5,
    q = 1e-5, sigma = 1000 comes out 7.7e-11 below a 90-digit reference).
    """
    a = np.asarray(alpha, dtype=float)
    g = np.array([_lgamma1(float(x)) for x in a.ravel()]).reshape(a.shape)
    return 8.0 * ULP * (np.maximum(1.0, g) + a * np.abs(l1q) + 1.0)


def _padded(value: np.ndarray, err: np.ndarray) -> np.ndarray:
    """``value + err`` plus 4 ulps of ``|value|``: the final log-sum-exp step rounds relative to
    ``|value|`` (e.g. ``log(A - 1) ~ -69``, whose ulp exceeds the term-level ``err``, which the
    addition would then lose), and the later division by ``alpha - 1`` rounds once more.  Without
    it, q = 1e-9, sigma = 1e6, alpha = 2 comes out 3e-16 relative below a 60-digit reference."""
    with np.errstate(over="ignore", invalid="ignore"):
        return value + err + 4.0 * ULP * np.abs(value)


@functools.lru_cache(maxsize=4096)
def _lgamma1(alpha: float) -> float:
    """``log Gamma(alpha + 1)`` (only the allowance's scale: a few ulps either way are harmless)."""
    return math.lgamma(alpha + 1.0)


def _lse_rows(terms: np.ndarray) -> np.ndarray:
    """Row-wise log-sum-exp ``m + log1p(sum of the other terms / e^m)`` (rows with a non-finite
    max give that max).  Leaving the largest term out of the sum and using ``log1p`` keeps full
    relative precision when ``log A`` is tiny (A = 1 + 1e-24 stays distinguishable from 1)."""
    m = terms.max(axis=1)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        top = terms == safe[:, None]
        rest = np.where(top, 0.0, np.exp(terms - safe[:, None])).sum(axis=1) + (top.sum(axis=1) - 1)
        return np.where(np.isfinite(m), safe + np.log1p(rest), m)


def _log_a_int(
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    alpha: int,
    log_s: np.ndarray | None = None,
) -> np.ndarray:
    """log A_alpha for integer alpha >= 2, one value per row (0 < q < 1, s = 1/(2 sigma^2)).

    Term k: ``L(k) = log C(alpha,k) + k log q + (alpha-k) log(1-q) + (k^2-k) s``.

    With ``log_s`` given (``log s`` per row) it returns ``log(A - 1)`` instead, from the terms
    ``L(k) - (k^2-k) s + log expm1((k^2-k) s)`` (k >= 2; k = 0, 1 contribute 0): since the
    binomial weights sum to 1, ``A - 1 = sum_k C(alpha,k) q^k (1-q)^(alpha-k) expm1((k^2-k) s)``,
    a sum of nonnegative terms -- no cancellation, so ``log1p(A - 1)`` keeps full relative
    precision where ``A = 1 + 1e-20`` (noise far above the sensitivity; the plain sum rounds
    such an A to 1, i.e. the RDP to 0, which is *not* conservative).

    Pruning: on a block ``k0..k1`` every term satisfies
    ``L(k) <= max_block log C + max(k0 u, k1 u) + S(k1) + alpha log(1-q)`` with
    ``u = log q - log(1-q)`` and ``S(k)`` the s-part above (each summand maximised separately;
    ``S`` is non-decreasing in k).  ``M`` = the largest exactly computed term (block starts and
    ``k = alpha``) is a lower bound on the sum; blocks whose bound is below ``M - 60`` are
    skipped, and ``log1p((alpha+1) e^-60)`` is added back, so the result is an upper bound.
    """
    # (tables of huge orders, up to 8 MB each, are not kept: the cache holds up to 512)
    pad, blk_max = _int_tables(alpha) if alpha <= _CACHED_ORDER else _int_tables.__wrapped__(alpha)
    nb = blk_max.size
    u = lq - l1q
    base = alpha * l1q
    out = np.empty(lq.shape[0])
    minus_one = log_s is not None

    def spart(kk: np.ndarray, ss: np.ndarray, lss: np.ndarray | None) -> np.ndarray:
        return _log_expm1_kk(kk, ss, lss) if minus_one else kk * ss

    if nb <= 3:
        k = np.arange(alpha + 1, dtype=float)
        lc = pad[: alpha + 1]
        rows = max(1, CHUNK_ELEMS // (alpha + 1))
        for a in range(0, lq.shape[0], rows):
            b = a + rows
            lss = log_s[a:b, None] if minus_one else None
            with np.errstate(over="ignore", invalid="ignore"):
                terms = lc + k * u[a:b, None] + base[a:b, None] + spart(k * k - k, s[a:b, None], lss)
            out[a:b] = _lse_rows(terms)
        return _padded(out, _rounding_allowance(alpha, l1q))

    slack = math.log1p((alpha + 1) * math.exp(-INT_PRUNE))
    k0 = np.arange(nb, dtype=float) * _INT_BLOCK
    k1 = np.minimum(k0 + _INT_BLOCK - 1, alpha)
    lc0 = pad[k0.astype(int)]
    jj = np.arange(_INT_BLOCK)
    rows = max(1, CHUNK_ELEMS // (nb * _INT_BLOCK))
    for a in range(0, lq.shape[0], rows):
        b = min(a + rows, lq.shape[0])
        uu, ss, bb = u[a:b, None], s[a:b, None], base[a:b, None]
        lss = log_s[a:b, None] if minus_one else None
        with np.errstate(over="ignore", invalid="ignore"):
            ub = blk_max + np.maximum(k0 * uu, k1 * uu) + spart(k1 * k1 - k1, ss, lss) + bb
            start = lc0 + k0 * uu + spart(k0 * k0 - k0, ss, lss) + bb
            top = alpha * lq[a:b] + spart(np.array([alpha * alpha - alpha], dtype=float), ss, lss)[:, 0]
            lower = np.maximum(start.max(axis=1), top)
            keep = ub >= (lower - INT_PRUNE)[:, None]
        r_idx, b_idx = np.nonzero(keep)
        n = b - a
        counts = np.bincount(r_idx, minlength=n)
        res = np.full(n, np.nan)
        if r_idx.size:
            kk = b_idx[:, None] * _INT_BLOCK + jj  # (P, block)
            kf = kk.astype(float)
            lsr = log_s[a + r_idx, None] if minus_one else None
            with np.errstate(over="ignore", invalid="ignore"):
                terms = (
                    pad[kk]
                    + kf * u[a + r_idx, None]
                    + base[a + r_idx, None]
                    + spart(kf * kf - kf, s[a + r_idx, None], lsr)
                )
                pm = terms.max(axis=1)
                has = counts > 0
                starts = np.concatenate([[0], np.cumsum(counts[has])[:-1]])
                rm = np.maximum.reduceat(pm, starts)
                rm_rows = np.repeat(rm, counts[has])
                safe = np.where(np.isfinite(rm_rows), rm_rows, 0.0)
                top = terms == safe[:, None]  # all but the largest term, then log1p (_lse_rows)
                partial = np.where(top, 0.0, np.exp(terms - safe[:, None])).sum(axis=1)
                rest = np.add.reduceat(partial, starts) + (np.add.reduceat(top.sum(axis=1), starts) - 1)
                val = np.where(np.isfinite(rm), rm + np.log1p(rest) + slack, np.nan)
            res[has] = val
        out[a:b] = res
    return _padded(out, _rounding_allowance(alpha, l1q))


def _log1p_exp(log_am1: np.ndarray) -> np.ndarray:
    """``log A = log1p(A - 1)`` from ``log(A - 1)``; below ``e^-690`` the value is floored at
    ``e^-690`` (~2e-300), an upper bound on ``log1p(x) <= x``, so an RDP is never rounded to 0."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(log_am1 < -690.0, math.exp(-690.0), np.logaddexp(0.0, log_am1))


def log_s_of_sigma(sig: np.ndarray) -> np.ndarray:
    """``log(1/(2 sigma^2))`` without underflow."""
    return -math.log(2.0) - 2.0 * np.log(sig)


#: Rows whose plain ``log A`` falls below this are recomputed through ``log(A - 1)``.
_PRECISE_BELOW = 1e-2


def log_a_int_precise(
    lq: np.ndarray, l1q: np.ndarray, s: np.ndarray, log_s: np.ndarray, rows: np.ndarray, alpha: int
) -> np.ndarray:
    """log A at ``rows`` (indices into the per-step arrays): the plain sum, then rows whose value
    is below :data:`_PRECISE_BELOW` again through ``log(A - 1)`` (plain sums are accurate to
    rounding relative to A itself, i.e. only absolutely; the second pass is accurate relative
    to ``log A``)."""
    # Rows with (alpha^2 - alpha) s < _PRECISE_BELOW / 2 go straight to the second pass: log A is
    # at most the Gaussian's (alpha - 1) alpha s (subsampling is post-processing), so their plain
    # sum would land below _PRECISE_BELOW and be redone anyway (same values, half the work).
    with np.errstate(over="ignore", invalid="ignore"):
        direct = (float(alpha) * alpha - alpha) * s[rows] < 0.5 * _PRECISE_BELOW
    la = np.empty(rows.size)
    plain = np.nonzero(~direct)[0]
    if plain.size:
        la[plain] = _log_a_int(lq[rows[plain]], l1q[rows[plain]], s[rows[plain]], alpha)
    redo = np.nonzero(direct | ~(la >= _PRECISE_BELOW))[0]  # also NaN
    if redo.size:
        r = rows[redo]
        la[redo] = _log1p_exp(_log_a_int(lq[r], l1q[r], s[r], alpha, log_s[r]))
    return la


@functools.lru_cache(maxsize=64)
def _int_dense_tables(alphas: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Concatenated ``k``, ``alpha`` and ``log C(alpha, k)`` over all orders, and segment starts."""
    ks = [np.arange(al + 1, dtype=float) for al in alphas]
    k = np.concatenate(ks)
    al = np.concatenate([np.full(al + 1, float(al)) for al in alphas])
    lc = special.gammaln(al + 1.0) - special.gammaln(k + 1.0) - special.gammaln(al - k + 1.0)
    starts = np.concatenate([[0], np.cumsum([al + 1 for al in alphas])[:-1]]).astype(np.intp)
    return k, al, lc, starts


def log_a_int_dense(
    lq: np.ndarray, l1q: np.ndarray, s: np.ndarray, log_s: np.ndarray, alphas: tuple[int, ...]
) -> np.ndarray:
    """log A for every row and every integer order at once (no pruning: all terms summed).

    Shape ``(rows, len(alphas))``.  Used when rows are few, where one vectorised pass over
    all ``sum(alpha+1)`` terms beats per-order calls.  Sums the nonnegative terms of ``A - 1``
    (see :func:`_log_a_int`), so it is precise however close A is to 1.
    """
    k, al, lc, starts = _int_dense_tables(alphas)
    coef_u = k  # multiplies log q - log(1-q)
    kk = k * k - k
    out = np.empty((lq.shape[0], len(alphas)))
    rows = max(1, CHUNK_ELEMS // k.size)
    counts = np.diff(np.append(starts, k.size))
    for a in range(0, lq.shape[0], rows):
        b = a + rows
        u = (lq[a:b] - l1q[a:b])[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            terms = lc + coef_u * u + al * l1q[a:b, None] + _log_expm1_kk(kk, s[a:b, None], log_s[a:b, None])
            m = np.maximum.reduceat(terms, starts, axis=1)
            safe = np.where(np.isfinite(m), m, 0.0)
            mrep = np.repeat(safe, counts, axis=1)
            top = terms == mrep  # sum all but the largest term, then log1p (see _lse_rows)
            e = np.where(top, 0.0, np.exp(terms - mrep))
            rest = np.add.reduceat(e, starts, axis=1) + (np.add.reduceat(top, starts, axis=1) - 1)
            lam1 = safe + np.log1p(rest)
            # The same allowance as :func:`log_a_int_precise` would add: on log A where it is
            # >= _PRECISE_BELOW (there the per-order path keeps the plain sum), on log(A - 1)
            # below -- so the dense and per-order paths agree to rounding.
            err = _rounding_allowance(np.asarray(alphas), l1q[a:b, None])
            la = _log1p_exp(lam1)
            la = np.where(la >= _PRECISE_BELOW, _padded(la, err), _log1p_exp(_padded(lam1, err)))
            out[a:b] = np.where(np.isfinite(m), la, np.nan)
    return out
