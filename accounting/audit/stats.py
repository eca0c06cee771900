"""Exact and statistically rigorous building blocks of the audits (numpy/scipy only).

* :func:`clopper_pearson_lower` / :func:`clopper_pearson_upper`: exact one-sided binomial bounds.
* :func:`gaussian_delta` / :func:`gaussian_epsilon`: the (epsilon, delta) curve of a Gaussian
  mechanism with sensitivity/noise ratio ``mu`` (equivalently, of any composition of Gaussians
  with ``mu = sqrt(sum mu_k^2)``): ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``
  (Balle & Wang 2018; Dong, Roth & Su 2019), epsilon rounded down with the certified lower
  estimate of :mod:`accounting.gdp_curve` (shared with the certified side).
* :func:`mc_epsilon_lower`: a lower confidence bound on epsilon(delta) from sampled privacy losses.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from accounting.gdp_curve import gdp_delta, gdp_delta_lower

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "gaussian_delta",
    "gaussian_epsilon",
    "mc_epsilon_lower",
    "McBound",
]


def clopper_pearson_lower(k: int, n: int, beta: float) -> float:
    """Largest p with P_p[Bin(n, p) >= k] <= beta (exact one-sided lower bound, level 1 - beta)."""
    if k <= 0:
        return 0.0
    return float(stats.beta.ppf(beta, k, n - k + 1))


def clopper_pearson_upper(k: int, n: int, beta: float) -> float:
    """Smallest p with P_p[Bin(n, p) <= k] <= beta (exact one-sided upper bound, level 1 - beta)."""
    if k >= n:
        return 1.0
    return float(stats.beta.ppf(1.0 - beta, k + 1, n - k))


def gaussian_delta(eps: float, mu: float) -> float:
    """Hockey-stick divergence of N(mu, 1) vs N(0, 1) at e^eps (both directions are equal), the
    nearest float estimate (:func:`accounting.gdp_curve.gdp_delta`)."""
    return gdp_delta(mu, eps)


def gaussian_epsilon(delta: float, mu: float) -> float:
    """Epsilon(delta) of the mu-Gaussian mechanism, rounded *down* (a valid lower bound).

    Bisection (to 1e-12 relative) keeping the invariant that a certified *lower* estimate of
    delta at the low end is >= ``delta`` (:func:`accounting.gdp_curve.gdp_delta_lower`): the true
    delta(lo) >= delta there, and delta(eps) is decreasing, so the true epsilon(delta) >= lo.
    Never negative; 0 when no positive point can be certified (0 is always a lower bound).
    """
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta!r}")
    if not mu > 0 or delta >= 1 or gdp_delta_lower(mu, 0.0) < delta:
        return 0.0
    # A smaller mu is the same mechanism with more noise (post-processing), so capping it keeps a
    # lower bound; beyond 1e100 the bracket mu^2/2 would overflow (the value is ~mu^2/2 anyway).
    mu = min(float(mu), 1e100)
    # Gaussian tail: delta(eps) <= exp(-(eps/mu - mu/2)^2 / 2) <= delta at this eps.
    hi = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta))
    while gdp_delta_lower(mu, hi) >= delta:  # only by rounding of the tail formula
        hi *= 2.0
    lo = 0.0
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if gdp_delta_lower(mu, mid) >= delta:
            lo = mid
        else:
            hi = mid
    return lo


class McBound:
    """Result of :func:`mc_epsilon_lower` for one direction."""

    def __init__(self, epsilon: float, needed: int, samples: int, beta: float) -> None:
        self.epsilon = epsilon
        self.needed = needed
        self.samples = samples
        self.beta = beta

    def __repr__(self) -> str:
        return f"McBound(epsilon={self.epsilon!r}, needed={self.needed}, samples={self.samples})"


def mc_epsilon_lower(losses: np.ndarray, delta: float, beta: float, rng: np.random.Generator) -> McBound:
    """Lower confidence bound (level 1 - beta) on the epsilon at ``delta`` from privacy losses.

    ``losses`` are i.i.d. samples of ``L = log(dP/dQ)(Y)`` with ``Y ~ P``.  The hockey-stick
    divergence is ``H(eps) = E_P[(1 - e^{eps - L})_+]`` (exact identity), the mean of a [0, 1]
    variable.  Bernoulli-ise it with one uniform ``U_i`` per sample: ``Z_i(eps) = 1{U_i < 1 -
    e^{eps - L_i}} = 1{eps < E_i}`` with ``E_i = L_i + log(1 - U_i)``, so ``sum_i Z_i(eps) ~
    Bin(M, H(eps))`` exactly.  Let ``k*`` be the smallest count whose Clopper-Pearson lower bound
    exceeds ``delta``.  Reported: ``eps_lower = E_(k*)`` (k*-th largest).  Validity: ``H`` is
    continuous and non-increasing, so with ``eps_t = inf{eps : H(eps) <= delta}`` an error
    (``eps_lower > eps_t``) implies ``count(eps_t) >= k*`` for a ``Bin(M, <= delta)`` count, an event
    of probability <= beta.  Hence ``P[true eps(delta) >= eps_lower] >= 1 - beta`` for this pair.
    """
    losses = np.asarray(losses, dtype=float)
    m = losses.size
    u = rng.random(m)
    e = losses + np.log1p(-u)
    # Smallest k with CP lower bound > delta (monotone in k); search directly.
    k_star = None
    lo, hi = 1, m
    if clopper_pearson_lower(m, m, beta) <= delta:
        return McBound(0.0, -1, m, beta)
    while lo < hi:
        mid = (lo + hi) // 2
        if clopper_pearson_lower(mid, m, beta) > delta:
            hi = mid
        else:
            lo = mid + 1
    k_star = lo
    kth = np.partition(e, m - k_star)[m - k_star]
    return McBound(float(max(0.0, kth)), k_star, m, beta)
