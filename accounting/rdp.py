"""Renyi DP of the Gaussian and the Poisson-subsampled Gaussian mechanism (add/remove adjacency).

Conventions follow dp-accounting's ``RdpAccountant`` (Mironov, Talwar, Zhang 2019, "Renyi
Differential Privacy of the Sampled Gaussian Mechanism", arXiv:1908.10530): for sampling rate
``q`` and noise multiplier ``sigma`` the RDP at order ``alpha`` is ``log(A_alpha) / (alpha - 1)``.

* Integer alpha:  ``A = sum_{k=0}^{alpha} C(alpha,k) (1-q)^(alpha-k) q^k exp((k^2-k)/(2 sigma^2))``.
* Fractional alpha: the two-series formula of Sec. 3.3 of that paper, with each term taken in
  absolute value exactly as dp-accounting does (``gammaln`` returns ``log|Gamma|``).  Summing
  absolute values can only increase ``A``, so the result is an upper bound on the true value.

Everything is computed in log space and vectorised over steps (rows) and orders; a schedule of
``T`` distinct ``(q_k, sigma_k)`` is a handful of array operations per order (no Python loop
over steps), chunked over rows to bound memory.  Identical steps are grouped (``np.unique``)
so a constant schedule costs one evaluation.  Per (step, order) pair the cheapest exact route:

1. dominant term (:func:`_top_ok`): if a bound on every other term is below ``e^-60`` times the
   ``k = alpha`` term, ``log A`` is that term (O(1); for fixed q the test is monotone in sigma,
   so a binary search over the sorted steps finds the dominated prefix per order);
2. integer orders: all terms of all small orders in one dense pass
   (:func:`_log_a_int_dense`); large orders use pruned blocks (:func:`_log_a_int`);
3. fractional orders: dp-accounting's series in growing blocks (:func:`_log_a_frac`), with a
   special-function-free kernel in the far tail (:func:`_frac_far_tail`).

Precision near A = 1 (huge noise, tiny q): ``A - 1`` is O(q^2 / sigma^2), below double
precision relative to A, so a plain sum rounds the RDP to 0 -- for any number of steps, which
would be unsound.  Integer orders whose plain ``log A`` is below :data:`_PRECISE_BELOW` are
recomputed from ``A - 1 = sum_k C(alpha,k) q^k (1-q)^(alpha-k) expm1((k^2-k) s)`` (nonnegative
terms, full relative precision; :func:`_log_a_int`), and fractional orders are capped by the
chord of ``log A`` between the neighbouring integer orders (:func:`_frac_with_chord`), their
series entering with an absolute rounding allowance.  Every per-step value is therefore > 0
and an upper bound to within relative rounding (tested against 60-digit quadrature).

Truncations and bounds (all hold up to double rounding, ~1e-16 relative in ``log A``):

* dominant term / pruned integer blocks: the omitted terms total at most ``(alpha+1) e^-60``
  times the kept sum; the pruned sums add ``log1p((alpha+1) e^-60)`` back, and the dominant
  term is only used where ``log A >= 60`` (so its e^-60 relative slack is below rounding).
* fractional orders: the same series and stopping rule as dp-accounting (stop once both
  series' terms decrease and fall below ``total - 30``), so values agree with it to rounding.
  On top, a rigorous check (:func:`_log_a_frac`, :func:`_frac_certify`) that the truncated
  absolute series still upper-bounds the true ``A_alpha``; where that cannot be shown a
  rigorous remainder bound is added (conservative; observed deviation from dp-accounting
  < 1e-9 relative).  A series that has not stopped after ``_FRAC_MAX_TERMS`` terms
  (dp-accounting gives up after 1000) drops the order with that reason.

Cost: fractional orders near 1 at moderate noise (sigma ~ 0.2-1 for q ~ 0.01) need hundreds to
thousands of series terms per step (their terms decay only polynomially), exactly as in
dp-accounting; this dominates long schedules whose steps all sit in that regime.

An order that cannot be evaluated (overflow, non-convergence) is reported in
:attr:`RdpCurve.dropped`; its ``rdp`` entry is ``inf`` so that no caller can use it by accident.

Long schedules (``evaluation="grid"``, or ``"auto"`` from :data:`AUTO_GRID_MIN_ROWS` distinct
steps on where the grid is estimated to cost at most half, see :func:`_grid_pays`).  Exact
evaluation costs a few microseconds per (step, fractional order), so 10^5 distinct steps take
tens of seconds.  Instead, per sample rate q, the RDP is evaluated exactly (by the code above)
on a grid ``g_0 < ... < g_m`` of noise multipliers covering ``[min sigma, max sigma]`` (both
ends exact, the rest anchored at ``ratio**j`` so that rescaled schedules share points, whose
values are cached), and every step is bounded from the grid:

* Integer orders -- chord in ``s = 1/(2 sigma^2)``.  ``log A_alpha(s) = logsumexp_k [log
  C(alpha,k) + (alpha-k) log(1-q) + k log q + (k^2-k) s]`` is a log-sum-exp of functions affine
  in s, hence convex in s (log-sum-exp is convex and non-decreasing in each argument).  A convex
  function lies below its chords, so for ``S_{i+1} <= s <= S_i`` (``S_i = 1/(2 g_i^2)``) linear
  interpolation of ``log A`` (equivalently of the RDP; max(., 0) keeps convexity) between the two
  grid points is an upper bound.  Excess: ``<= (1/8) max|f''| (S_i - S_{i+1})^2``, second order
  in the spacing (larger only in the one interval where ``log A`` bends sharply, where the
  ``k = alpha`` term takes over).
* Fractional orders -- rounding sigma down.  The signed series has no sign structure we can
  use, so no convexity is assumed.  Instead: the RDP of the subsampled Gaussian is the Renyi
  divergence between ``(1-q) N(0, sigma^2) + q N(1, sigma^2)`` and ``N(0, sigma^2)``; for
  ``sigma' > sigma`` both are obtained from the sigma-pair by adding independent
  ``N(0, sigma'^2 - sigma^2)`` noise, a Markov kernel, so by the data-processing inequality the
  divergence at ``sigma'`` is at most that at ``sigma``: non-increasing in sigma.  Hence the
  value at the grid point ``g_j <= sigma`` (float comparison, exact) bounds the step, and the
  computed value there is itself an upper bound on the truth (above).  Excess: first order,
  about ``|d rdp / d log sigma| log(g_{j+1}/g_j)``.
* Fractional orders, second bound: ``(alpha-1) D_alpha = log int p^alpha q^(1-alpha)`` is convex
  in alpha (Hoelder), also summed over steps, and 0 at alpha = 1; so with integer orders
  ``a < alpha < b`` of the grid (or a = 1) ``D_alpha <= ((b-alpha)(a-1) D_a + (alpha-a)(b-1) D_b)
  / ((b-a)(alpha-1))`` with the integer orders' upper bounds inserted (nonnegative weights).
  The smaller of the two bounds is used (the chord wins at larger orders; for alpha in (1,2)
  it only gives ``D_alpha <= D_2``).

The grid starts geometric (neighbours :data:`GRID_RATIO` apart) and is refined once where the
estimated excess (interval by interval) is largest, aiming at a relative excess
:data:`GRID_TOL` per order; any grid is sound, refinement only buys tightness.  The returned
curve lists every grid-bounded order in :attr:`RdpCurve.bounded` with an *estimate* of its
excess over the exact evaluation (integer orders: chord minus the larger of the monotone bound
and the secant extensions of the neighbouring intervals -- a rigorous bound on the chord's
excess over the exact convex function; fractional orders: value at the grid point below
minus the value at the grid point above, i.e. rounding the other way).
:func:`accounting.conversion.rdp_to_epsilon` turns these into a warning.  Measured (q = 0.01,
inv-k, 10^5 steps, default grid): epsilon 1e-3 (base sigma 300, eps ~ 17) to 4e-3 (base 30)
relative above the exact evaluation.  :func:`subsampled_gaussian_rdp_steps` is always exact.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from accounting import special, validate
from accounting.errors import InvalidParameter

__all__ = [
    "AUTO_GRID_MIN_ROWS",
    "AUTO_GRID_THRESHOLD",
    "EVALUATIONS",
    "GRID_RATIO",
    "GRID_TOL",
    "RdpCurve",
    "gaussian_rdp",
    "subsampled_gaussian_rdp",
    "subsampled_gaussian_rdp_steps",
]

# Integer orders: skip a block of terms when its upper bound is below (max found) - _INT_PRUNE.
_INT_PRUNE = 60.0
_INT_BLOCK = 16
# Fractional orders: give up (drop the order) after this many terms of each series.
_FRAC_MAX_TERMS = 4096
# log_ndtr(x) for x >= _NDTR_ONE is replaced by 0 (true value is -Q(x) > -1e-23): an
# overestimate of the term by a factor < 1 + 1e-23, conservative and far below rounding.
_NDTR_ONE = 10.0
# Row chunking: keep every temporary array below about this many float64 elements.
_CHUNK_ELEMS = 1 << 22
# Fractional series: cap each block of terms at about this many (row, term) elements (cache-sized).
_FRAC_BLOCK_ELEMS = 1 << 18
# Integer orders: sum every term of every order at once when rows x terms is below this.
# (only for few rows: with many rows the pruned per-order blocks of _log_a_int are cheaper)
_DENSE_BUDGET = 1 << 24
_DENSE_MAX_ORDER = 128
_DENSE_MAX_ROWS = 64


# --------------------------------------------------------------------------------------------
# RdpCurve
# --------------------------------------------------------------------------------------------


def _merge_dropped(*lists: tuple[tuple[float, str], ...]) -> tuple[tuple[float, str], ...]:
    merged: dict[float, list[str]] = {}
    for lst in lists:
        for order, reason in lst:
            reasons = merged.setdefault(float(order), [])
            if reason not in reasons:
                reasons.append(reason)
    return tuple((o, "; ".join(r)) for o, r in sorted(merged.items()))


def _merge_bounded(*lists: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    """Union of ``(order, gap)`` lists; gaps of the same order add (they compose like RDP)."""
    merged: dict[float, float] = {}
    for lst in lists:
        for order, gap in lst:
            g = float(gap)
            if not g >= 0:  # also rejects NaN
                raise ValueError(f"bounded gap must be >= 0 (got {gap!r} at order {order!r})")
            merged[float(order)] = merged.get(float(order), 0.0) + g
    return tuple(sorted(merged.items()))


@dataclass(frozen=True, eq=False)
class RdpCurve:
    """RDP guarantees ``rdp[i]`` at ``orders[i]`` of a (composed) mechanism.

    ``dropped`` lists ``(order, reason)`` for orders that could not be evaluated; their ``rdp``
    entry is ``inf`` (never a silent 0).  ``bounded`` lists ``(order, gap)`` for orders whose
    value is a sound *grid upper bound* (long schedules, see the module docstring) rather than
    an exact evaluation; ``gap >= 0`` estimates how far it may exceed the exact value.
    ``a + b`` is composition (RDP adds at each order; gaps add too); ``c.scaled(k)`` is the
    k-fold self-composition.
    """

    orders: np.ndarray
    rdp: np.ndarray
    dropped: tuple[tuple[float, str], ...] = field(default=())
    bounded: tuple[tuple[float, float], ...] = field(default=())

    def __post_init__(self) -> None:
        orders = np.array(self.orders, dtype=float).reshape(-1)
        rdp = np.array(self.rdp, dtype=float).reshape(-1)
        if orders.shape != rdp.shape:
            raise ValueError(f"orders and rdp differ in shape: {orders.shape} vs {rdp.shape}")
        if np.any(~np.isfinite(orders)) or np.any(orders < 1):
            raise InvalidParameter("--orders", "orders must be finite and >= 1")
        dropped = _merge_dropped(tuple(self.dropped))
        dropped_set = {o for o, _ in dropped}
        # Anything not finite must be explained; anything explained must be unusable.
        extra = [
            (float(o), "RDP value is not finite (overflow)")
            for o in orders[~np.isfinite(rdp)]  # vectorised: curves are built once per step
            if float(o) not in dropped_set
        ]
        if extra:
            dropped = _merge_dropped(dropped, tuple(extra))
        mask = np.isin(orders, [o for o, _ in dropped])
        rdp = np.where(mask | np.isnan(rdp), np.inf, rdp)
        orders.setflags(write=False)
        rdp.setflags(write=False)
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "rdp", rdp)
        object.__setattr__(self, "dropped", dropped)
        bounded = _merge_bounded(tuple(self.bounded))
        unknown = sorted({o for o, _ in bounded} - set(orders.tolist()))  # one set, not one per entry
        if unknown:
            raise ValueError(f"bounded lists orders not in the curve: {unknown[:3]}")
        object.__setattr__(self, "bounded", bounded)

    @property
    def bounded_orders(self) -> tuple[float, ...]:
        """Orders whose value is a grid upper bound (not an exact evaluation)."""
        return tuple(o for o, _ in self.bounded)

    @classmethod
    def zeros(cls, orders: np.ndarray) -> RdpCurve:
        """The curve of the mechanism that reveals nothing (identity for ``+``)."""
        o = np.asarray(orders, dtype=float)
        return cls(o, np.zeros_like(o))

    @property
    def finite(self) -> np.ndarray:
        """Boolean mask of orders with a usable (finite) RDP value."""
        return np.isfinite(self.rdp)

    def __add__(self, other: RdpCurve) -> RdpCurve:
        if not isinstance(other, RdpCurve):
            return NotImplemented
        if self.orders.shape != other.orders.shape or not np.array_equal(self.orders, other.orders):
            raise ValueError("cannot compose RDP curves over different order grids")
        with np.errstate(over="ignore", invalid="ignore"):
            total = self.rdp + other.rdp
        return RdpCurve(
            self.orders,
            total,
            _merge_dropped(self.dropped, other.dropped),
            _merge_bounded(self.bounded, other.bounded),
        )

    def scaled(self, k: float) -> RdpCurve:
        """k-fold self-composition (``k >= 0``; RDP composes additively)."""
        k = validate.nonnegative("--steps", k)
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.where(np.isfinite(self.rdp), self.rdp * k, np.inf)
        bounded = tuple((o, g * k) for o, g in self.bounded) if k > 0 else ()
        return RdpCurve(self.orders, r, self.dropped, bounded)


# --------------------------------------------------------------------------------------------
# Gaussian
# --------------------------------------------------------------------------------------------


def _check_orders(orders: np.ndarray | list[float] | float) -> np.ndarray:
    o = np.atleast_1d(np.asarray(orders, dtype=float))
    if o.ndim != 1 or o.size == 0:
        raise InvalidParameter("--orders", "must be a non-empty 1-D list of orders")
    if np.any(~np.isfinite(o)) or np.any(o <= 1):
        raise InvalidParameter("--orders", "orders must be finite and > 1")
    return o


def gaussian_rdp(noise_multiplier: float | np.ndarray, orders: np.ndarray) -> np.ndarray:
    """RDP ``alpha / (2 sigma^2)`` of the Gaussian mechanism (sensitivity 1, noise std sigma).

    Scalar ``noise_multiplier`` gives shape ``(n_orders,)``; an array of shape ``(T,)`` gives
    ``(T, n_orders)``.
    """
    o = _check_orders(orders)
    sig = np.asarray(noise_multiplier, dtype=float)
    validate.positive_array("--noise-multiplier", sig)
    with np.errstate(over="ignore"):
        if sig.ndim == 0:
            return o / (2.0 * float(sig) ** 2)
        return o[None, :] / (2.0 * sig.reshape(-1, 1) ** 2)


# --------------------------------------------------------------------------------------------
# Subsampled Gaussian: integer orders
# --------------------------------------------------------------------------------------------


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
    pad, blk_max = _int_tables(alpha)
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
        rows = max(1, _CHUNK_ELEMS // (alpha + 1))
        for a in range(0, lq.shape[0], rows):
            b = a + rows
            lss = log_s[a:b, None] if minus_one else None
            with np.errstate(over="ignore", invalid="ignore"):
                terms = lc + k * u[a:b, None] + base[a:b, None] + spart(k * k - k, s[a:b, None], lss)
            out[a:b] = _lse_rows(terms)
        return out

    slack = math.log1p((alpha + 1) * math.exp(-_INT_PRUNE))
    k0 = np.arange(nb, dtype=float) * _INT_BLOCK
    k1 = np.minimum(k0 + _INT_BLOCK - 1, alpha)
    lc0 = pad[k0.astype(int)]
    jj = np.arange(_INT_BLOCK)
    rows = max(1, _CHUNK_ELEMS // (nb * _INT_BLOCK))
    for a in range(0, lq.shape[0], rows):
        b = min(a + rows, lq.shape[0])
        uu, ss, bb = u[a:b, None], s[a:b, None], base[a:b, None]
        lss = log_s[a:b, None] if minus_one else None
        with np.errstate(over="ignore", invalid="ignore"):
            ub = blk_max + np.maximum(k0 * uu, k1 * uu) + spart(k1 * k1 - k1, ss, lss) + bb
            start = lc0 + k0 * uu + spart(k0 * k0 - k0, ss, lss) + bb
            top = alpha * lq[a:b] + spart(np.array([alpha * alpha - alpha], dtype=float), ss, lss)[:, 0]
            lower = np.maximum(start.max(axis=1), top)
            keep = ub >= (lower - _INT_PRUNE)[:, None]
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
    return out


def _log1p_exp(log_am1: np.ndarray) -> np.ndarray:
    """``log A = log1p(A - 1)`` from ``log(A - 1)``; below ``e^-690`` the value is floored at
    ``e^-690`` (~2e-300), an upper bound on ``log1p(x) <= x``, so an RDP is never rounded to 0."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(log_am1 < -690.0, math.exp(-690.0), np.logaddexp(0.0, log_am1))


