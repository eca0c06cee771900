"""A deterministic lower bound on DiceSGD's epsilon(delta) when one inclusion never drains.

The instance is :mod:`accounting.audit.dicesgd`'s with ``K = T`` (no gradient bound): every
example of D has zero gradient, xi' has gradient ``G = C1 + B T C2`` (Assumption 3.5 allows any
finite G).  Under D the released averaged updates are ``y_t = w_t``; under D', with ``tau`` the
first step whose Poisson bit includes xi', ``clip(e'_t, C2) = C2`` for every ``t > tau`` (the
residual ``(G - C1)/B = T C2`` cannot drain at ``C2`` per step before the end), so

    S = sum_t y_t  =  C1/B (# inclusions) + C2 (T - 1 - tau) + N(0, T sigma1^2)   under D',
    S  ~  N(0, T sigma1^2)                                                        under D.

Any threshold test on S is post-processing, so (eps, delta)-DP needs, for every threshold u,
``P'(S > u) <= e^eps P(S > u) + delta`` and ``P(S < u) <= e^eps P'(S < u) + delta``.  Dropping
the inclusions after the first (positive shifts) makes S' smaller pathwise: it *under*-estimates
``P'(S > u)`` and *over*-estimates ``P'(S < u)``, both in the safe direction, so the largest eps
either inequality forces is a rigorous lower bound (no sampling, confidence 1).  Cost
``O(T x thresholds)``.
"""

from __future__ import annotations

import math

import numpy as np

# the same threshold-test machinery as the DP-SGD sum test: one log-sum-exp, one rounding allowance
from accounting.audit.sum_test import ROUNDING
from accounting.audit.sum_test import logsumexp as _lse

__all__ = ["dicesgd_sum_test_epsilon_lower"]


def dicesgd_sum_test_epsilon_lower(
    *,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    c1: float,
    c2: float,
    batch_size: float,
    thresholds: int = 600,
) -> float:
    """Lower bound on DiceSGD's epsilon at ``delta`` on the never-draining instance (>= 0).

    ``noise_multiplier`` is ``z = sigma1 B / C1`` (noise ``sigma1`` on the averaged update);
    Poisson sampling at ``sample_rate``; add/remove adjacency.  Returns 0.0 when no test beats delta.
    """
    from scipy import special

    q, z, t = float(sample_rate), float(noise_multiplier), int(steps)
    if not (0 < q <= 1 and z > 0 and t >= 1 and 0 < delta < 1 and c1 > 0 and c2 > 0 and batch_size > 0):
        raise ValueError("need 0 < q <= 1, z > 0, steps >= 1, 0 < delta < 1, C1, C2, B > 0")
    sd = z * c1 / batch_size * math.sqrt(t)
    j = np.arange(t, dtype=float)
    # first inclusion at tau = j: log P = log q + j log(1 - q); shift C1/B + C2 (T - 1 - j)
    log1mq = math.log1p(-q) if q < 1 else -math.inf
    with np.errstate(invalid="ignore"):
        logw = math.log(q) + np.where(j > 0, j * log1mq, 0.0)
    shift = c1 / batch_size + c2 * (t - 1.0 - j)
    log_none = t * log1mq if q < 1 else -math.inf  # never included: no shift
    logw_all = np.concatenate([logw, [log_none]])
    shift_all = np.concatenate([shift, [0.0]])
    reach = math.sqrt(2.0 * (-math.log(delta) + 5.0)) + 2.0
    us = np.concatenate(
        [
            np.linspace(-reach * sd, float(shift.max()) + reach * sd, thresholds),
            np.geomspace(max(sd, 1e-300), float(shift.max()) + reach * sd, thresholds // 2),
        ]
    )
    best = 0.0
    log_delta = math.log(delta)
    for chunk in np.array_split(us, max(1, us.size // 100)):
        zz = (chunk[:, None] - shift_all[None, :]) / sd
        lp1 = _lse(logw_all[None, :] + special.log_ndtr(-zz), axis=1)  # P'(S > u), under-estimated
        lp0 = special.log_ndtr(-chunk / sd)  # P(S > u)
        lq1 = _lse(logw_all[None, :] + special.log_ndtr(zz), axis=1)  # P'(S < u), over-estimated
        lq0 = special.log_ndtr(chunk / sd)  # P(S < u)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            add = np.where(lp1 > log_delta, np.log(-np.expm1(log_delta - lp1)) + lp1 - lp0, -np.inf)
            rem = np.where(lq0 > log_delta, np.log(-np.expm1(log_delta - lq0)) + lq0 - lq1, -np.inf)
        cand = np.nanmax(np.concatenate([add, rem]))
        if np.isfinite(cand):
            best = max(best, float(cand))
    return max(0.0, best - ROUNDING)
