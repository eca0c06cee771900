"""A lower bound on epsilon(delta) of T Poisson-subsampled Gaussian steps, at any T, in O(sqrt(T)).

The one-dimensional worst case of DP-SGD (see :mod:`accounting.audit.dpsgd`): under D' step t
releases ``y_t = b_t + N(0, sigma^2)`` with ``b_t ~ Bernoulli(q)`` independent, under D
``y_t = N(0, sigma^2)`` (sensitivity 1).  Any post-processing of the outputs satisfies the
same (epsilon, delta) guarantee, in particular the threshold test on ``S = sum_t y_t``:

* under D:  ``S ~ N(0, T sigma^2)``;
* under D': ``S ~ K + N(0, T sigma^2)`` with ``K ~ Binomial(T, q)``.

(epsilon, delta)-DP in the add direction requires ``P'(S > tau) <= e^eps P(S > tau) + delta``
for every tau, i.e. ``eps >= log((P' - delta) / P)``; the remove direction, applied to
``{S < tau}``, requires ``P(S < tau) <= e^eps P'(S < tau) + delta``.  Both are maximised over a
grid of thresholds.  ``P'`` is *under*-estimated by summing the binomial only over a window of
k (dropping nonnegative terms), so the result is a rigorous lower bound up to floating-point
rounding in ``log_ndtr`` / ``binom.logpmf`` (relative ~1e-15 on log-probabilities of size
<= 1e3, i.e. ~1e-12 absolute in epsilon, which is subtracted).

It is far from tight at small T (a sum discards the per-step structure) but it costs
``O(window)`` whatever T is, which is what the envelope soundness tests need at T = 1e9.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["sum_test_epsilon_lower"]

#: Subtracted from every epsilon lower bound the sum tests return: the rounding of ``log_ndtr`` /
#: ``binom.logpmf`` (relative ~1e-15 on log-probabilities of size <= 1e3, module docstring).
ROUNDING = 1e-12


def logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    """``log sum exp`` along ``axis`` without scipy.special; ``-inf`` for an all ``-inf`` slice."""
    m = np.max(a, axis=axis, keepdims=True)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(safe, axis) + np.log(np.sum(np.exp(a - safe), axis=axis))


def sum_test_epsilon_lower(
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    *,
    thresholds: int = 400,
    window_sd: float = 12.0,
    max_window: int = 20_000,
) -> float:
    """Lower bound on the epsilon at ``delta`` of ``steps`` subsampled Gaussian steps (>= 0).

    ``sample_rate`` in (0, 1], ``noise_multiplier`` > 0, ``steps`` >= 1, ``delta`` in (0, 1).
    Returns 0.0 when no threshold test beats ``delta``.
    """
    from scipy import special, stats

    q, sig, t = float(sample_rate), float(noise_multiplier), int(steps)
    if not (0 < q <= 1 and sig > 0 and t >= 1 and 0 < delta < 1):
        raise ValueError("need 0 < q <= 1, sigma > 0, steps >= 1, 0 < delta < 1")
    sd = sig * math.sqrt(t)  # std of the Gaussian part of S
    mean = t * q
    bsd = math.sqrt(t * q * (1 - q))
    lo = max(0, math.floor(mean - window_sd * bsd))
    hi = min(t, math.ceil(mean + window_sd * bsd))
    # Bins [e_j, e_{j+1}) of K; on a bin Q((tau - k)/sd) is smallest and Phi((tau - k)/sd)
    # largest at its left end, so evaluating there under-estimates P'(S > tau) and
    # over-estimates P'(S < tau) -- both in the safe direction.
    edges = np.unique(np.linspace(lo, hi + 1, min(hi + 2 - lo, max_window + 1)).round()).astype(np.int64)
    ks = edges[:-1]
    # Bin masses as differences of the cdf below the mean and of the survival function above it:
    # a difference of two cdf values near 1 has no relative precision in the upper tail (it can
    # make a bin 3.6x too heavy, and at T = 1 overstate epsilon).
    with np.errstate(divide="ignore"):
        cdf = stats.binom.cdf(edges - 1, t, q)
        sf = stats.binom.sf(edges - 1, t, q)
        upper = edges[:-1] > mean
        mass = np.where(upper, sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
        logpmf = np.log(np.maximum(mass, 0.0))
    # Thresholds in units of sd around the bulk of K, out to where delta is negligible.
    reach = math.sqrt(2.0 * (-math.log(delta) + 5.0)) + 2.0
    kf = ks.astype(float)
    taus = np.concatenate(
        [np.linspace(mean - reach * sd, mean + reach * sd, thresholds), mean + (kf[[0, -1]] - mean)]
    )
    best = 0.0
    log_delta = math.log(delta)
    for chunk in np.array_split(taus, max(1, taus.size // 50)):
        z1 = (chunk[:, None] - kf[None, :]) / sd
        # add direction: P'(S > tau) vs P(S > tau)
        lp1 = logsumexp(logpmf[None, :] + special.log_ndtr(-z1), axis=1)
        lp0 = special.log_ndtr(-chunk / sd)
        # remove direction: P(S < tau) vs P'(S < tau)
        lq0 = special.log_ndtr(chunk / sd)
        lq1 = logsumexp(logpmf[None, :] + special.log_ndtr(z1), axis=1)
        # P'(S < tau) is over-estimated by nothing here but *under*-estimated by the window;
        # for the remove direction it sits in the denominator, so add the dropped mass back.
        dropped = -np.expm1(logsumexp(logpmf[None, :], axis=1))  # 1 - window mass
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lq1_up = np.logaddexp(lq1, np.log(np.maximum(dropped, 0.0)) + 0.0)
            add = np.where(lp1 > log_delta, np.log(-np.expm1(log_delta - lp1)) + lp1 - lp0, -np.inf)
            rem = np.where(lq0 > log_delta, np.log(-np.expm1(log_delta - lq0)) + lq0 - lq1_up, -np.inf)
        cand = np.nanmax(np.concatenate([add, rem]))
        if np.isfinite(cand):
            best = max(best, float(cand))
    return max(0.0, best - ROUNDING)
