"""Reusable numerical properties behind the checks (and the hypothesis tests in ``tests/``).

Every function here computes one side of a paper's formula or the exact quantity it is
compared with. They are small and independent so that a reviewer can test each on its own;
``tests/verification/test_claims_properties.py`` runs hypothesis on them.

numpy/scipy only at import; mpmath (shipped with sympy) and hypothesis are imported lazily.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

# --------------------------------------------------------------------------- Gaussian mechanism


def classic_gaussian_sigma(eps: float, delta: float, sensitivity: float = 1.0) -> float:
    """Dwork-Roth Thm 3.22 / DiceSGD Def. 2.2: sigma = Delta sqrt(2 ln(1.25/delta)) / eps."""
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / eps


def gaussian_delta_exact(eps: float, sensitivity: float, sigma: float, *, precise: bool = False) -> float:
    """The exact (tight) delta(eps) of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    delta(eps) = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D). It is the smallest delta
    for which N(f(D), s^2 I) is (eps, delta)-DP, so a target delta below it is a violation.
    ``precise=True`` evaluates with mpmath at 50 digits (used when the two terms nearly cancel).
    """
    a = sensitivity / (2.0 * sigma) - eps * sigma / sensitivity
    b = -sensitivity / (2.0 * sigma) - eps * sigma / sensitivity
    if precise:
        import mpmath as mp

        mp.mp.dps = 50
        val = mp.ncdf(a) - mp.e ** mp.mpf(eps) * mp.ncdf(b)
        return float(val)
    first = math.exp(special.log_ndtr(a))
    second = math.exp(eps + special.log_ndtr(b))
    return max(first - second, 0.0)


def gdp_delta(eps: float, mu: float) -> float:
    """Exact delta(eps) of mu-GDP (a Gaussian mechanism with sensitivity/std = mu)."""
    return gaussian_delta_exact(eps, mu, 1.0)


def gdp_epsilon(delta: float, mu: float) -> float:
    """Exact epsilon of mu-GDP at ``delta`` by bisection on the decreasing delta(eps)."""
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gdp_delta(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
    return hi


# --------------------------------------------------------------------------- Renyi divergences


def renyi_gaussian_closed(alpha: float, a: float, b: float, sigma: float) -> float:
    """D_alpha(N(a, s^2) || N(b, s^2)) = alpha (a-b)^2 / (2 s^2) (Gil et al. 2013)."""
    return alpha * (a - b) ** 2 / (2.0 * sigma**2)


def renyi_gaussian_quadrature(alpha: float, a: float, b: float, sigma: float, dps: int = 40) -> float:
    """The same divergence by direct numerical integration (mpmath), independent of the formula."""
    import mpmath as mp

    mp.mp.dps = dps
    al, a_, b_, s = (mp.mpf(v) for v in (alpha, a, b, sigma))

    def integrand(x):
        lp = -((x - a_) ** 2) / (2 * s**2)
        lq = -((x - b_) ** 2) / (2 * s**2)
        return mp.exp(al * lp + (1 - al) * lq) / mp.sqrt(2 * mp.pi * s**2)

    centre = al * a_ + (1 - al) * b_
    integral = mp.quad(integrand, [-mp.inf, centre - 10 * s, centre, centre + 10 * s, mp.inf])
    return float(mp.log(integral) / (al - 1))


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1) for x > 0, without overflow for large x."""
    x = np.asarray(x, dtype=float)
    with np.errstate(over="ignore"):
        return np.where(
            x > 30.0, x + np.log1p(-np.exp(-np.minimum(x, 700.0))), np.log(np.expm1(np.minimum(x, 30.0)))
        )


