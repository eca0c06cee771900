"""Lower bounds for one step of D2P2-SGD with a fresh, *public* Gaussian projection A_k.

Alg. 1 line 6 releases ``y = A^T g / sqrt(p) + N(0, sigma^2 I_p)`` with a fresh d x p matrix A of
i.i.d. N(0, 1) entries. On the worst-case instance (every other example has zero normalised
gradient, the differing one has normalised gradient ``u`` with ``||u|| -> 1``), projecting ``y``
on ``A^T u`` (post-processing) gives a 1-D subsampled Gaussian with sensitivity
``s = ||A^T u|| / sqrt(p)`` and ``p s^2 ~ chi^2_p`` (A is independent of u). When A is public
(released, or recoverable from the iterates or a public seed) the output is the pair (A, y), and
for a fixed direction of neighbours its hockey-stick divergence is the average over A:

    delta(eps) = E_s[delta_s(eps)]                                             (1)

where ``delta_s`` is the exact hockey-stick divergence of the 1-D Poisson-subsampled Gaussian
with sensitivity ``s`` (closed forms below, Balle & Wang style; the likelihood ratio is monotone
in y, so the optimal set is a half-line). ``delta_s(eps)`` is non-decreasing in ``s``: the map
``y -> (c/s) y + N(0, sigma^2 (1 - c^2/s^2))`` sends the s-instance to the c-instance (c <= s)
for both neighbours, and post-processing cannot increase the divergence. Hence the lower
Riemann sum over any partition ``0 = c_0 < c_1 < ... < c_m`` of s,

    delta(eps) >= sum_j P(c_j <= s < c_{j+1}) delta_{c_j}(eps),              (2)

is a deterministic lower bound (bin probabilities are exact chi-square probabilities at the
computed edges). ``epsilon_lower(delta) = sup{eps : (2) > delta}``; (2) is non-increasing in eps,
so bisection applies.

With A_k *secret* (only x released) none of this is a lower bound: the release is then a
function of (A, y) that forgets A, and dropping A can only lower the divergence.

Full batch (q = 1) and T steps: given the draws, the composition of Gaussians with sensitivities
``s_k`` and standard deviations ``sigma_k`` is exactly mu-GDP with ``mu^2 = sum s_k^2/sigma_k^2``
(Dong, Roth, Su 2019), so (1) is ``E[delta_mu(eps)]``: :func:`gdp_fresh_public_delta_mc` samples it
exactly per draw and gives a one-sided Hoeffding bound over the draws at a stated confidence.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special, stats

__all__ = [
    "subsampled_delta",
    "fresh_public_delta_lower",
    "fresh_public_epsilon_lower",
    "no_projection_epsilon",
    "no_projection_epsilon_lower",
    "gdp_fresh_public_delta_mc",
]

#: Rounding allowance: each delta is lowered by this multiple of the terms it subtracts.
_ROUND = 8 * np.finfo(float).eps


def subsampled_delta(
    eps: float, q: float, sigma: float, s: np.ndarray, *, upper: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Exact (remove, add) hockey-stick divergences of one Poisson-subsampled Gaussian step.

    P = (1 - q) N(0, sigma^2) + q N(s, sigma^2) (with the example), Q = N(0, sigma^2) (without).
    remove: ``int (P - e^eps Q)_+``; add: ``int (Q - e^eps P)_+``. Vectorised over ``s`` (s > 0);
    each value is lowered by a rounding allowance, so it never exceeds the exact divergence
    (raised instead with ``upper=True``, so it is never below it).
    """
    sign = 1.0 if upper else -1.0
    s = np.asarray(s, dtype=float)
    out_r = np.zeros_like(s)
    out_a = np.zeros_like(s)
    ee = math.exp(eps)
    pos = s > 0
    sp = s[pos]
    # remove: L(y) = 1 - q + q exp((s y - s^2/2)/sigma^2) > e^eps  <=>  y > t
    s2 = sigma * sigma  # +inf above ~1e154: thresholds at +inf, deltas 0 (a float product never raises)
    t = s2 / sp * math.log((ee - 1 + q) / q) + sp / 2
    a = (1 - q) * special.ndtr(-t / sigma) + q * special.ndtr((sp - t) / sigma)
    b = ee * special.ndtr(-t / sigma)
    out_r[pos] = np.maximum(a - b + sign * _ROUND * (a + b), 0.0)
    # add: Q > e^eps P  <=>  L(y) < e^-eps, possible only when 1 - q < e^-eps
    lim = math.exp(-eps) - 1 + q
    if lim > 0:
        t2 = s2 / sp * math.log(lim / q) + sp / 2
        a2 = special.ndtr(t2 / sigma)
        b2 = ee * ((1 - q) * special.ndtr(t2 / sigma) + q * special.ndtr((t2 - sp) / sigma))
        out_a[pos] = np.maximum(a2 - b2 + sign * _ROUND * (a2 + b2), 0.0)
    return out_r, out_a


