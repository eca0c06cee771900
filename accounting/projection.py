"""Sensitivity of a randomly projected gradient (D2P2-SGD, Jiang et al., Alg. 1 line 6).

D2P2-SGD releases ``y_k = (1/sqrt(p)) A_k^T g_k + eps_k`` (then ``x_{k+1} = x_k - alpha A_k y_k``,
post-processing of ``(A_k, y_k)``), where ``A_k`` is d x p with i.i.d. ``N(0, sigma_A^2)`` entries
(``sigma_A = 1`` in the algorithm, Lemma 2 and Table 6 "Sampling variance 1"; the analysis keeps
``sigma_A`` general) and ``g_k`` is the average of per-example normalised gradients of norm < 1.
One example changes the summed gradient by a vector ``u`` with ``||u|| < 1``, hence the summed
projected gradient by ``(1/sqrt(p)) A_k^T u``. Its norm, in units of the unprojected
sensitivity, is the *sensitivity factor* ``s`` this module bounds. The certified accountant
then treats the step as a subsampled Gaussian with multiplier ``z_k / s``.

Two cases (``--projection``):

fixed
    One public matrix ``A`` for all steps. Exact factor ``s = sigma_max(A) / sqrt(p)`` when the
    matrix (or its top singular value) is known (:func:`fixed_matrix_factor`). For a Gaussian
    matrix drawn once, Davidson-Szarek / Vershynin (2012, Cor. 5.35 and the Gaussian
    concentration of the 1-Lipschitz map A -> sigma_max(A) around E sigma_max <= sqrt(d)+sqrt(p))
    give ``sigma_max(A) <= sigma_A (sqrt(d) + sqrt(p) + t)`` with probability >= 1 - exp(-t^2/2)
    (:func:`fixed_gaussian_factor`). The worst example's gradient can be aligned with A's top
    singular vector, so no better factor holds for all datasets.

fresh (the algorithm's own choice: "A_k is regenerated per iteration")
    ``A_k`` is independent of ``u`` (u depends on x_k, i.e. on the past only), so
    ``A_k^T u / sigma_A ~ N(0, ||u||^2 I_p)`` and ``||A_k^T u||^2 / (sigma_A^2 ||u||^2) ~ chi^2_p``.
    Laurent & Massart (2000, Lemma 1): ``P(chi^2_p >= p + 2 sqrt(p x) + 2 x) <= exp(-x)``, hence
    ``s = sigma_A sqrt(1 + 2 sqrt(x/p) + 2x/p)`` fails with probability <= exp(-x) per step,
    <= T exp(-x) over T steps (union bound) (:func:`fresh_gaussian_factor`).

How a failure probability beta enters delta (:func:`failure_delta`). Let M be the mechanism
and M~ the same mechanism in which the differing example's projected contribution is
rescaled to norm <= s/B whenever it exceeds it. M~(D) = M(D) on the dataset without the
example, M~ is an adaptive composition of subsampled Gaussians with sensitivity s and so is
(eps, delta_rdp)-DP, and ``P(M~(D') != M(D')) <= beta`` (beta = T exp(-x) for fresh, the matrix
failure probability for fixed). Then
``P[M(D) in S] <= e^eps (P[M(D') in S] + beta) + delta_rdp`` and
``P[M(D') in S] <= e^eps P[M(D) in S] + delta_rdp + beta``: M is
``(eps, delta_rdp + e^eps beta)``-DP. The extra ``e^eps`` factor is easy to forget; we keep it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter

#: Share of the user's delta reserved for the failure of the high-probability bound.
FAILURE_SHARE = 0.1


def fixed_matrix_factor(matrix: np.ndarray | None = None, *, sigma_max: float | None = None, p: int) -> float:
    """Exact factor ``sigma_max(A)/sqrt(p)`` of a known public d x p matrix (scaled as used)."""
    p = validate.positive_int("--projection-dim", p)
    if sigma_max is None:
        if matrix is None:
            raise InvalidParameter("--projection-sigma-max", "give the matrix or its largest singular value")
        a = np.asarray(matrix, dtype=float)
        if a.ndim != 2 or a.shape[1] != p:
            raise InvalidParameter("--projection-dim", f"matrix must be d x p with p = {p} (got {a.shape})")
        sigma_max = float(np.linalg.norm(a, 2))
    sigma_max = validate.positive("--projection-sigma-max", sigma_max)
    return sigma_max / math.sqrt(p)


def fixed_gaussian_factor(d: int, p: int, failure: float, *, sigma_a: float = 1.0) -> float:
    """``sigma_A (sqrt(d) + sqrt(p) + t) / sqrt(p)`` with ``exp(-t^2/2) = failure``."""
    d = validate.positive_int("--model-dim", d)
    p = validate.positive_int("--projection-dim", p)
    failure = validate.open_unit("--delta", failure)
    t = math.sqrt(2.0 * math.log(1.0 / failure))
    return sigma_a * (math.sqrt(d) + math.sqrt(p) + t) / math.sqrt(p)


def fresh_gaussian_factor(p: int, failure_per_step: float, *, sigma_a: float = 1.0) -> float:
    """``sigma_A sqrt(1 + 2 sqrt(x/p) + 2x/p)`` with ``exp(-x) = failure_per_step`` (Laurent-Massart)."""
    if not (0 < failure_per_step < 1):
        raise InvalidParameter("--delta", f"failure probability must be in (0, 1) (got {failure_per_step!r})")
    return _fresh_factor_x(validate.positive_int("--projection-dim", p), -math.log(failure_per_step), sigma_a)


def _fresh_factor_x(p: int, x: float, sigma_a: float) -> float:
    """Fresh-projection factor at ``x = log(1/failure_per_step)`` (no underflow for tiny failures)."""
    return sigma_a * math.sqrt(1.0 + 2.0 * math.sqrt(x / p) + 2.0 * x / p)


def _fixed_factor_x(d: int, p: int, x: float, sigma_a: float) -> float:
    """Fixed-Gaussian factor at ``x = log(1/failure)``: ``t = sqrt(2 x)``."""
    return sigma_a * (math.sqrt(d) + math.sqrt(p) + math.sqrt(2.0 * x)) / math.sqrt(p)


def layerwise_fresh_factor_x(
    layers: list[tuple[int, float]] | tuple[tuple[int, float], ...], x: float
) -> float:
    """Sensitivity factor of a *per-layer* fresh Gaussian projection, failing w.p. <= exp(-x) per step.

    ``layers`` lists ``(p_l, sigma_l)``: tensor l is projected by its own d_l x p_l matrix with i.i.d.
    ``N(0, sigma_l^2)`` entries and scaled by ``1/sqrt(p_l)`` (dptheory.optim.d2p2, "per layer"). An
    example's summed-gradient change u (||u|| <= 1, independent of the fresh matrices) splits into
    blocks u_l with weights ``w_l = ||u_l||^2`` summing to <= 1, and the projected change has squared
    norm ``S^2 = sum_l (w_l sigma_l^2 / p_l) chi^2_{p_l}``: a weighted sum of independent squared
    standard normals with weights ``a_j = w_l sigma_l^2 / p_l``. Laurent & Massart (2000, Lemma 1):
    ``P(S^2 >= sum a + 2 ||a||_2 sqrt(x) + 2 ||a||_inf x) <= exp(-x)``, and for every admissible w,
    ``sum a <= max sigma_l^2``, ``||a||_2 <= max sigma_l^2 / sqrt(p_l)`` and
    ``||a||_inf <= max sigma_l^2 / p_l``,
    so the factor below holds for every u at once. One layer with p_l = p and sigma_l = sigma_A gives
    :func:`fresh_gaussian_factor`'s ``sigma_A sqrt(1 + 2 sqrt(x/p) + 2x/p)``.
    """
    if not layers:
        raise InvalidParameter("--projection-dim", "needs at least one projected layer")
    s2 = [(float(s) ** 2, validate.positive_int("--projection-dim", p)) for p, s in layers]
    mean = max(v for v, _ in s2)
    l2 = max(v / math.sqrt(p) for v, p in s2)
    linf = max(v / p for v, p in s2)
    return math.sqrt(mean + 2.0 * l2 * math.sqrt(x) + 2.0 * linf * x)


def failure_delta(epsilon: float, beta: float) -> float:
    """Delta added by a bound that fails with probability beta: ``e^eps beta`` (module docstring)."""
    if epsilon > 700:
        return math.inf
    return math.exp(epsilon) * beta


@dataclass(frozen=True)
class ProjectedEpsilon:
    """Result of :func:`epsilon_with_failure`."""

    epsilon: float
    factor: float
    beta: float
    delta_rdp: float
    delta_failure: float
    order: float | None
    iterations: int
    valid: bool = True


def epsilon_with_failure(
    eps_of: Callable[[float, float], tuple[float, float | None]],
    *,
    delta: float,
    projection: str,
    d: int,
    p: int,
    steps: int,
    sigma_a: float = 1.0,
    failure_share: float = FAILURE_SHARE,
    max_iter: int = 60,
    factor_fn: Callable[[float], float] | None = None,
) -> ProjectedEpsilon:
    """Certified epsilon at total ``delta`` when the factor holds only with high probability.

    ``eps_of(factor, delta_rdp) -> (eps, order)`` is the accountant of the mechanism with
    multipliers divided by ``factor``. We reserve ``delta_fail = failure_share * delta`` and need
    ``e^eps beta <= delta_fail``; since beta is chosen before eps is known we iterate:
    guess eps0, set ``beta = delta_fail e^-eps0`` (per step ``/T`` for fresh), compute eps1; if
    ``eps1 <= eps0`` the pair is valid (``e^eps1 beta <= delta_fail``), else raise the guess.
    eps is increasing in the guess only through ``sqrt(log(1/beta))``, so this converges in a
    few rounds.
    ``factor_fn(x)`` (fresh only) replaces the single-matrix factor at per-step ``log(1/beta_step) = x``,
    e.g. :func:`layerwise_fresh_factor_x` for a projection drawn per parameter tensor.
    When no consistent pair exists (eps grows at least as fast as the guess: tiny p, or a
    noise too small) the result is ``epsilon = inf`` with ``valid=False``: no finite certified
    number follows from this bound.
    """
    delta_fail = failure_share * delta
    delta_rdp = delta - delta_fail
    log_fail = math.log(delta_fail)
    guess = 0.0
    factor, order = math.nan, None
    for it in range(1, max_iter + 1):
        x_total = guess - log_fail  # log(1/beta), beta = delta_fail e^-guess
        if projection == "fresh":
            x = x_total + math.log(steps)  # per step
            factor = factor_fn(x) if factor_fn is not None else _fresh_factor_x(p, x, sigma_a)
        elif projection == "fixed":
            factor = _fixed_factor_x(d, p, x_total, sigma_a)
        else:  # pragma: no cover - validated by the caller
            raise InvalidParameter("--projection", f"must be fresh or fixed (got {projection!r})")
        eps, order = eps_of(factor, delta_rdp)
        if not math.isfinite(eps):
            break
        if eps <= guess:
            beta = math.exp(-x_total)
            return ProjectedEpsilon(eps, factor, beta, delta_rdp, failure_delta(eps, beta), order, it, True)
        # Overshoot slightly so that the next round usually certifies itself; more when the
        # iteration is slow (eps grows almost as fast as the guess), at some cost in tightness.
        overshoot = 1e-3 if it <= 3 else (2e-2 if it <= 10 else 0.1)
        guess = eps * (1.0 + overshoot) + 1e-9
        if guess > 700:  # e^eps beta cannot be controlled: no finite certified epsilon
            break
    return ProjectedEpsilon(math.inf, factor, math.exp(log_fail), delta_rdp, delta_fail, order, it, False)
