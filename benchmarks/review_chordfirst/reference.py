"""Independent high-precision reference for log A_alpha of the Poisson-subsampled Gaussian
(mixture (1-q)N(0,s^2)+qN(1,s^2) vs N(0,s^2); A_alpha = E_{x~N(0,sigma^2)}[(1 + q Y)^alpha],
Y = exp((2x-1)/(2 sigma^2)) - 1).

moment_log_a: A - 1 = sum_{k>=2} C(alpha,k) q^k M_k,  M_k = E[Y^k]
  = sum_j C(k,j) (-1)^(k-j) exp(j(j-1) s) = sum_{m >= ceil(k/2)} s^m/m! * D(k,m),
  D(k,m) = sum_j C(k,j)(-1)^(k-j) (j(j-1))^m  (exact integers; zero for 2m < k).
  Valid (to far below double precision) when alpha^2 s << 1 and sigma >~ 1e3: the region
  |qY| >= 1 has probability ~exp(-sigma^2 log^2(1+1/q)/2).
quad_log_a: direct mpmath quadrature of the integral (independent cross-check, moderate sigma).
"""

import math
from functools import cache

import mpmath as mp


@cache
def D(k, m):
    return sum(math.comb(k, j) * (-1) ** (k - j) * (j * (j - 1)) ** m for j in range(k + 1))


def moment_log_a(q, sigma, alpha, K=24, M_extra=12, dps=60):
    with mp.workdps(dps):
        q = mp.mpf(q)
        sigma = mp.mpf(sigma)
        alpha = mp.mpf(alpha)
        s = 1 / (2 * sigma * sigma)
        total = mp.mpf(0)
        last = None
        for k in range(2, K + 1):
            m0 = (k + 1) // 2
            Mk = mp.fsum(s**m / mp.factorial(m) * D(k, m) for m in range(m0, m0 + M_extra))
            term = mp.binomial(alpha, k) * q**k * Mk
            total += term
            last = term
        # require the truncation to be negligible
        assert abs(last) < abs(total) * mp.mpf(10) ** (-25), (
            float(q),
            float(sigma),
            float(alpha),
            last,
            total,
        )
        return mp.log1p(total)


def quad_log_a(q, sigma, alpha, dps=50):
    with mp.workdps(dps):
        q = mp.mpf(q)
        sigma = mp.mpf(sigma)
        alpha = mp.mpf(alpha)

        def f(t):
            y = mp.expm1((2 * sigma * t - 1) / (2 * sigma * sigma))
            return mp.npdf(t) * (mp.exp(alpha * mp.log1p(q * y)) - 1)

        v = mp.quad(f, [-mp.inf, -20, -8, -3, 0, 3, 8, 20, mp.inf])
        return mp.log1p(v)


def int_log_a(q, sigma, n):
    """exact integer-order formula"""
    with mp.workdps(80):
        q = mp.mpf(q)
        s = 1 / (2 * mp.mpf(sigma) ** 2)
        am1 = mp.fsum(
            mp.binomial(n, k) * (1 - q) ** (n - k) * q**k * mp.expm1((k * k - k) * s) for k in range(n + 1)
        )
        return mp.log1p(am1)