def sgm_rdp_integer(q: float, z: float, alpha: int) -> float:
    """Exact RDP of the Poisson-subsampled Gaussian at an integer order (add/remove adjacency).

    D_alpha((1-q)N(0,z^2) + qN(1,z^2) || N(0,z^2)) = log(sum_k C(a,k)(1-q)^(a-k) q^k
    exp((k^2-k)/(2 z^2))) / (a-1) (Mironov, Talwar, Zhang 2019, Sec. 3.3). For integer orders
    the other direction is never larger (their Thm 5), so this is the exact RDP. Used as an
    independent cross-check of :mod:`accounting.rdp` and as a private fallback when it is absent.
    """
    if alpha < 2 or int(alpha) != alpha:
        raise ValueError("integer order >= 2 required")
    a = int(alpha)
    if q >= 1.0:
        return a / (2.0 * z**2)
    # Sum the nonnegative terms of A - 1 (binomial weights sum to 1): a plain log-sum-exp of A
    # rounds A = 1 + 1e-17 to 1 at tiny q, i.e. the RDP to 0, which would hide a violation.
    k = np.arange(2, a + 1, dtype=float)
    log_terms = (
        special.gammaln(a + 1)
        - special.gammaln(k + 1)
        - special.gammaln(a - k + 1)
        + (a - k) * math.log1p(-q)
        + k * math.log(q)
        + _log_expm1((k * k - k) / (2.0 * z**2))
    )
    return float(np.logaddexp(0.0, special.logsumexp(log_terms)) / (a - 1))


def sgm_rdp(q: float, z: float, orders: np.ndarray) -> tuple[np.ndarray, str]:
    """Exact subsampled-Gaussian RDP from :mod:`accounting.rdp`.

    Returns ``(rdp, source)`` where source names what computed it, for the evidence.
    """
    from accounting.rdp import subsampled_gaussian_rdp

    curve = subsampled_gaussian_rdp(q, z, np.asarray(orders, dtype=float))
    return np.asarray(curve.rdp, dtype=float), "accounting.rdp.subsampled_gaussian_rdp"


# --------------------------------------------------------------------------- clipping


def clip(v: np.ndarray, c: float) -> np.ndarray:
    """clip(v, C) = min(1, C/||v||) v (DiceSGD eq. 2)."""
    v = np.asarray(v, dtype=float)
    n = float(np.linalg.norm(v))
    return v if n <= c else v * (c / n)


def clip_residual(v: np.ndarray, c: float) -> np.ndarray:
    """The error-feedback map c(v) = v - clip(v, C) of DiceSGD Lemma A.1."""
    return np.asarray(v, dtype=float) - clip(v, c)


def nonexpansive_gap(x: np.ndarray, y: np.ndarray, c: float) -> float:
    """||c(x) - c(y)|| - ||x - y||; positive means the non-expansiveness claim fails."""
    return float(np.linalg.norm(clip_residual(x, c) - clip_residual(y, c)) - np.linalg.norm(x - y))


def variance_gap(
    points: np.ndarray, weights: np.ndarray, mapping: Callable[[np.ndarray], np.ndarray]
) -> float:
    """Var(c(X)) - Var(X) for a discrete X (rows of ``points`` with probabilities ``weights``)."""
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    pts = np.asarray(points, dtype=float)
    mapped = np.array([mapping(p) for p in pts])

    def var(a: np.ndarray) -> float:
        mean = (w[:, None] * a).sum(axis=0)
        return float((w * ((a - mean) ** 2).sum(axis=1)).sum())

    return var(mapped) - var(pts)


