"""Adversarial search for orders where accounting.rdp_lower's bound exceeds the true RDP.

Usage (from the worktree root):
    PYTHONPATH=$PWD:$PWD/benchmarks/review_lower python benchmarks/review_lower/lower_search.py \
        [--module PATH] [--cases N] [--seed S] [--quad K]

--module: an rdp_lower.py to test instead of the package's (e.g. the parent commit's:
``git -C /work/main show d7e6119:accounting/rdp_lower.py > /tmp/old_rdp_lower.py``).
Integer orders <= 3000 are compared with the 60-digit binomial sum; every order is screened
against the project's exact RDP (an upper bound); the K fractional entries closest to that
screen (largest bound / computed) are then checked by mpmath quadrature.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time

import mpmath as mp
import numpy as np
from reference import log_a_int, log_a_quad

from accounting.rdp import subsampled_gaussian_rdp

_INT_REF_MAX = 3000


def load(path: str | None):
    if path is None:
        import accounting.rdp_lower as m

        return m
    spec = importlib.util.spec_from_file_location("rdp_lower_under_test", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _q(rng) -> float:
    u = rng.random()
    if u < 0.6:
        return float(10.0 ** rng.uniform(-12, 0))
    if u < 0.9:
        return float(1.0 - 10.0 ** rng.uniform(-12, -0.3))
    return float(rng.choice([1e-12, 1e-6, 4.86e-5, 0.5, 1 - 1e-12, 1.0]))


def _sigma_for_shift(q: float, target: float) -> float | None:
    """sigma with g_24 = 24 log r + 552 s = target (the shift M of _StepMoments)."""
    lr = math.log(q) - math.log1p(-q)
    s = (target - 24.0 * lr) / 552.0
    return float(math.sqrt(0.5 / s)) if s > 0 else None


def _alphas(rng) -> np.ndarray:
    ints = np.arange(2.0, 31.0)
    near_int = np.array([n + 10.0 ** rng.uniform(-12, -1) for n in rng.integers(1, 30, 8)])
    near_one = 1.0 + 10.0 ** rng.uniform(-12, -0.5, 6)
    frac = rng.uniform(1.0, 30.0, 8)
    edges = np.array(
        [23.5, 24.0, 24.0 + 1e-9, 24.5, 25.0, 25.5, 26.0, 26.5, 27.0, 9999.0, 1e4, 1e4 + 0.5, 10001.0]
    )
    big = 10.0 ** rng.uniform(1.5, 6.0, 6)
    big_int = np.floor(10.0 ** rng.uniform(1.5, 3.4, 4))
    a = np.unique(np.concatenate([ints, near_int, near_one, frac, edges, big, big_int]))
    return a[a > 1.0]


def _alpha_for_overflow(q: float, sigma: float, rng) -> list[float]:
    """Orders where exp(g_top - M) is near the double overflow (g_top - M ~ 709)."""
    s = 0.5 / (sigma * sigma)
    lr = math.log(q) - math.log1p(-q)
    g = [i * lr + (i * i - i) * s for i in range(25)]
    m = max(g)
    out = []
    for target in (700.0, 709.0, 709.78, 710.0, 720.0):
        # solve a^2 s + a (lr - s) - (m + target) = 0
        b, c = lr - s, -(m + target)
        disc = b * b - 4 * s * c
        if disc > 0:
            a = (-b + math.sqrt(disc)) / (2 * s)
            if 1.0 < a < 1e6:
                out += [a, math.floor(a), math.ceil(a) + 0.5]
    return out


def gen_case(rng):
    q = _q(rng)
    kind = rng.random()
    if kind < 0.55:
        sigma = float(10.0 ** rng.uniform(-3, 6))
    elif kind < 0.85 and 0 < q < 1:
        sigma = _sigma_for_shift(q, float(rng.choice([600.0, 1200.0, 600.0 + rng.uniform(-40, 40)])))
        if sigma is None:
            sigma = float(10.0 ** rng.uniform(-3, 1))
    else:
        sigma = float(10.0 ** rng.uniform(-1, 0.3))  # small noise, the subnormal regime
    a = list(_alphas(rng))
    if 0 < q < 1:
        a += _alpha_for_overflow(q, sigma, rng)
    a = np.unique(np.array([x for x in a if x > 1.0], dtype=float))
    return q, sigma, a


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--module")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quad", type=int, default=20)
    args = ap.parse_args()
    mod = load(args.module)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    worst_int = (0.0, None)
    n_int = n_all = 0
    bad = []
    frac_pool = []
    big_pool = []
    for _ in range(args.cases):
        q, sigma, a = gen_case(rng)
        low = mod.lower_rdp_steps(q, sigma, a)
        # the computed RDP needs GBs at fractional orders ~1e5 with small noise: screen <= 3000 only
        up = np.full(a.size, np.inf)
        small = a <= _INT_REF_MAX
        up[small] = subsampled_gaussian_rdp(q, sigma, a[small], evaluation="exact").rdp
        n_all += a.size
        for j, alpha in enumerate(a):
            if low[j] <= 0.0:
                continue
            if alpha == math.floor(alpha) and alpha <= _INT_REF_MAX:
                n_int += 1
                ref = log_a_int(q, sigma, int(alpha)) / (alpha - 1)
                r = float(mp.mpf(low[j]) / ref) if ref > 0 else math.inf
                if r > worst_int[0]:
                    worst_int = (r, (q, sigma, float(alpha)))
                if r > 1.0:
                    bad.append(("int", q, sigma, float(alpha), float(low[j]), float(ref)))
            else:
                ratio = low[j] / up[j] if up[j] > 0 else math.inf
                if ratio > 1.0:
                    bad.append(("above-computed", q, sigma, float(alpha), float(low[j]), float(up[j])))
                if alpha <= _INT_REF_MAX:
                    frac_pool.append((ratio, q, sigma, float(alpha), float(low[j])))
                else:
                    big_pool.append((q, sigma, float(alpha), float(low[j])))
    print(
        f"{args.cases} (q, sigma) cases, {n_all} (case, order) pairs, {n_int} integer pairs vs binomial sum"
    )
    print(f"worst integer ratio bound/true = {worst_int[0]!r} at (q, sigma, alpha) = {worst_int[1]}")
    frac_pool.sort(reverse=True)
    print(
        f"fractional/large pairs screened: {len(frac_pool)}; top ratio bound/computed = "
        f"{frac_pool[0][0] if frac_pool else None}"
    )
    worst_q = (0.0, None)
    for _ratio, q, sigma, alpha, low in frac_pool[: args.quad]:
        ref = log_a_quad(q, sigma, alpha, dps=30) / (mp.mpf(alpha) - 1)
        r = float(mp.mpf(low) / ref) if ref > 0 else math.inf
        if r > worst_q[0]:
            worst_q = (r, (q, sigma, alpha))
        if r > 1.0:
            bad.append(("quad", q, sigma, alpha, low, float(ref)))
    picks = rng.choice(len(big_pool), size=min(args.quad, len(big_pool)), replace=False) if big_pool else []
    worst_b = (0.0, None)
    for k in picks:
        q, sigma, alpha, low = big_pool[int(k)]
        ref = log_a_quad(q, sigma, alpha, dps=30) / (mp.mpf(alpha) - 1)
        r = float(mp.mpf(low) / ref) if ref > 0 else math.inf
        if r > worst_b[0]:
            worst_b = (r, (q, sigma, alpha))
        if r > 1.0:
            bad.append(("quad-big", q, sigma, alpha, low, float(ref)))
    print(
        f"orders > {_INT_REF_MAX} (not integer-checked) with a positive bound: {len(big_pool)}; "
        f"{len(picks)} random ones by quadrature: worst bound/true = {worst_b[0]!r} at {worst_b[1]}"
    )
    print(
        f"quadrature-checked the top {min(args.quad, len(frac_pool))}: "
        f"worst bound/true = {worst_q[0]!r} at {worst_q[1]}"
    )
    print(f"violations: {len(bad)}")
    for b in bad[:20]:
        print("  ", b)
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
