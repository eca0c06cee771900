"""How much room does the pair leave for a fixed-S adversary? (reviewer's code, no project imports)

The ideal store-then-release instance of the abstract model (others saturate the state for the
whole run and drain it before the last release, 1-D): releases t < T-1 carry b_t c, the last one
n a + b_{T-1} c with n = xi''s inclusions before it (c = 1/z, a = r/z in noise units). It is an
instance of C3-C4's model, so its delta must lie below the pair's; how far below says how much any
argument that conditions on S could still gain over the pair. Its likelihood ratio is exact (a
forward recursion over the inclusion count); H_gamma(P||Q) = E_P (1 - gamma/L)_+ is estimated by
Monte Carlo under P with a 99% empirical-Bernstein interval.

    python benchmarks/review_dominating/ideal_storage.py [--samples 20000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pair


def log_lr(xi, q, c, a):
    """log L for samples xi (M, T) of the instance."""
    M, T = xi.shape
    logf = np.full((M, T), -np.inf)  # log f[k], k = 0..T-1 inclusions among steps < T-1
    logf[:, 0] = 0.0
    lq, l1q = math.log(q), math.log1p(-q)
    for t in range(T - 1):
        l1 = c * xi[:, t] - c * c / 2
        inc = np.concatenate([np.full((M, 1), -np.inf), logf[:, :-1] + lq + l1[:, None]], axis=1)
        logf = np.logaddexp(logf + l1q, inc)
    k = np.arange(T)[None, :]
    x = xi[:, -1:]
    s0, s1 = k * a, k * a + c
    last = np.logaddexp(l1q + s0 * x - s0 * s0 / 2, lq + s1 * x - s1 * s1 / 2)
    tot = logf + last
    m = tot.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(tot - m).sum(axis=1, keepdims=True)))[:, 0]


def sample_p(rng, M, T, q, c, a):
    b = rng.random((M, T)) < q
    n = b[:, :-1].sum(axis=1)
    mean = np.concatenate([b[:, :-1] * c, (n * a + b[:, -1] * c)[:, None]], axis=1)
    return mean + rng.standard_normal((M, T))


def bernstein(x, alpha=0.01):
    n = x.size
    m, v = x.mean(), x.var(ddof=1)
    w = math.sqrt(2 * v * math.log(3 / alpha) / n) + 3 * math.log(3 / alpha) / n
    return max(m - w, 0.0), m + w


def last_release_eps(delta, T, q, z, r):
    """Exact epsilon at ``delta`` of the last release alone (post-processing of the instance, hence a
    lower bound on its epsilon): sum_n Bin(n; T-1, q) [(1-q) N(n a, 1) + q N(n a + c, 1)] vs N(0, 1)."""
    from scipy import optimize, stats

    n = np.arange(T)
    lb = stats.binom.logpmf(n, T - 1, q)
    lp = np.concatenate([lb + math.log1p(-q), lb + math.log(q)])
    mu = np.concatenate([n * r / z, n * r / z + 1.0 / z])
    f = lambda e: max(pair.delta_float_mu(e, lp, mu)) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2
    return optimize.brentq(f, 0.0, hi, xtol=1e-10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    a_ = ap.parse_args()
    rng = np.random.default_rng(a_.seed)
    T, q, delta = 150, 0.02, 1e-5
    for G in (1.5, 2.0, 3.0, 11.0):
        r = G - 1.0
        z = pair.z_for_eps(2.0, delta, T, q, r)
        c, a = 1.0 / z, r / z
        xi = np.concatenate([sample_p(rng, a_.samples, T, q, c, a) for _ in range(1)])
        ll = log_lr(xi, q, c, a)
        out = []
        for eps in (0.25, 0.5, 1.0, 2.0):
            val = -np.expm1(np.minimum(eps - ll, 0.0))  # (1 - gamma/L)_+
            lo, hi = bernstein(val)
            pd = pair.delta_float(eps, T, q, z, r)
            out.append(f"eps={eps}: instance delta in [{lo:.3g}, {hi:.3g}], pair {pd:.3g}")
        print(f"G/C1={G}: pair z = {z:.4g} | " + " | ".join(out), flush=True)
        print(
            f"   exact: last release alone at the pair's z has eps = "
            f"{last_release_eps(delta, T, q, z, r):.4f}"
            f" at delta = {delta} (the pair certifies 2)",
            flush=True,
        )


if __name__ == "__main__":
    main()
