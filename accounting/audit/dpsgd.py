"""Audits whose instance is a composition of Poisson-subsampled Gaussians (exact, deterministic).

DP-SGD (DiceSGD paper Alg. 1) on the 1-D worst case: one differing example whose gradient norm is
>= C (clipped to exactly C), every other example with zero gradient.  Step k then releases
``b_k C + N(0, (z_k C)^2)`` (sum units) under D' and ``N(0, (z_k C)^2)`` under D, which is exactly
the subsampled Gaussian with multiplier z_k: :func:`accounting.audit.pld.subsampled_gaussian_epsilon_lower`
gives a deterministic lower bound on its epsilon(delta) (rounded-down PLD, both directions).
The same instance serves D2P-SGD (schedules) and, with a sensitivity factor, D2P2/DP2-SGD.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.audit.pld import subsampled_gaussian_epsilon_lower
from accounting.audit.sum_test import sum_test_epsilon_lower

__all__ = ["PLD_MAX_STEPS", "PLD_METHOD", "subsampled_instance_epsilon_lower"]

PLD_METHOD = (
    "exact privacy-loss distribution of the instance, discretised by rounding losses down "
    "(deterministic lower bound, both add and remove directions)"
)


#: The exact PLD is composed over at most this many steps (about 3 s); beyond, see below.
PLD_MAX_STEPS = 200_000


def subsampled_instance_epsilon_lower(
    sample_rate: float,
    multipliers: np.ndarray,
    delta: float,
    *,
    factor: float = 1.0,
    counts: np.ndarray | None = None,
    progress: Any = None,
) -> float:
    """epsilon(delta) lower bound of steps with multipliers ``z_k`` and sensitivity ``factor``.

    ``counts`` repeats entry k ``counts[k]`` times (long schedules in O(distinct) memory).
    Beyond :data:`PLD_MAX_STEPS` steps the PLD is composed over the ``PLD_MAX_STEPS`` noisiest-
    for-privacy steps only (smallest z): ignoring the other releases is post-processing, so the
    result is still a lower bound.  A constant schedule also gets the sum test over all T steps
    (:mod:`accounting.audit.sum_test`, O(sqrt(T))); the larger of the two is returned.
    ``progress``: a tqdm-like bar, advanced twice (once per neighbour direction of the PLD).
    """
    z = np.atleast_1d(np.asarray(multipliers, dtype=float)) / float(factor)
    c = np.ones(z.size, dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    total = int(c.sum())
    order = np.argsort(z, kind="stable")
    z, c = z[order], c[order]
    keep = np.minimum(c, np.maximum(0, PLD_MAX_STEPS - (np.cumsum(c) - c)))
    pld = subsampled_gaussian_epsilon_lower(sample_rate, np.repeat(z, keep), delta, progress=progress)
    if total > PLD_MAX_STEPS and np.all(z == z[0]):
        return max(pld, sum_test_epsilon_lower(sample_rate, float(z[0]), total, delta))
    return pld
