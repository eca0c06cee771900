"""Audit of D2P2-SGD / DP2-SGD with a fixed public projection (and D2P-SGD without one).

Alg. 1 releases ``y_k = (1/sqrt(p)) A^T g_k + eps_k`` with the noise added *after* projecting.  On
the instance where every example but the differing one has zero (normalised) gradient and the
differing one has normalised gradient ``u`` (``||u|| -> 1``, gradient norm -> infinity, automatic
clipping ``g/(||g|| + gamma)``), step k is a Poisson-subsampled Gaussian with sensitivity
``s = ||A^T u|| / sqrt(p)`` and multiplier ``z_k``: the exact instance epsilon is that of multipliers
``z_k / s`` (deterministic PLD lower bound, :mod:`accounting.audit.pld`).  The claimed number treats
the projection as post-processing, i.e. ``s = 1``.

The public matrix A is a Gaussian draw (entries N(0, 1), as Alg. 1 / Lemma 2 prescribe) from the
audit's seed; ``u`` is A's top left-singular vector (eigenvector of the Gram matrix).  Any unit
``u`` is a valid instance and its factor is computed exactly as ``||A^T u|| / sqrt(p)``
(<= sigma_max(A)/sqrt(p)).  The certified number shown next to the audit is the one of *this*
fixed A (``--projection fixed`` with its sigma_max), so the audit is a tight control of the
certified accountant and a refutation of the claimed one (which treats the projection as
post-processing) whenever the instance exceeds it.  For d*p above ``_MAX_DENSE`` entries, u is
the normalised first column of A and only the law of ``A^T u`` is sampled (exactly, see
:func:`projection_factor`), which gives ``s ~ sqrt((d + p)/p)`` instead of
``(sqrt(d) + sqrt(p))/sqrt(p)``.
With ``--projection-sigma-max S`` (a known fixed A) the factor is exactly ``S / sqrt(p)``: the
instance puts u on that A's top singular direction.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["projection_factor"]

_MAX_DENSE = 6_000_000


def projection_factor(d: int, p: int, seed: int) -> tuple[float, float | None, str]:
    """(s, sigma_max, how) for a Gaussian d x p matrix A drawn from ``seed``.

    ``s = ||A^T u|| / sqrt(p)`` for the instance's unit vector u.  Dense case: u is A's top
    left-singular vector (eigenvector of the Gram matrix), so s = sigma_max(A)/sqrt(p) and
    ``sigma_max`` is returned (the certified number of this very A can then use it).
    Large case: ``sigma_max`` is None.
    """
    if d * p <= _MAX_DENSE:
        a = np.random.default_rng([seed, 7919]).standard_normal((d, p))
        # top singular pair from the smaller Gram matrix (symmetric eigenproblem)
        if p <= d:
            w, v = np.linalg.eigh(a.T @ a)
            u = a @ v[:, -1]
        else:
            w, v = np.linalg.eigh(a @ a.T)
            u = v[:, -1].copy()
        u /= np.linalg.norm(u)
        smax = math.sqrt(max(float(w[-1]), 0.0))
        s = float(np.linalg.norm(a.T @ u) / math.sqrt(p))
        # certified side uses sigma_max; never let round-off put it below the instance's factor
        smax = max(smax, s * math.sqrt(p))
        how = f"Gaussian A ({d}x{p}) drawn from the seed, sigma_max(A) = {smax:.6g}; u = top singular vector"
        return s, smax, how
    # Large case: u = a_1/||a_1|| (A's normalised first column).  Then A^T u = (||a_1||, a_2.u, ...,
    # a_p.u) and, the columns being independent N(0, I_d), the a_j.u (j >= 2) are i.i.d. N(0, 1)
    # given a_1.  Sampling ||a_1|| and those p - 1 inner products is an exact draw of the same
    # instance without materialising A (A is completed as a_j = g_j u + (I - u u^T) h_j).
    rng = np.random.default_rng([seed, 7919, 1])
    norm2 = float(np.sum(rng.standard_normal(d) ** 2))
    rest = float(np.sum(rng.standard_normal(p - 1) ** 2))
    s = math.sqrt((norm2 + rest) / p)
    how = f"Gaussian A ({d}x{p}) from the seed; u = its normalised first column (A^T u sampled exactly)"
    return s, None, how


def fresh_projection_epsilon_lower(
    sample_rate: float,
    multipliers: np.ndarray,
    counts: np.ndarray,
    delta: float,
    p: int,
    *,
    progress: Any = None,
) -> tuple[float, float, float]:
    """Lower bound on epsilon(delta) of D2P2-SGD with a fresh public Gaussian A_k every step.

    Given the draws, step k is the 1-D subsampled Gaussian with sensitivity
    ``s_k = ||A_k^T u|| / sqrt(p)`` (project the release on ``A_k^T u``: post-processing), and
    ``p s_k^2 ~ chi^2_p`` independently.  A larger sensitivity is never more private (the map
    ``y -> (c/s) y + N(0, z^2 (1 - c^2/s^2))`` turns the s-mechanism into the c-mechanism for
    c <= s, for both neighbours), so on the event G = {every s_k >= c} the conditional
    hockey-stick divergence is at least delta_c(eps) of the constant-c instance.  With A public,
    the mechanism's delta(eps) is the average over the draws, hence
    ``delta(eps) >= P(G) delta_c(eps)`` with ``P(G) = P(chi^2_p >= p c^2)^T`` exactly, and
    ``eps_lower = sup{eps : delta_c(eps) > delta / P(G)}``.  c is chosen on a grid of quantiles
    (any c is valid; the largest bound is kept).  Returns ``(eps_lower, c, log P(G))``.
    ``progress``: a tqdm-like bar; its total is set to the PLD passes (two per c) and advanced by each.
    """
    from scipy import stats

    from accounting.audit.dpsgd import subsampled_instance_epsilon_lower

    t = int(np.sum(counts))
    candidates = []
    for tail in (0.5, 0.1, 0.02, 1e-3, 1e-5, 1e-8):  # per-step P(s_k < c)
        # lower quantile through ppf: isf(1 - tiny) rounds 1 - 1e-17 to 1 and returns c = 0
        c2 = float(stats.chi2.ppf(tail / max(t, 1), p)) / p
        if not (math.isfinite(c2) and c2 > 0):
            continue
        c = math.sqrt(c2)
        log_pg = t * float(stats.chi2.logsf(p * c * c, p))
        target = delta / math.exp(log_pg) if log_pg > math.log(delta) else 1.0
        if target < 1.0:
            candidates.append((c, log_pg, target))
    if progress is not None:
        progress.total = 2 * len(candidates)
        progress.refresh()
    best = (0.0, 0.0, 0.0)
    for c, log_pg, target in candidates:
        eps = subsampled_instance_epsilon_lower(
            sample_rate, multipliers, target, factor=c, counts=counts, progress=progress
        )
        if eps > best[0]:
            best = (eps, c, log_pg)
    return best