@lru_cache(maxsize=256)
def _chi_partition(p: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower edges ``c_j`` of a partition of ``s = sqrt(chi^2_p / p)`` and the exact bin masses.

    Edges sit at survival levels from 1 down to 1e-300 (log-spaced: the upper tail is what
    small deltas see) plus evenly spaced levels in the bulk; the masses are recomputed from the
    edges actually used, so rounding in the quantile function cannot inflate the bound.
    """
    bulk = np.linspace(0.0, 1.0, bins // 2 + 1)
    levels = np.unique(np.concatenate([bulk, np.logspace(-300, 0, bins // 2)]))
    edges = np.sqrt(stats.chi2.isf(levels[::-1], p) / p)  # increasing; first is 0
    edges = np.unique(edges[np.isfinite(edges)])
    sf = stats.chi2.sf(p * edges**2, p)
    mass = sf - np.append(sf[1:], 0.0)  # P(c_j <= s < c_{j+1}); the last bin is the tail
    return edges, np.maximum(mass, 0.0)


def fresh_public_delta_lower(eps: float, q: float, sigma: float, p: int, *, bins: int = 400) -> float:
    """Deterministic lower bound (2) on delta(eps) of one step with a fresh public Gaussian A."""
    edges, mass = _chi_partition(int(p), bins)
    r, a = subsampled_delta(eps, q, sigma, edges)
    return float(max(np.dot(mass, r), np.dot(mass, a)))


def _bisect_eps(delta_of, delta: float) -> tuple[float, float]:
    """Bracket [lo, hi] of sup{eps >= 0 : delta_of(eps) > delta} for a non-increasing ``delta_of``."""
    if delta_of(0.0) <= delta:
        return 0.0, 0.0
    hi = 1.0
    while delta_of(hi) > delta:
        hi *= 2.0
        if hi > 512:  # beyond, e^eps overflows: report "at least 512"
            return hi / 2, math.inf
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delta_of(mid) > delta else (lo, mid)
    return lo, hi


def fresh_public_epsilon_lower(delta: float, q: float, sigma: float, p: int, *, bins: int = 400) -> float:
    """Lower bound on epsilon(delta) of one D2P2-SGD step with a fresh public A (from (2))."""
    return _bisect_eps(lambda e: fresh_public_delta_lower(e, q, sigma, p, bins=bins), delta)[0]


def no_projection_epsilon(delta: float, q: float, sigma: float) -> float:
    """Upper end of a bracket of the exact epsilon(delta) of one step without projection (s = 1).

    Bisection on the exact two-direction divergence with the rounding allowance *added*, keeping
    the upper end: the returned value is never below the exact epsilon.
    """
    one = np.array([1.0])

    def d(e: float) -> float:
        r, a = subsampled_delta(e, q, sigma, one, upper=True)
        return float(max(r[0], a[0]))

    return _bisect_eps(d, delta)[1]


def no_projection_epsilon_lower(delta: float, q: float, sigma: float) -> float:
    """Lower end of the same bracket (rounding allowance subtracted): never above the exact epsilon.

    Returns at least 512 (not a bisected value) when the divergence still exceeds ``delta`` there.
    """
    one = np.array([1.0])

    def d(e: float) -> float:
        r, a = subsampled_delta(e, q, sigma, one)
        return float(max(r[0], a[0]))

    return _bisect_eps(d, delta)[0]


def gdp_fresh_public_delta_mc(
    eps: float,
    sigmas: np.ndarray,
    p: int,
    *,
    draws: int = 20000,
    seed: int = 0,
    confidence: float = 0.99,
) -> dict:
    """Full batch, T steps, fresh public A_k: exact delta per draw, Hoeffding bound over draws.

    Per draw ``mu^2 = sum_k (chi^2_{p,k}/p)/sigma_k^2`` and ``delta_mu(eps)`` is exact (GDP). The
    mean over draws estimates (1); ``mean - sqrt(log(1/(1-confidence))/(2 draws))`` is a lower
    bound on delta(eps) with probability >= confidence over the draws (values lie in [0, 1]).
    """
    sig = np.asarray(sigmas, dtype=float)
    rng = np.random.default_rng(seed)
    chi = rng.chisquare(p, size=(draws, sig.size)) / p
    mu = np.sqrt(chi @ (1.0 / sig**2))
    with np.errstate(divide="ignore"):
        dl = special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2)
    dl = np.maximum(dl, 0.0)
    mean = float(dl.mean())
    slack = math.sqrt(math.log(1.0 / (1.0 - confidence)) / (2 * draws))
    mu0 = math.sqrt(float(np.sum(1.0 / sig**2)))
    d0 = float(special.ndtr(-eps / mu0 + mu0 / 2) - math.exp(eps) * special.ndtr(-eps / mu0 - mu0 / 2))
    return {
        "delta_mean": mean,
        "delta_lower": mean - slack,
        "hoeffding_slack": slack,
        "confidence": confidence,
        "draws": draws,
        "delta_no_projection": d0,
        "mu_no_projection": mu0,
    }