def bisect_root(fn: Callable[[float], float], lo: float, hi: float, tol: float = 1e-13) -> float:
    """Root of a nondecreasing scalar function on [lo, hi] (sign change required)."""
    flo, fhi = fn(lo), fn(hi)
    if flo > 0 or fhi < 0:
        raise ValueError(f"no sign change on [{lo}, {hi}]: f(lo)={flo}, f(hi)={fhi}")
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        if fn(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol:
            break
    return 0.5 * (lo + hi)


# --------------------------------------------------------------------------- DiceSGD App. B.1


def b1_instance(c: float) -> tuple[int, np.ndarray]:
    """C' = ceil(C) + 1 and the samples xi (C' at -1, one at C') of DiceSGD App. B.1."""
    cp = math.ceil(c) + 1
    xi = np.array([-1.0] * cp + [float(cp)])
    return cp, xi


def b1_grad(x: float, xi: np.ndarray, cp: float) -> np.ndarray:
    """Per-sample gradients of the Huber-like loss of App. B.1: clip of (x - xi) at C'."""
    return np.clip(x - xi, -cp, cp)


def b1_clipped_fixed_point(c: float) -> float:
    """Exact root of (1/N) sum clip(grad_i(x), C) = 0 (the DPSGD-GC fixed point), by bisection."""
    cp, xi = b1_instance(c)

    def mean_clipped(x: float) -> float:
        return float(np.mean(np.clip(b1_grad(x, xi, cp), -c, c)))

    return bisect_root(mean_clipped, -2.0 * cp - 2.0, 2.0 * cp + 2.0)


def b1_optimum(c: float) -> float:
    """Exact root of the unclipped mean gradient (the stationary point x* of f)."""
    cp, xi = b1_instance(c)
    return bisect_root(lambda x: float(np.mean(b1_grad(x, xi, cp))), -2.0 * cp - 2.0, 2.0 * cp + 2.0)


# --------------------------------------------------------------------------- D2P2 Lemma 4 / 5


def rdp_to_delta_bound(eps: float, alpha: float, rdp: float) -> float:
    """exp[(alpha-1)(rdp - eps)]: the delta that D2P2 Lemma 4 pairs with one order."""
    return math.exp((alpha - 1.0) * (rdp - eps))


def gaussian_lemma4_min_delta(eps: float, mu: float, alphas: np.ndarray | None = None) -> tuple[float, float]:
    """min over alpha > 1 of exp[(alpha-1)(alpha mu^2/2 - eps)] for a Gaussian with mu = D/s.

    Closed form: the exponent is minimised at alpha - 1 = (eps - mu^2/2)/mu^2 when that is > 0.
    Returns ``(min_delta, argmin_alpha)``.
    """
    t = (eps - mu * mu / 2.0) / (mu * mu)
    if t <= 0:
        return 1.0, 1.0
    alpha = 1.0 + t
    return math.exp(t * (alpha * mu * mu / 2.0 - eps)), alpha


def lemma5_domain(q: float, sigma: float, eta: float) -> bool:
    """D2P2 Lemma 5's stated domain: q < 1/10 and 1 < eta <= (sigma^2/2) log(1/q)."""
    return 0 < q < 0.1 and 1 < eta <= 0.5 * sigma**2 * math.log(1.0 / q)


def lemma5_bound(q: float, sigma: float, eta: float) -> float:
    """D2P2 Lemma 5's bound 7 q^2 eta / sigma^2."""
    return 7.0 * q * q * eta / sigma**2


def mtz_domain(p: float, sigma: float, alpha: float, *, reading: str, sensitivity: float = 1.0) -> bool:
    """Conditions of DiceSGD Lemma A.10 as rendered, for noise std ``sigma`` and sensitivity C.

    The lemma requires sigma > 4C and states the alpha conditions in sigma itself (not sigma/C),
    which is how the paper applies it (sigma = sigma1 absolute, C = 2 C1/B). With C = 1 sigma is
    also the noise multiplier and the conditions coincide with Mironov, Talwar, Zhang (2019) Thm 11
    up to the form of C3:
    ``reading="literal"``: C3 = 1 + 1/(p(alpha-1)) as rendered;
    ``reading="mtz"``: C3 = ln(1 + 1/(p(alpha-1))) as in the cited theorem.
    """
    if not (0 < p <= 0.2 and sigma > 4 * sensitivity and alpha > 1):
        return False
    inner = 1.0 + 1.0 / (p * (alpha - 1.0))
    if reading == "literal":
        c3 = inner
    elif reading == "mtz":
        c3 = math.log(inner)
    else:
        raise ValueError(reading)
    cond1 = alpha <= 0.5 * sigma**2 * c3 - 2.0 * math.log(sigma)
    den = c3 + math.log(p * alpha) + 1.0 / (2.0 * sigma**2)
    num = 0.5 * sigma**2 * c3**2 - math.log(5.0) - 2.0 * math.log(sigma)
    cond2 = den > 0 and alpha <= num / den
    return bool(cond1 and cond2)


# --------------------------------------------------------------------------- hypothesis search


def search_counterexample(
    strategy: Any,
    is_counterexample: Callable[[Any], bool],
    *,
    max_examples: int,
    seed: int,
) -> Any | None:
    """Run hypothesis programmatically with a fixed seed; return a (shrunk) counterexample or None.

    ``hypothesis.find`` searches for an example satisfying the predicate, i.e. violating the
    claim, with ``database=None`` so that runs do not depend on a local example database.
    """
    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import NoSuchExample

    cfg = settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    try:
        return find(strategy, is_counterexample, settings=cfg, random=random.Random(seed))
    except NoSuchExample:
        return None


# --------------------------------------------------------------------------- RDP -> (eps, delta)


def eps_from_rdp(orders: np.ndarray, rdp: np.ndarray, delta: float) -> tuple[float, str]:
    """epsilon from an RDP curve: :mod:`accounting.conversion` if present, else Mironov's Prop. 3.

    The fallback eps = min_alpha rdp(alpha) + log(1/delta)/(alpha-1) is a valid (looser) upper
    bound, so a check that uses it can only be more conservative. Returns (eps, source).
    """
    from accounting.conversion import rdp_to_epsilon
    from accounting.rdp import RdpCurve

    curve = RdpCurve(np.asarray(orders, dtype=float), np.asarray(rdp, dtype=float), ())
    return float(rdp_to_epsilon(curve, delta).epsilon), "accounting.conversion.rdp_to_epsilon"


def schedule_rdp(q: float, multipliers: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, str]:
    """Composed RDP of Poisson-subsampled Gaussians with one noise multiplier per step."""
    from accounting.rdp import subsampled_gaussian_rdp

    curve = subsampled_gaussian_rdp(q, np.asarray(multipliers, dtype=float), np.asarray(orders, dtype=float))
    return np.asarray(curve.rdp, dtype=float), "accounting.rdp.subsampled_gaussian_rdp"


def sgm_rdp_quadrature(q: float, z: float, alpha: float, dps: int = 40) -> float:
    """Exact RDP of the Poisson-subsampled Gaussian at any order alpha > 1 by 1-D quadrature.

    With x = z t and t ~ N(0, 1), the likelihood ratio of the mixture (1-q)N(0,z^2) + qN(1,z^2)
    to N(0, z^2) is r(t) = 1 - q + q exp(t/z - 1/(2 z^2)). Then
    D_alpha(mix || N0) = log E[r^alpha]/(alpha-1) and D_alpha(N0 || mix) = log E[r^(1-alpha)]/(alpha-1);
    the add/remove RDP is the larger of the two. mpmath at ``dps`` digits keeps log(1 + tiny) exact
    enough for RDP values far below 1. Used to decide fractional orders where only an upper
    bound is otherwise available.
    """
    import mpmath as mp

    mp.mp.dps = dps  # callers (d2p2 Lemma 5) go on computing at this precision
    return _sgm_rdp_quadrature_memo(float(q), float(z), float(alpha), int(dps))


@functools.lru_cache(maxsize=256)
def _sgm_rdp_quadrature_memo(q: float, z: float, alpha: float, dps: int) -> float:
    """:func:`sgm_rdp_quadrature` itself, memoised: a few seconds per call, and several checks
    evaluate the same (q, z, alpha) point (e.g. Lemma 5's searches under two log bases)."""
    import mpmath as mp

    with mp.workdps(dps):
        return _sgm_rdp_quadrature_at(mp, q, z, alpha)


def _sgm_rdp_quadrature_at(mp, q: float, z: float, alpha: float) -> float:
    qq, zz, al = mp.mpf(q), mp.mpf(z), mp.mpf(alpha)

    def ratio(t):
        return 1 - qq + qq * mp.exp(t / zz - 1 / (2 * zz * zz))

    def expect(power):
        f = lambda t: ratio(t) ** power * mp.npdf(t)  # noqa: E731
        return mp.quad(f, [-mp.inf, -10, 0, 10, mp.inf])

    d1 = mp.log(expect(al)) / (al - 1)
    d2 = mp.log(expect(1 - al)) / (al - 1)
    return float(max(d1, d2))
