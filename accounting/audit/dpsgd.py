"""Audits whose instance is a composition of Poisson-subsampled Gaussians (exact, deterministic).

DP-SGD (DiceSGD paper Alg. 1) on the 1-D worst case: one differing example whose gradient norm is
>= C (clipped to exactly C), every other example with zero gradient.  Step k then releases
``b_k C + N(0, (z_k C)^2)`` (sum units) under D' and ``N(0, (z_k C)^2)`` under D, which is exactly
the subsampled Gaussian with multiplier z_k: :func:`accounting.audit.pld.subsampled_gaussian_epsilon_lower`
gives a deterministic lower bound on its epsilon(delta) (rounded-down PLD, both directions).
The same instance serves D2P-SGD (schedules) and, with a sensitivity factor, D2P2/DP2-SGD.
"""

from __future__ import annotations

import numpy as np

from accounting.audit.pld import subsampled_gaussian_epsilon_lower

__all__ = ["subsampled_instance_epsilon_lower", "PLD_METHOD"]

PLD_METHOD = (
    "exact privacy-loss distribution of the instance, discretised by rounding losses down "
    "(deterministic lower bound, both add and remove directions)"
)


def subsampled_instance_epsilon_lower(
    sample_rate: float, multipliers: np.ndarray, delta: float, *, factor: float = 1.0
) -> float:
    """epsilon(delta) lower bound of steps with multipliers ``z_k`` and sensitivity ``factor``."""
    z = np.asarray(multipliers, dtype=float) / float(factor)
    return subsampled_gaussian_epsilon_lower(sample_rate, z, delta)