def _log_s(sig: np.ndarray) -> np.ndarray:
    """``log(1/(2 sigma^2))`` without underflow."""
    return -math.log(2.0) - 2.0 * np.log(sig)


#: Rows whose plain ``log A`` falls below this are recomputed through ``log(A - 1)``.
_PRECISE_BELOW = 1e-2


def _log_a_int_precise(
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


def _log_a_int_dense(
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
    rows = max(1, _CHUNK_ELEMS // k.size)
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
            out[a:b] = np.where(np.isfinite(m), _log1p_exp(safe + np.log1p(rest)), np.nan)
    return out


# --------------------------------------------------------------------------------------------
# Subsampled Gaussian: fractional orders
# --------------------------------------------------------------------------------------------


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
    lc = special.gammaln(alpha + 1.0) - special.gammaln(i + 1.0) - special.gammaln(alpha - i + 1.0)
    sign = special.gammasgn(alpha - i + 1.0)
    m = n_terms
    tail = lc[m] + math.log1p((m + 1.0) / alpha)  # bound on sum_{i >= m}
    ls = np.empty(n_terms + 1)
    ls[n_terms] = tail
    # suffix log-sum-exp, in reverse
    rev = np.logaddexp.accumulate(np.concatenate([[tail], lc[:n_terms][::-1]]))
    ls[:n_terms] = rev[1:][::-1]
    return lc[:n_terms], sign[:n_terms], ls


@functools.lru_cache(maxsize=64)
def _frac_tables_stacked(alphas: tuple[float, ...], n_terms: int) -> tuple[np.ndarray, ...]:
    """(log|C|, sign C, log S) stacked per order, plus terms-major copies of the first two."""
    tabl = [_frac_tables(al, n_terms) for al in alphas]
    lc, sg, ls = (np.stack([t[k] for t in tabl]) for k in range(3))
    return lc, sg, ls, np.ascontiguousarray(lc.T), np.ascontiguousarray(sg.T)


# Asymptotic series of the Gaussian Mills ratio, used for log Phi(x) when x <= _NDTR_ASYMP:
# Phi(x) = phi(x)/|x| * sum_n (-1)^n (2n-1)!! / x^(2n); truncating after n = 7 leaves an error
# below the first omitted term, 15!!/x^16 < 5e-20 for |x| >= 40 (relative, alternating series).
_NDTR_ASYMP = -40.0
_MILLS = np.array([1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0])


def _log_ndtr_upper(x: np.ndarray) -> np.ndarray:
    """log Phi(x): 0 for x >= 10 (true value > -1e-23, so an overestimate), the asymptotic
    series for x <= -40 (relative error < 1e-19), scipy's ``log_ndtr`` in between."""
    out = np.zeros_like(x)
    mid = (x < _NDTR_ONE) & (x > _NDTR_ASYMP)
    if mid.any():
        out[mid] = special.log_ndtr(x[mid])
    low = x <= _NDTR_ASYMP
    if low.any():
        xl = x[low]
        r = 1.0 / (xl * xl)
        poly = np.polyval(_MILLS[::-1], r)
        out[low] = -0.5 * xl * xl - np.log(-xl) - 0.5 * math.log(2 * math.pi) + np.log(poly)
    return out


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
    error below the first omitted term ``10395 r^6`` (< 6e-16 for y >= 40)."""
    return 1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r))))


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
            big = np.exp(lc + (kk[act] - ref)[:, None])
            sg, zz = sigma[act, None], z0[act, None]
            u0 = sg / (i - zz)
            u1 = sg / (i + zz - a[act, None])
            t0 = big * (u0 * _mills(u0 * u0))
            t1 = big * (u1 * _mills(u1 * u1))
            tt = t0 + t1
            cm1 = np.cumsum(tt, axis=1) + np.expm1(pa - ref)[:, None]  # total/exp(ref) - 1, precise
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
        ls0 = lc + i * lqa + j * l1qa + (i * i - i) * sa + _log_ndtr_upper((z0a - i) / siga)
        ls1 = lc + j * lqa + i * l1qa + (j * j - j) * sa + _log_ndtr_upper((j - z0a) / siga)
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
#: against 60-digit quadrature (``tests/test_rdp_extremes.py``) it undercuts the true value by
#: at most 6e-16 where ``log A`` is 1e-6 and by a relative 1e-4 at ``log A`` = 1e-20 (there
#: the raw series can even be negative).  1e-14 covers that with a 15x margin.
_FRAC_ROUNDING = 1e-14


def _frac_rounding(alpha: np.ndarray) -> np.ndarray:
    """Absolute rounding allowance on the series' ``log A`` at order alpha.

    Besides the summation (:data:`_FRAC_ROUNDING`), every term carries the rounding of
    ``log|C(alpha, i)|``, i.e. of ``gammaln(alpha + 1)`` ~ alpha log alpha: about one ulp of that,
    which exceeds 1e-14 from alpha ~ 50 on (a review found q = 4.4e-7, sigma = 1e4, alpha = 5000.5
    undercut by 44% in RDP with the constant allowance alone).  16 ulps of it are added.
    """
    a = np.asarray(alpha, dtype=float)
    return _FRAC_ROUNDING + 16.0 * np.finfo(float).eps * np.abs(special.gammaln(a + 1.0))


def _frac_with_chord(
    la: np.ndarray,
    status: np.ndarray,
    alpha: np.ndarray,
    rows: np.ndarray,
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    log_s: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Tighten fractional-order ``log A`` by the chord between the neighbouring integer orders.

    ``log A_alpha = (alpha - 1) D_alpha = log int p^alpha q^(1-alpha)`` is convex in alpha
    (Hoelder's inequality) and 0 at alpha = 1, so for ``n < alpha < n + 1`` (n integer >= 1)
    ``log A_alpha <= (n + 1 - alpha) log A_n + (alpha - n) log A_(n+1)`` with ``log A_1 = 0``:
    a rigorous bound from the integer orders, which :func:`_log_a_int_precise` evaluates with
    full relative precision.  It is far tighter than dp-accounting's absolute-value series when
    the noise is large (q = 0.3, sigma = 1e4, alpha = 1.1: 4.5e-11 instead of 1.9e-3 in log A).

    The series is an upper bound only up to its rounding, which is absolute, so it enters as
    ``series + _FRAC_ROUNDING``; the smaller of that and the chord is returned.  Where A is
    within ~1e-14 of 1 the chord (relative precision) therefore decides -- the plain series
    would round such an RDP to 0.  Rows whose series did not converge (status != 0) get the
    chord where it is finite (status reset to 0).
    """
    n = np.floor(alpha)
    la_int: dict[int, np.ndarray] = {}
    for m in np.unique(np.concatenate([n, n + 1])).astype(int):
        sel = np.nonzero((n == m) | (n + 1 == m))[0]
        vals = np.zeros(rows.size)
        if m >= 2:
            vals[sel] = _log_a_int_precise(lq, l1q, s, log_s, rows[sel], int(m))
        la_int[int(m)] = vals
    lo = np.empty(rows.size)
    hi = np.empty(rows.size)
    for m, vals in la_int.items():
        lo = np.where(n == m, vals, lo)
        hi = np.where(n + 1 == m, vals, hi)
    with np.errstate(over="ignore", invalid="ignore"):
        chord = (n + 1 - alpha) * lo + (alpha - n) * hi
    chord = np.where(np.isfinite(chord), chord, np.inf)
    out = np.where(status == 0, np.minimum(la + _frac_rounding(alpha), chord), chord)
    fixed = np.isfinite(out)
    return np.where(fixed, out, la), np.where(fixed, 0, status)


def _cumsum0(x: np.ndarray) -> np.ndarray:
    """Running sum along axis 0 (few rows of long vectors: faster than ``np.cumsum``), in place."""
    for k in range(1, x.shape[0]):
        np.add(x[k - 1], x[k], out=x[k])
    return x


def _log_a_frac(
    lq: np.ndarray,
    l1q: np.ndarray,
    s: np.ndarray,
    sigma: np.ndarray,
    a: np.ndarray,
    tab_idx: np.ndarray,
    tabs: tuple[np.ndarray, ...],
) -> tuple[np.ndarray, np.ndarray]:
    """log A for fractional orders, one (step, order) pair per row.

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
    active = np.arange(nrows)
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
            ls0 = lc + base0[active] + ida + ii * sa + _log_ndtr_upper((z0a - i) / siga)
            ls1 = lc + base1[active] - ida + (j * j - j) * sa + _log_ndtr_upper((j - z0a) / siga)
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


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _as_step_arrays(sample_rate, noise_multiplier) -> tuple[np.ndarray, np.ndarray]:
    q = np.atleast_1d(np.asarray(sample_rate, dtype=float)).reshape(-1)
    sig = np.atleast_1d(np.asarray(noise_multiplier, dtype=float)).reshape(-1)
    validate.rate_array("--sample-rate", q)
    validate.positive_array("--noise-multiplier", sig)
    if q.size != sig.size:
        if q.size == 1:
            q = np.full(sig.size, q[0])
        elif sig.size == 1:
            sig = np.full(q.size, sig[0])
        else:
            raise InvalidParameter(
                "--sample-rate", f"per-step arrays differ in length ({q.size} rates vs {sig.size} noises)"
            )
    return q, sig


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
        ok = top - rest >= _INT_PRUNE
        z0 = sigma * sigma * (l1q - lq) + 0.5
        ok &= is_int | ((a - z0) / sigma >= _NDTR_ONE)
    return ok


def _evaluate(
    q: np.ndarray, sig: np.ndarray, orders: np.ndarray, weights: np.ndarray | None
) -> tuple[np.ndarray, dict[int, str]]:
    """RDP of steps ``(q_t, sigma_t)`` at each order.

    ``weights is None``: the ``(T, n)`` matrix (NaN where not evaluable).  Otherwise the
    weighted column sums ``sum_t w_t rdp[t]`` (NaN at orders with a non-evaluable entry).
    Also returns ``{order index: reason}`` for the first failure at each order.
    """
    t_len, n_ord = q.size, orders.size
    matrix = weights is None
    out = np.full((t_len, n_ord), np.nan) if matrix else None
    total = np.zeros(n_ord)
    w = np.ones(t_len) if weights is None else np.asarray(weights, dtype=float)
    reasons: dict[int, str] = {}
    with np.errstate(divide="ignore", over="ignore"):
        s = 0.5 / (sig * sig)
    log_s = _log_s(sig)

    def note(col: int, rows: np.ndarray, why: str) -> None:
        if col not in reasons and rows.size:
            r = rows[0]
            reasons[col] = f"{why} (q={q[r]:.6g}, noise multiplier={sig[r]:.6g})"

    def put(col: int, rows: np.ndarray, vals: np.ndarray) -> None:
        if matrix:
            out[rows, col] = vals
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                total[col] += float(np.dot(w[rows], np.maximum(vals, 0.0)))

    full = np.nonzero(q == 1.0)[0]
    if full.size:
        for col in range(n_ord):
            with np.errstate(over="ignore"):
                put(col, full, orders[col] * s[full])
    with np.errstate(divide="ignore"):
        lq_all = np.log(q)
        l1q_all = np.log1p(-q)
    is_int = orders == np.floor(orders)
    frac_cols = np.nonzero(~is_int)[0]
    n_terms = 0
    log_s0 = np.zeros(n_ord)
    tabs: tuple[np.ndarray, ...] = ()
    if frac_cols.size:
        n_terms = max(_FRAC_MAX_TERMS, int(2 * orders[frac_cols].max()) + 64)
        tabs = _frac_tables_stacked(tuple(float(orders[c]) for c in frac_cols), n_terms)
        log_s0[frac_cols] = tabs[2][:, 0]

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
            lo, hi = np.zeros(n_ord, dtype=np.int64), np.full(n_ord, m, dtype=np.int64)
            while np.any(lo < hi):
                act = lo < hi
                mid = (lo + hi) // 2
                r = rows[np.minimum(mid, m - 1)]
                ok = _top_ok(lq_g, l1q_g, s[r], sig[r], orders, is_int, log_s0) & act
                lo = np.where(ok, mid + 1, lo)
                hi = np.where(act & ~ok, mid, hi)
            prefix = lo
            ws = np.concatenate([[0.0], np.cumsum(w[rows])])
            wss = np.concatenate([[0.0], np.cumsum(w[rows] * s[rows])])
            for col in cols:
                p = int(prefix[col])
                a = orders[col]
                if p:
                    if matrix:
                        out[rows[:p], col] = a * lq_g / (a - 1.0) + a * s[rows[:p]]
                    else:
                        with np.errstate(over="ignore", invalid="ignore"):
                            total[col] += a * lq_g / (a - 1.0) * ws[p] + a * wss[p]
                if p < m:
                    slow[col].append(rows[p:])
        else:
            chunk = max(1, _CHUNK_ELEMS // n_ord)
            for a0 in range(0, rows.size, chunk):
                rr = rows[a0 : a0 + chunk]
                ok = _top_ok(
                    lq_g, l1q_g, s[rr, None], sig[rr, None], orders[None, :], is_int[None, :], log_s0[None, :]
                )
                for col in cols:
                    fr = rr[ok[:, col]]
                    a = orders[col]
                    if fr.size:
                        put(col, fr, a * lq_g / (a - 1.0) + a * s[fr])
                    if fr.size < rr.size:
                        slow[col].append(rr[~ok[:, col]])

    # Small integer orders: one dense pass over all their terms (few rows) ...
    int_cols = [int(c) for c in np.nonzero(is_int)[0] if slow[c] and orders[c] <= _DENSE_MAX_ORDER]
    big_cols = [int(c) for c in np.nonzero(is_int)[0] if slow[c] and orders[c] > _DENSE_MAX_ORDER]
    for col in big_cols:  # ... large ones: pruned blocks, per order, on their own slow rows
        rows = np.concatenate(slow[col])
        alpha = int(orders[col])
        put(col, rows, _log_a_int_precise(lq_all, l1q_all, s, log_s, rows, alpha) / (alpha - 1))
    if int_cols:
        alphas = tuple(int(orders[c]) for c in int_cols)
        union = np.unique(np.concatenate([np.concatenate(slow[c]) for c in int_cols]))
        if union.size <= _DENSE_MAX_ROWS and union.size * sum(al + 1 for al in alphas) <= _DENSE_BUDGET:
            la = _log_a_int_dense(lq_all[union], l1q_all[union], s[union], log_s[union], alphas)
            pos = {int(r): i for i, r in enumerate(union)} if union.size < 64 else None
            for j, col in enumerate(int_cols):
                rows = np.concatenate(slow[col])
                idx = np.searchsorted(union, rows) if pos is None else [pos[int(r)] for r in rows]
                put(col, rows, la[idx, j] / (alphas[j] - 1))
        else:
            for col, alpha in zip(int_cols, alphas, strict=True):
                rows = np.concatenate(slow[col])
                put(col, rows, _log_a_int_precise(lq_all, l1q_all, s, log_s, rows, alpha) / (alpha - 1))
    if frac_cols.size:
        pr = [np.concatenate(slow[c]) if slow[c] else np.zeros(0, dtype=np.int64) for c in frac_cols]
        r_idx = np.concatenate(pr)
        j_idx = np.repeat(np.arange(frac_cols.size), [x.size for x in pr])
        per = 1 << 16
        for a0 in range(0, r_idx.size, per):
            rr, jj = r_idx[a0 : a0 + per], j_idx[a0 : a0 + per]
            alpha = orders[frac_cols][jj]
            la, st = _log_a_frac(lq_all[rr], l1q_all[rr], s[rr], sig[rr], alpha, jj, tabs)
            la, st = _frac_with_chord(la, st, alpha, rr, lq_all, l1q_all, s, log_s)
            vals = la / (alpha - 1.0)
            for j in np.unique(jj):
                sel = jj == j
                put(int(frac_cols[j]), rr[sel], vals[sel])
            for code, why in (
                (2, f"fractional-order series did not converge within {n_terms} terms"),
                (3, "overflow in the fractional-order series"),
            ):
                bad = st == code
                for j in np.unique(jj[bad]):
                    note(int(frac_cols[j]), rr[bad & (jj == j)], why)

    if matrix:
        # RDP is a Renyi divergence, hence >= 0; tiny negative values are log-space rounding.
        with np.errstate(invalid="ignore"):
            out = np.where(out < 0, 0.0, out)
        for col in np.nonzero(~np.isfinite(out).all(axis=0))[0]:
            rows = np.nonzero(~np.isfinite(out[:, col]))[0]
            note(int(col), rows, "overflow: RDP not representable in double precision")
        out[~np.isfinite(out)] = np.nan
        return out, reasons
    for col in np.nonzero(~np.isfinite(total))[0]:
        if int(col) not in reasons:
            reasons[int(col)] = "overflow: composed RDP not representable in double precision"
    total[~np.isfinite(total)] = np.nan
    return total, reasons


# --------------------------------------------------------------------------------------------
# Long schedules: sigma grid with sound upper bounds (see the module docstring)
# --------------------------------------------------------------------------------------------

#: Values of the ``evaluation`` keyword of :func:`subsampled_gaussian_rdp`.
EVALUATIONS = ("auto", "exact", "grid")
#: ``evaluation="auto"`` bounds a sample rate's steps from the sigma grid beyond this many
#: distinct steps whenever the grid is smaller than the steps (as before the cost rule below).
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
_GRID_MIN_RATIO = 1.0 + 1e-6


def _lattice_point(index: int, level: int, h: float) -> float:
    """``exp(index * h / 2**level)`` with (index, level) reduced first, so that a point reached
    at different refinement levels is the same float (the grid-value cache relies on it)."""
    while level > 0 and index % 2 == 0:
        index //= 2
        level -= 1
    return math.exp(index * (h / 2.0**level))


def _lattice(lo: float, hi: float, h: float, level: int = 0) -> list[float]:
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


def _sigma_grid(lo: float, hi: float, ratio: float) -> np.ndarray:
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
    pts = [x for x in _lattice(lo, hi, h) if lo < x < hi]
    return np.unique(np.array([lo, hi] + pts))


# Exact grid values by (q, orders): {sigma: row}; the grid's anchored points recur across calls.
_GRID_CACHE: dict[tuple[float, bytes], tuple[dict[float, np.ndarray], dict[int, str]]] = {}
_GRID_CACHE_ROWS = 20_000


def _grid_values(qg: float, new_g: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Exact per-step RDP at the grid points ``new_g`` (rows) for rate ``qg``, through a cache.

    The values are those of :func:`_evaluate`; evaluated in a different batch of noise values they
    can differ in the last bit (~1e-16 relative, either way), which calibration's 1e-12 margin
    below the target absorbs (:mod:`accounting.calibration`).
    The cache keeps at most ``_GRID_CACHE_ROWS`` rows in all (cleared when full)."""
    key = (float(qg), orders.tobytes())
    rows, reasons = _GRID_CACHE.get(key, ({}, {}))
    miss = np.array([g for g in new_g.tolist() if g not in rows], dtype=float)
    if miss.size:
        mat, why = _evaluate(np.full(miss.size, qg), miss, orders, None)
        if sum(len(r) for r, _ in _GRID_CACHE.values()) + miss.size > _GRID_CACHE_ROWS:
            _GRID_CACHE.clear()
        rows, reasons = _GRID_CACHE.setdefault(key, (rows, reasons))
        rows.update(zip(miss.tolist(), mat, strict=True))
        for col, r in why.items():
            reasons.setdefault(col, r)
    out = np.array([rows[g] for g in new_g.tolist()]).reshape(new_g.size, orders.size)
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
        return _sigma_grid(lo, hi, ratio).size < n_rows
    if n_rows < AUTO_GRID_MIN_ROWS:
        return False
    g0 = _sigma_grid(lo, hi, ratio).size
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
    big_s = 0.5 / (g * g)
    if m >= 2:
        i = np.minimum(jf, m - 2)
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
    module docstring); ``reasons`` maps dropped order indices to why.  Integer orders: chord in
    ``s = 1/(2 sigma^2)`` (log A is convex in s).  Fractional orders: each sigma rounded *down*
    to the grid (RDP is non-increasing in sigma).  The grid starts geometric (ratio ``ratio``)
    and is refined once (``_GRID_PASSES - 1`` times) where the estimated excess is largest,
    aiming at a summed relative excess per order of about ``tol`` (at most a quarter as many
    points as steps): any grid gives sound bounds, refinement only buys tightness.
    """
    n_ord = orders.size
    is_int = orders == np.floor(orders)
    g = _sigma_grid(float(sig.min()), float(sig.max()), ratio)
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
        pieces = np.minimum(pieces, np.floor(np.log(g[1:] / g[:-1]) / math.log(_GRID_MIN_RATIO)))
        split = np.nonzero(pieces >= 2)[0]
        if not split.size:
            break
        # new points on the anchored lattice of the next power-of-2 resolution (cacheable)
        h = math.log(ratio)
        extra: list[float] = []
        for j in split.tolist():
            level = max(0, round(math.log2(pieces[j] * h / math.log(g[j + 1] / g[j]))))
            extra.extend(x for x in _lattice(g[j], g[j + 1], h, level) if g[j] < x < g[j + 1])
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


def _grid_total(
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
    for qg in np.unique(q[grid_ok]):
        rows = np.nonzero(grid_ok & (q == qg))[0]
        lo, hi = float(sig[rows].min()), float(sig[rows].max())
        if not force and not _grid_pays(rows.size, lo, hi, ratio):
            exact[rows] = True
            continue
        tot, gp, why = _grid_group(float(qg), sig[rows], w[rows], orders, ratio, tol)
        used = True
        total += tot
        gap += gp
        for col, r in why.items():
            reasons.setdefault(col, r)
    if exact.any():
        tot, why = _evaluate(q[exact], sig[exact], orders, w[exact])
        total += tot
        for col, r in why.items():
            reasons.setdefault(col, r)
    if not used:
        return total, reasons, ()
    _alpha_chord(orders, total, gap)
    bounded = tuple(
        (float(orders[c]), float(gap[c])) for c in range(n_ord) if np.isfinite(total[c]) and c not in reasons
    )
    return total, reasons, bounded


#: Coarse mode (:func:`coarse_bounds`): settings while active, else None.
_COARSE: dict | None = None
#: Schedules with fewer distinct steps are evaluated as usual even in coarse mode.
_COARSE_MIN_ROWS = 64


@contextlib.contextmanager
def coarse_bounds(ratio: float = 1.25) -> Iterator[dict]:
    """Within the block, :func:`subsampled_gaussian_rdp` bounds every schedule of at least
    ``_COARSE_MIN_ROWS`` distinct steps from a coarse sigma grid (neighbours ``ratio`` apart, no
    refinement), unless ``evaluation="exact"`` is asked for.  The values are sound upper bounds
    (the grid bound holds for any grid), only looser; they are meant for bracketing a
    calibration cheaply.  Yields a dict whose ``"used"`` entry says whether any call was
    coarsened (if not, the block computed exactly what it would have outside)."""
    global _COARSE
    saved, state = _COARSE, {"ratio": float(ratio), "used": False}
    _COARSE = state
    try:
        yield state
    finally:
        _COARSE = saved


def subsampled_gaussian_rdp_steps(
    sample_rate: float | np.ndarray, noise_multiplier: float | np.ndarray, orders: np.ndarray
) -> np.ndarray:
    """Per-step RDP, shape ``(T, n_orders)``; NaN marks an entry that could not be evaluated.

    ``sample_rate`` and ``noise_multiplier`` are scalars or arrays of shape ``(T,)``.
    Identical steps are evaluated once.
    """
    o = _check_orders(orders)
    q, sig = _as_step_arrays(sample_rate, noise_multiplier)
    pairs = np.stack([q, sig], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    vals, _ = _evaluate(uniq[:, 0], uniq[:, 1], o, None)
    return vals[inverse.reshape(-1)]


def subsampled_gaussian_rdp(
    sample_rate: float | np.ndarray,
    noise_multiplier: float | np.ndarray,
    orders: np.ndarray,
    *,
    steps: int = 1,
    counts: np.ndarray | None = None,
    evaluation: str = "auto",
    grid_ratio: float = GRID_RATIO,
    grid_tol: float = GRID_TOL,
) -> RdpCurve:
    """RDP curve of the composition of Poisson-subsampled Gaussian steps.

    Scalars with ``steps=T`` describe T identical steps; arrays of shape ``(T,)`` describe one
    step each (then ``steps`` must be 1 or T).  ``q == 1`` is the plain Gaussian mechanism,
    ``alpha / (2 sigma^2)``.  Orders that cannot be evaluated are in ``.dropped``.

    ``counts`` (same shape as the arrays) repeats entry i ``counts[i]`` times: a long schedule in
    O(distinct values) memory (:func:`accounting.schedules.schedule_blocks`).

    ``evaluation``: ``"exact"`` evaluates every distinct step; ``"grid"`` bounds the steps of
    each sample rate from exact values on a geometric sigma grid (neighbours ``grid_ratio``
    apart) -- sound upper bounds, listed in ``.bounded``; ``"auto"`` (default) is exact below
    :data:`AUTO_GRID_MIN_ROWS` distinct (q, sigma) pairs and otherwise, per sample rate, takes
    the grid where its estimated cost is lower (:func:`_grid_pays`).
    """
    if evaluation not in EVALUATIONS:
        raise InvalidParameter("evaluation", f"must be one of {', '.join(EVALUATIONS)} (got {evaluation!r})")
    ratio = validate.positive("grid_ratio", grid_ratio)
    tol = float(grid_tol)
    if not tol > 0:  # inf allowed: no refinement
        raise InvalidParameter("grid_tol", f"must be > 0 (got {grid_tol!r})")
    if not ratio >= _GRID_MIN_RATIO:
        raise InvalidParameter("grid_ratio", f"must be >= {_GRID_MIN_RATIO!r} (got {grid_ratio!r})")
    o = _check_orders(orders)
    q, sig = _as_step_arrays(sample_rate, noise_multiplier)
    steps = validate.positive_int("--steps", steps)
    repeat = steps
    if q.size > 1:
        if steps not in (1, q.size):
            raise InvalidParameter(
                "--steps", f"per-step arrays have {q.size} entries but steps={steps} (use 1 or {q.size})"
            )
        repeat = 1
    pairs = np.stack([q, sig], axis=1)
    if counts is None:
        uniq, n_each = np.unique(pairs, axis=0, return_counts=True)
        weights = n_each.astype(float) * repeat
    else:
        c = np.asarray(counts, dtype=float).reshape(-1)
        if c.size != q.size or not np.all(np.isfinite(c)) or np.any(c < 1) or np.any(c != np.floor(c)):
            raise InvalidParameter("--steps", "counts must be integers >= 1, one per step entry")
        uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
        weights = np.bincount(inverse.reshape(-1), weights=c, minlength=uniq.shape[0]) * repeat
    bounded: tuple[tuple[float, float], ...] = ()
    if _COARSE is not None and evaluation != "exact" and uniq.shape[0] >= _COARSE_MIN_ROWS:
        _COARSE["used"] = True
        evaluation, ratio, tol = "grid", max(ratio, _COARSE["ratio"]), math.inf
    if evaluation == "grid" or (
        evaluation == "auto" and uniq.shape[0] >= min(AUTO_GRID_MIN_ROWS, AUTO_GRID_THRESHOLD + 1)
    ):
        total, reasons, bounded = _grid_total(
            uniq[:, 0], uniq[:, 1], weights, o, ratio, tol, evaluation == "grid"
        )
    else:
        total, reasons = _evaluate(uniq[:, 0], uniq[:, 1], o, weights)
    dropped = tuple((float(o[c]), why) for c, why in reasons.items())
    return RdpCurve(o, np.where(np.isfinite(total), total, np.inf), dropped, bounded)
