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
   (:func:`log_a_int_dense`); large orders use pruned blocks (:func:`_log_a_int`);
3. fractional orders: dp-accounting's series in growing blocks (:func:`_log_a_frac`), with a
   special-function-free kernel in the far tail (:func:`_frac_far_tail`).

Precision near A = 1 (huge noise, tiny q): ``A - 1`` is O(q^2 / sigma^2), below double
precision relative to A, so a plain sum rounds the RDP to 0 -- for any number of steps, which
would be unsound.  Integer orders whose plain ``log A`` is below :data:`_PRECISE_BELOW` are
recomputed from ``A - 1 = sum_k C(alpha,k) q^k (1-q)^(alpha-k) expm1((k^2-k) s)`` (nonnegative
terms, full relative precision; :func:`_log_a_int`), and fractional orders are capped by the
chord of ``log A`` between the neighbouring integer orders (:func:`frac_with_chord`), their
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
import contextvars
import math
from collections.abc import Callable, Iterator

import numpy as np

from accounting import sigma_grid as _grid
from accounting import validate
from accounting._rdp_evaluate import evaluate_steps
from accounting.errors import InvalidParameter
from accounting.rdp_curve import RdpCurve
from accounting.rounding import up
from accounting.sigma_grid import AUTO_GRID_MIN_ROWS as AUTO_GRID_MIN_ROWS
from accounting.sigma_grid import AUTO_GRID_THRESHOLD as AUTO_GRID_THRESHOLD
from accounting.sigma_grid import EVALUATIONS, GRID_MIN_RATIO, GRID_RATIO, GRID_TOL, grid_total

# The implementation lives in: rdp_curve (RdpCurve), _log_a_int / _log_a_frac (integer- and
# fractional-order log A), _rdp_evaluate (per-step evaluation) and sigma_grid (long schedules).
# The private names imported above ``as`` themselves are re-exported for the modules and tests
# that reach them through here.  A module-global that is *rebound* (monkeypatched) must be
# rebound in its home module -- rebinding it here would not reach the code that reads it -- so
# the tunable private constants are deliberately not re-exported (a stale
# ``monkeypatch.setattr(rdp, ...)`` then fails loudly); the public AUTO_GRID_* above are read
# from :mod:`accounting.sigma_grid` at call time.
__all__ = [
    "AUTO_GRID_MIN_ROWS",
    "AUTO_GRID_THRESHOLD",
    "EVALUATIONS",
    "GRID_RATIO",
    "GRID_TOL",
    "RdpCurve",
    "coarse_bounds",
    "coarse_settings",
    "exact_rdp_function",
    "gaussian_rdp",
    "subsampled_gaussian_rdp",
    "subsampled_gaussian_rdp_steps",
]


def orders_array(orders: np.ndarray | list[float] | float) -> np.ndarray:
    """``orders`` as a 1-D float array, each finite and > 1 (else InvalidParameter, ``--orders``)."""
    o = np.atleast_1d(np.asarray(orders, dtype=float))
    if o.ndim != 1 or o.size == 0:
        raise InvalidParameter("--orders", "must be a non-empty 1-D list of orders")
    if np.any(~np.isfinite(o)) or np.any(o <= 1):
        raise InvalidParameter("--orders", "orders must be finite and > 1")
    return o


_UP4 = up(4)


def gaussian_rdp(noise_multiplier: float | np.ndarray, orders: np.ndarray) -> np.ndarray:
    """RDP ``alpha / (2 sigma^2)`` of the Gaussian mechanism (sensitivity 1, noise std sigma).

    Scalar ``noise_multiplier`` gives shape ``(n_orders,)``; an array of shape ``(T,)`` gives
    ``(T, n_orders)``.  Scaled up by 4 ulps: the square, product and division each round (without
    the pad, half of random cases come out up to 1.9e-16 relative below the exact value).
    """
    o = orders_array(orders)
    sig = np.asarray(noise_multiplier, dtype=float)
    validate.positive_array("--noise-multiplier", sig)
    with np.errstate(over="ignore"):
        if sig.ndim == 0:
            return o / (2.0 * float(sig) ** 2) * _UP4
        return o[None, :] / (2.0 * sig.reshape(-1, 1) ** 2) * _UP4


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


#: Coarse mode (:func:`coarse_bounds`): its settings inside the block, else None.  A context
#: variable, not a module global: each thread (and asyncio task) sees only its own blocks, so a
#: calibration bracketing itself in one thread never coarsens another thread's numbers.
_COARSE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("accounting_rdp_coarse", default=None)
#: Schedules with fewer distinct steps are evaluated as usual even in coarse mode.
_COARSE_MIN_ROWS = 64


def coarse_settings() -> dict | None:
    """The settings dict of the innermost :func:`coarse_bounds` block active in the calling thread
    or task (``"ratio"``, and ``"used"``, which a coarsening evaluation sets), or None."""
    return _COARSE.get()


