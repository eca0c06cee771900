"""DiceSGD's released update rule, restated, and a rigorous shuffle lower bound built on it.

Source (read with the project's search tools, not copied): github.com/564612540/DiceSGD,
``DiceSGD/optimizers_utils.py``, ``PrivacyEngine_Dice._create_noisy_clipped_dice_gradient`` (commit
104b3b41; unchanged at 246fcd24). With C1 = ``max_grad_norm``, C2 = ``error_max_grad_norm`` (a ratio:
the error is clipped at C1 C2), e the carried error and r = C1 C2 / (||e|| + 1e-6), one step releases

    summed clipped gradients + e min(r, 1) + N(0, (z C1 sqrt(1 + 2 C2))^2 I)       (then / B)
    e <- e min(r, 1 - min(r, 1)) + (grad - summed clipped gradients)

The feedback e min(r, 1) is clip(e, C1 C2), as in the paper's Alg. 2. The carry is not e - clip(e):
for ||e|| <= C1 C2 it is 0 and for C1 C2 < ||e|| < 2 C1 C2 it is (1 - r) e (both agree with Alg. 2),
but for ||e|| >= 2 C1 C2 it is r e = clip(e), of norm C1 C2. A residual therefore never outlives two
feedback steps: one inclusion of an example whose gradient leaves a residual >= 2 C1 C2 contributes
C1, C1 C2, C1 C2 at three consecutive steps (summed units; the common / B cancels against the noise),
and nothing after. ``code_signal`` replays the rule exactly (1e-6 included) instead of assuming this.
"""

from __future__ import annotations

import math

import numpy as np

#: numerical-stability constant the code adds to ||e|| before forming r
ERROR_NORM_EPS = 1e-6


def code_signal(
    inclusions: np.ndarray, c1: float, c2: float, residual: float, err0: np.ndarray | float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact 1-D replay of the released rule for many inclusion patterns at once.

    Instance: 1-D linear losses; every other example has gradient 0, the target's gradient is positive and
    large enough that one inclusion adds ``residual`` to the error (the code's ``grad - summed clipped``:
    whatever normalisation ``.grad`` carries, it grows without bound with the target's gradient, which
    the code never bounds). Under the neighbour (target replaced by a zero-gradient example) the error
    stays 0 and every release is pure noise. ``inclusions`` is a (patterns, steps) boolean array and
    ``err0`` the carried error at the start; returns per pattern the sum and the sum of squares of the
    target's released signal (before noise and the common / B) and the final carried error.
    """
    inc = np.ascontiguousarray(np.asarray(inclusions, dtype=float).T)  # (steps, patterns)
    steps, n = inc.shape
    cap = c1 * c2
    err = np.broadcast_to(np.asarray(err0, dtype=float), (n,)).copy()
    total = np.zeros(n)
    sq = np.zeros(n)
    for t in range(steps):
        r = cap / (np.abs(err) + ERROR_NORM_EPS)
        keep = np.minimum(r, 1.0)
        sig = c1 * inc[t] + err * keep
        err = err * np.minimum(r, 1.0 - keep) + residual * inc[t]
        total += sig
        sq += sig * sig
    return total, sq, err


def code_footprints(epochs: int, batches: int, c2: float, c1: float = 1.0) -> dict:
    """Distribution of the target's summed signal when each epoch shuffles it into one of ``batches``
    consecutive batches uniformly and independently (DataLoader(shuffle=True)), with the code's rule.

    Exact replay epoch by epoch: the carried error is the whole state, so the distribution is propagated
    as weighted (error, sum, max sum of squares) states, each epoch replaying all ``batches`` positions
    from every incoming state (states equal to 12 digits are merged). ``residual = 1e6 C1 C2`` (>= 2 C1 C2
    is all that matters). Means are floored by 1e-9 relative, so they stay lower bounds of the exact sums;
    ``max_l2`` is the largest L2 norm of a pattern's signal.
    """
    states = {(0.0, 0.0): (1.0, 0.0)}  # (error, signal sum) -> (probability, max sum of squares)
    eye = np.eye(batches, dtype=bool)
    for _ in range(epochs):
        nxt: dict[tuple[float, float], tuple[float, float]] = {}
        for (err0, tot0), (w0, sq0) in states.items():
            tot, sq, err = code_signal(eye, c1, c2, 1e6 * c1 * c2, err0)
            for k in range(batches):
                key = (float(f"{err[k]:.12g}"), float(f"{tot0 + tot[k]:.12g}"))
                w, s = nxt.get(key, (0.0, 0.0))
                nxt[key] = (w + w0 / batches, max(s, sq0 + sq[k]))
        states = nxt
    sums: dict[float, float] = {}
    for (_, tot), (w, _) in states.items():
        sums[tot] = sums.get(tot, 0.0) + w
    means = np.array(sorted(sums))
    weights = np.array([sums[m] for m in means])
    max_sq = max(s for _, s in states.values())
    return {"means": means * (1 - 1e-9), "weights": weights / weights.sum(), "max_l2": math.sqrt(max_sq)}


def shuffle_patterns(epochs: int, batches: int) -> np.ndarray:
    """All inclusion patterns of one example under per-epoch shuffling (batches**epochs rows, each
    equally likely): the brute-force reference for ``code_footprints`` in the tests."""
    pos = np.stack(np.meshgrid(*[np.arange(batches)] * epochs, indexing="ij"), -1).reshape(-1, epochs)
    out = np.zeros((pos.shape[0], epochs * batches), dtype=bool)
    rows = np.arange(pos.shape[0])
    for e in range(epochs):
        out[rows, e * batches + pos[:, e]] = True
    return out


def sum_test_delta_lower(eps: float, means: np.ndarray, weights: np.ndarray, sd: float) -> float:
    """delta(eps) >= max_s P1(S > s) - e^eps P0(S > s) for the sum S of all releases (post-processing).

    P1(S > s) = sum_c w_c Q((s - m_c)/sd) exactly (S is Gaussian given the pattern c, whose signal sum
    m_c is a lower bound: Q is increasing in the mean); P0(S > s) = Q(s/sd). Log space throughout.
    """
    from scipy.special import log_ndtr, logsumexp

    s = np.linspace(-10 * sd, float(means.max()) + 10 * sd, 4001)
    log_p1 = logsumexp(log_ndtr((means[None, :] - s[:, None]) / sd), axis=1, b=weights[None, :])
    log_p0 = log_ndtr(-s / sd)
    gap = -np.expm1(np.minimum(eps + log_p0 - log_p1, 0.0))
    return float(np.max(np.exp(log_p1) * gap))


def sum_test_epsilon_lower(delta: float, means: np.ndarray, weights: np.ndarray, sd: float) -> float:
    """Largest eps (bisection to 1e-4; it returns the lower end, so a lower bound) whose
    ``sum_test_delta_lower`` still exceeds ``delta``."""
    if sum_test_delta_lower(0.0, means, weights, sd) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while sum_test_delta_lower(hi, means, weights, sd) > delta:
        lo, hi = hi, 2 * hi
        if hi > 1e6:
            return lo
    while hi - lo > 1e-4:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if sum_test_delta_lower(mid, means, weights, sd) > delta else (lo, mid)
    return lo


def noise_std(z: float, c2: float, c1: float = 1.0) -> float:
    """The code's per-coordinate noise std in summed units: z C1 sqrt(1 + 2 C2)."""
    return z * c1 * math.sqrt(1 + 2 * c2)
