"""Reviewer's independent evaluation of the comonotone dominating pair (no project code).

P* = sum_n pi_n N(mu_n, 1), Q* = N(0, 1), pi_n = Bin(n; T, q), mu_n = (sqrt(n) + n r) / z with
r = rho / C1. delta(eps) = max(H_gamma(P*||Q*), H_gamma(Q*||P*)), gamma = e^eps.

Two evaluations:

* ``delta_float``: log-space float64 (scipy log_ndtr, logsumexp), threshold by brentq on
  log S*(z) = log gamma. Used for fast grids and adversarial searches.
* ``delta_mp``: mpmath at 60 digits, threshold by bisection to 1e-40; the reference the product
  numbers are compared with (product value must be >= this, within its stated rounding).

A generic ``mu`` vector may be passed so that deliberately false variants reuse the same code.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
from scipy import optimize, special, stats


def mus(T: int, z: float, r: float) -> np.ndarray:
    n = np.arange(T + 1, dtype=float)
    return (np.sqrt(n) + n * r) / z


def log_pis(T: int, q: float) -> np.ndarray:
    n = np.arange(T + 1)
    if q >= 1.0:
        out = np.full(T + 1, -np.inf)
        out[T] = 0.0
        return out
    return stats.binom.logpmf(n, T, q)


def _log_sstar(x: float, lp: np.ndarray, mu: np.ndarray) -> float:
    return float(special.logsumexp(lp + mu * x - 0.5 * mu * mu))


def _root(f, target: float) -> float:
    lo, hi = -1.0, 1.0
    while f(lo) > target:
        lo *= 2
        if lo < -1e8:
            return -math.inf
    while f(hi) < target:
        hi *= 2
    return optimize.brentq(lambda x: f(x) - target, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)


def delta_float_mu(eps: float, lp: np.ndarray, mu: np.ndarray) -> tuple[float, float]:
    """(H(P*||Q*), H(Q*||P*)) for P* = sum exp(lp) N(mu, 1)."""
    lg = eps
    keep = np.isfinite(lp)
    lp, mu = lp[keep], mu[keep]
    f = lambda x: _log_sstar(x, lp, mu)  # noqa: E731
    zg = _root(f, lg)
    a = special.logsumexp(lp + special.log_ndtr(mu - zg))
    b = lg + special.log_ndtr(-zg)
    fwd = math.exp(a) * -math.expm1(b - a) if a > b else 0.0
    # reverse: S*(z') = 1/gamma; S* >= pi_0 (the mu = 0 mass), so no root when pi_0 >= 1/gamma
    lp0 = special.logsumexp(lp[mu == 0]) if np.any(mu == 0) else -math.inf
    if lp0 >= -lg:
        rev = 0.0
    else:
        zr = _root(f, -lg)
        a = special.log_ndtr(zr)
        b = lg + special.logsumexp(lp + special.log_ndtr(zr - mu))
        rev = math.exp(a) * -math.expm1(b - a) if a > b else 0.0
    return fwd, rev


def delta_float(eps: float, T: int, q: float, z: float, r: float) -> float:
    return max(delta_float_mu(eps, log_pis(T, q), mus(T, z, r)))


# ---------------------------------------------------------------- mpmath reference
mp.mp.dps = 60


def _mp_pis(T: int, q: float) -> list:
    qq = mp.mpf(q)
    return [mp.binomial(T, n) * qq**n * (1 - qq) ** (T - n) for n in range(T + 1)]


def _mp_mus(T: int, z: float, r: float) -> list:
    return [(mp.sqrt(n) + n * mp.mpf(r)) / mp.mpf(z) for n in range(T + 1)]


def delta_mp(eps: float, T: int, q: float, z: float, r: float, both: bool = False):
    pis, mu = _mp_pis(T, q), _mp_mus(T, z, r)
    g = mp.e ** mp.mpf(eps)

    def S(x):
        return mp.fsum(p * mp.e ** (m * x - m * m / 2) for p, m in zip(pis, mu, strict=True) if p != 0)

    def root(target):
        lo, hi = mp.mpf(-1), mp.mpf(1)
        while S(lo) > target:
            lo *= 2
            if lo < -1e6:
                return None
        while S(hi) < target:
            hi *= 2
        for _ in range(400):
            mid = (lo + hi) / 2
            if S(mid) < target:
                lo = mid
            else:
                hi = mid
            if hi - lo < mp.mpf(10) ** -45:
                break
        return (lo + hi) / 2

    def sf(x):
        return mp.ncdf(-x)

    zg = root(g)
    fwd = mp.fsum(p * sf(zg - m) for p, m in zip(pis, mu, strict=True)) - g * sf(zg)
    zr = root(1 / g)
    if zr is None:
        rev = mp.mpf(0)
    else:
        rev = mp.ncdf(zr) - g * mp.fsum(p * mp.ncdf(zr - m) for p, m in zip(pis, mu, strict=True))
    fwd, rev = max(fwd, mp.mpf(0)), max(rev, mp.mpf(0))
    return (fwd, rev) if both else max(fwd, rev)


def eps_for_delta(delta: float, T: int, q: float, z: float, r: float) -> float:
    f = lambda e: delta_float(e, T, q, z, r) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2
    return optimize.brentq(f, 0.0, hi, xtol=1e-12)


def z_for_eps(eps: float, delta: float, T: int, q: float, r: float) -> float:
    f = lambda z: math.log(delta_float(eps, T, q, z, r)) - math.log(delta)  # noqa: E731
    lo, hi = 0.05, 1.0
    while f(hi) > 0:
        hi *= 2
    return optimize.brentq(f, lo, hi, xtol=1e-10)


if __name__ == "__main__":
    T, q = 150, 0.02
    for G, claim in [(1.5, 7.29), (2, 11.08), (3, 18.69), (11, 79.72)]:
        zz = z_for_eps(2.0, 1e-5, T, q, G - 1)
        print(
            f"G={G}: z = {zz:.4f} (derivation says {claim}); "
            f"mp delta at z = {mp.nstr(delta_mp(2.0, T, q, zz, G - 1), 8)}"
        )
