"""Renyi DP of the Gaussian and the Poisson-subsampled Gaussian mechanism (add/remove adjacency).

Conventions follow dp-accounting's ``RdpAccountant`` (Mironov, Talwar, Zhang 2019, arXiv:1908.10530):
for sampling rate ``q`` and noise multiplier ``sigma`` the RDP at order ``alpha`` is
``log(A_alpha) / (alpha - 1)``, integer orders from the binomial sum, fractional ones from the
two-series formula with every term in absolute value (an upper bound, as dp-accounting computes it).

Why a module of its own rather than dp-accounting's: the same values, vectorised over steps and
orders, so that a schedule of ``T`` distinct ``(q_k, sigma_k)`` costs a handful of array
operations per order, and every value is an upper bound to the last ulp (which a certified
epsilon needs).  Per (step, order) the cheapest exact route is taken (dominant term, dense or
pruned integer sums, blocked fractional series); near ``A = 1`` the RDP comes from ``A - 1`` so
that huge noise never rounds it to 0.  An order that cannot be evaluated is listed in
:attr:`RdpCurve.dropped` with ``rdp = inf``.

Long schedules (``evaluation="grid"``, or ``"auto"`` where the grid pays, see
:mod:`accounting.sigma_grid`) are bounded from exact values on a sigma grid: chords of ``log A``
(convex in ``1/(2 sigma^2)``) at integer orders, sigma rounded down (RDP is non-increasing in
sigma) and the alpha-chord at fractional ones; such orders are listed in :attr:`RdpCurve.bounded`.
:func:`subsampled_gaussian_rdp_steps` is always exact.

This module is the facade: the evaluation lives in ``_log_a_int``, ``_log_a_frac``,
``_rdp_evaluate`` and ``sigma_grid``.  Derivations, truncation bounds and measured gaps:
``docs/rdp-numerics.md``.
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

# A module-global that a test rebinds must be rebound in its home module (rebinding it here would
# not reach the code that reads it), so the tunables are not re-exported; the public AUTO_GRID_*
# above are read from :mod:`accounting.sigma_grid` at call time.
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
    sig = validate.positive_array("--noise-multiplier", noise_multiplier)
    with np.errstate(over="ignore", divide="ignore"):  # z^2 underflows to 0 below ~1e-162: RDP inf
        if sig.ndim == 0:
            z = float(sig)
            # float ** 2 raises OverflowError above ~1.3e154 where the product gives +inf (RDP 0,
            # which no float epsilon can tell from the true ~1e-308); below 1e150 the same bits as ever
            return o / (2.0 * (z**2 if z < 1e150 else z * z)) * _UP4
        return o[None, :] / (2.0 * sig.reshape(-1, 1) ** 2) * _UP4


def _as_step_arrays(sample_rate, noise_multiplier) -> tuple[np.ndarray, np.ndarray]:
    # checked as given, before any float conversion (a Decimal just above 1 is the float 1.0)
    q = np.atleast_1d(validate.rate_array("--sample-rate", sample_rate)).reshape(-1)
    sig = np.atleast_1d(validate.positive_array("--noise-multiplier", noise_multiplier)).reshape(-1)
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
    uniq, inverse, _ = _unique_steps(q, sig)
    vals, _ = evaluate_steps(uniq[:, 0], uniq[:, 1], o, None)
    return vals[inverse]


def _unique_steps(q: np.ndarray, sig: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(np.stack([q, sig], axis=1), axis=0, return_inverse=True, return_counts=True)``:
    the distinct ``(q, sigma)`` rows in lexicographic order, each step's row and each row's count.

    With one sample rate (the usual schedule) a 1-d unique of sigma gives the same rows in the
    same order, ~30x faster than the row-wise unique (which sorts a structured view)."""
    if q.size and np.all(q == q[0]):
        us, inverse, counts = np.unique(sig, return_inverse=True, return_counts=True)
        return np.stack([np.full(us.size, q[0]), us], axis=1), inverse.reshape(-1), counts
    uniq, inverse, counts = np.unique(
        np.stack([q, sig], axis=1), axis=0, return_inverse=True, return_counts=True
    )
    return uniq, inverse.reshape(-1), counts


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
    uniq, inverse, n_each = _unique_steps(q, sig)
    if counts is None:
        return uniq, n_each.astype(float) * repeat
    c = np.asarray(counts, dtype=float).reshape(-1)
    if c.size != q.size or not np.all(np.isfinite(c)) or np.any(c < 1) or np.any(c != np.floor(c)):
        raise InvalidParameter("--steps", "counts must be integers >= 1, one per step entry")
    return uniq, np.bincount(inverse, weights=c, minlength=uniq.shape[0]) * repeat


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
    int_cache: dict[int, np.ndarray] = {}  # integer orders' per-step log A, shared by the calls

    def evaluate(orders: np.ndarray) -> RdpCurve:
        o = orders_array(orders)
        total, reasons = evaluate_steps(q, sig, o, weights, int_cache)
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