@contextlib.contextmanager
def coarse_bounds(ratio: float = 1.25) -> Iterator[dict]:
    """Within the block, :func:`subsampled_gaussian_rdp` bounds every schedule of at least
    ``_COARSE_MIN_ROWS`` distinct steps from a coarse sigma grid (neighbours ``ratio`` apart, no
    refinement), unless ``evaluation="exact"`` is asked for.  The values are sound upper bounds
    (the grid bound holds for any grid), only looser; they are meant for bracketing a
    calibration cheaply.  Yields a dict whose ``"used"`` entry says whether any call was
    coarsened (if not, the block computed exactly what it would have outside).

    The mode is scoped to the calling thread or asyncio task (a context variable): other threads
    keep exact evaluations while the block runs."""
    token = _COARSE.set({"ratio": float(ratio), "used": False})
    try:
        yield _COARSE.get()
    finally:
        _COARSE.reset(token)


def subsampled_gaussian_rdp_steps(
    sample_rate: float | np.ndarray, noise_multiplier: float | np.ndarray, orders: np.ndarray
) -> np.ndarray:
    """Per-step RDP, shape ``(T, n_orders)``; NaN marks an entry that could not be evaluated.

    ``sample_rate`` and ``noise_multiplier`` are scalars or arrays of shape ``(T,)``.
    Identical steps are evaluated once.
    """
    o = orders_array(orders)
    q, sig = _as_step_arrays(sample_rate, noise_multiplier)
    pairs = np.stack([q, sig], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    vals, _ = evaluate_steps(uniq[:, 0], uniq[:, 1], o, None)
    return vals[inverse.reshape(-1)]


def _distinct_steps(
    sample_rate: float | np.ndarray,
    noise_multiplier: float | np.ndarray,
    steps: int,
    counts: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(q, sigma)`` rows and how many steps each stands for (validated)."""
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
        return uniq, n_each.astype(float) * repeat
    c = np.asarray(counts, dtype=float).reshape(-1)
    if c.size != q.size or not np.all(np.isfinite(c)) or np.any(c < 1) or np.any(c != np.floor(c)):
        raise InvalidParameter("--steps", "counts must be integers >= 1, one per step entry")
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    return uniq, np.bincount(inverse.reshape(-1), weights=c, minlength=uniq.shape[0]) * repeat


def exact_rdp_function(
    sample_rate: float | np.ndarray,
    noise_multiplier: float | np.ndarray,
    *,
    steps: int = 1,
    counts: np.ndarray | None = None,
) -> Callable[[np.ndarray], RdpCurve] | None:
    """``orders -> subsampled_gaussian_rdp(sample_rate, noise_multiplier, orders, steps=steps,
    counts=counts)`` (``evaluation="auto"``) with the steps validated and grouped once, for
    callers that evaluate the same composition at several order subsets
    (:mod:`accounting.order_screen`).  ``None`` where that call would not evaluate every step
    exactly (sigma grid, coarse mode): use :func:`subsampled_gaussian_rdp` there."""
    uniq, weights = _distinct_steps(sample_rate, noise_multiplier, steps, counts)
    n = uniq.shape[0]
    if (_COARSE.get() is not None and n >= _COARSE_MIN_ROWS) or n >= min(
        _grid.AUTO_GRID_MIN_ROWS, _grid.AUTO_GRID_THRESHOLD + 1
    ):
        return None
    q, sig = np.ascontiguousarray(uniq[:, 0]), np.ascontiguousarray(uniq[:, 1])

    def evaluate(orders: np.ndarray) -> RdpCurve:
        o = orders_array(orders)
        total, reasons = evaluate_steps(q, sig, o, weights)
        dropped = tuple((float(o[c]), why) for c, why in reasons.items())
        return RdpCurve(o, np.where(np.isfinite(total), total, np.inf), dropped)

    return evaluate


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
    if not ratio >= GRID_MIN_RATIO:
        raise InvalidParameter("grid_ratio", f"must be >= {GRID_MIN_RATIO!r} (got {grid_ratio!r})")
    o = orders_array(orders)
    uniq, weights = _distinct_steps(sample_rate, noise_multiplier, steps, counts)
    bounded: tuple[tuple[float, float], ...] = ()
    coarse = _COARSE.get()
    if coarse is not None and evaluation != "exact" and uniq.shape[0] >= _COARSE_MIN_ROWS:
        coarse["used"] = True
        evaluation, ratio, tol = "grid", max(ratio, coarse["ratio"]), math.inf
    if evaluation == "grid" or (
        evaluation == "auto" and uniq.shape[0] >= min(_grid.AUTO_GRID_MIN_ROWS, _grid.AUTO_GRID_THRESHOLD + 1)
    ):
        total, reasons, bounded = grid_total(
            uniq[:, 0], uniq[:, 1], weights, o, ratio, tol, evaluation == "grid"
        )
    else:
        total, reasons = evaluate_steps(uniq[:, 0], uniq[:, 1], o, weights)
    dropped = tuple((float(o[c]), why) for c, why in reasons.items())
    return RdpCurve(o, np.where(np.isfinite(total), total, np.inf), dropped, bounded)
