"""Phase 2: the product's dominating-pair module against the reviewer's mpmath reference.

Run with the implementation's worktree first on the path, e.g.
    PYTHONPATH=/work/wt/como:. python benchmarks/review_dominating/implementation.py [--random 60]

Checks (each line says what failed, if anything):
* delta: product >= mpmath reference (shifts inflated by the same FLOAT_MARGIN), and not
  much above (ratio printed), on random (T, q, z, rho, eps) including tails, q = 1, eps up to 50;
* epsilon: product >= reference epsilon at the same delta;
* the 15-cell grid: the product's calibrated z and regime at eps = 2, delta = 1e-5, and the
  reference delta at that z (must be <= 1e-5 when the regime is the pair);
* edge inputs (must raise InvalidParameter naming the parameter, or return a conservative value).
"""

from __future__ import annotations

import argparse
import math
import sys

import mpmath as mp
import numpy as np
from scipy import optimize

sys.path.insert(1, __file__.rsplit("/", 1)[0])
import pair  # noqa: E402

MARGIN = 1e-6  # FLOAT_MARGIN of the conservation module (relative, on S(n))


def ref_delta(eps, T, q, z, r):
    # mu_n sqrt(1 + margin): same as z / sqrt(1 + margin)
    return pair.delta_mp(eps, T, q, z / math.sqrt(1 + MARGIN), r)


def ref_eps(delta, T, q, z, r):
    zz = z / math.sqrt(1 + MARGIN)
    f = lambda e: float(mp.log(max(pair.delta_mp(e, T, q, zz, r), mp.mpf(10) ** -1000))) - math.log(delta)  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2
    return optimize.brentq(f, 0.0, hi, xtol=1e-12)


def random_checks(n, seed):
    from accounting import hidden_state_dominating as hsd

    rng = np.random.default_rng(seed)
    bad = 0
    worst_hi = 1.0
    for _ in range(n):
        T = int(rng.choice([1, 2, 3, 10, 150, 400]))
        q = float(rng.choice([1e-3, 0.02, 0.1, 0.5, 0.99, 1.0]))
        z = float(10 ** rng.uniform(-0.7, 2.7))
        r = float(rng.choice([0.0, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0]))
        eps = float(rng.choice([0.0, 0.05, 0.5, 2.0, 8.0, 20.0, 50.0]))
        got = hsd.dominating_pair_delta(eps, sample_rate=q, noise_multiplier=z, steps=T, c1=1.0, rho=r)
        ref = ref_delta(eps, T, q, z, r)
        flag = ""
        if mp.mpf(got) < ref:
            flag = "  <-- PRODUCT BELOW REFERENCE"
            bad += 1
        elif ref > mp.mpf(10) ** -300:
            worst_hi = max(worst_hi, float(mp.mpf(got) / ref))
        print(f"delta T={T} q={q} z={z:.4g} r={r} eps={eps}: product {got:.12g} ref {mp.nstr(ref, 12)}{flag}")
    print(f"random delta checks: {bad} below the reference; largest product/reference {worst_hi:.6g}")
    return bad


def eps_checks(seed):
    from accounting import hidden_state_dominating as hsd

    rng = np.random.default_rng(seed + 1)
    bad = 0
    for _ in range(12):
        T = int(rng.choice([1, 10, 150]))
        q = float(rng.choice([0.02, 0.3, 1.0]))
        z = float(10 ** rng.uniform(0, 2))
        r = float(rng.choice([0.0, 0.5, 10.0]))
        d = float(rng.choice([1e-3, 1e-5, 1e-10, 1e-30, 1e-200]))
        got = hsd.dominating_pair_epsilon(d, sample_rate=q, noise_multiplier=z, steps=T, c1=1.0, rho=r)
        ref = ref_eps(d, T, q, z, r)
        flag = "  <-- PRODUCT BELOW REFERENCE" if got < ref - 1e-12 else ""
        bad += bool(flag)
        print(f"eps T={T} q={q} z={z:.4g} r={r} delta={d}: product {got:.12g} ref {ref:.12g}{flag}")
    return bad


def large_t():
    """T up to MAX_STEPS (the product drops binomial terms e^-750 below the largest): product vs the
    reviewer's float log-space evaluation over all T + 1 terms (no outward rounding, ~1e-12)."""
    from accounting import hidden_state_dominating as hsd

    for T, q, z, r, eps in [
        (10_000, 0.01, 30.0, 1.0, 2.0),
        (100_000, 0.001, 50.0, 0.5, 1.0),
        (1_000_000, 1e-4, 60.0, 0.0, 0.5),
        (1_000_000, 0.02, 3000.0, 1.0, 2.0),
        (200_000, 0.5, 2000.0, 0.0, 0.1),
        (1_000_000, 1e-4, 60.0, 0.0, 0.0),
    ]:
        got = hsd.dominating_pair_delta(eps, sample_rate=q, noise_multiplier=z, steps=T, c1=1.0, rho=r)
        ref = pair.delta_float(eps, T, q, z / math.sqrt(1 + MARGIN), r)
        flag = "  <-- PRODUCT BELOW FLOAT REFERENCE" if got < ref * (1 - 1e-9) else ""
        print(f"large T={T} q={q} z={z} r={r} eps={eps}: product {got:.12g} float ref {ref:.12g}{flag}")


def grid():
    from accounting import hidden_state_conservation as hsc
    from dptheory import api

    with hsc.left_out():
        rep = api.calibrate(defaults="paper", eps=2.0, delta=1e-5, algo="dicesgd", grad_bound=3.0, c2=1.0)
        print("inside left_out(): regimes", sorted(rep.details["regimes"]), "z", rep.noise_multiplier)

    print(
        "G/C1 C2/C1 | product z, regime, eps | reference delta at (eps = 2, product z) | ref z (pair alone)"
    )
    for G in (1.25, 1.5, 2, 3, 11):
        zref = pair.z_for_eps(2.0, 1e-5, 150, 0.02, (G - 1) * 1.0)
        for C2 in (0.5, 1, 2):
            rep = api.calibrate(
                defaults="paper", eps=2.0, delta=1e-5, algo="dicesgd", grad_bound=float(G), c2=float(C2)
            )
            z = float(rep.noise_multiplier)
            reg = rep.details["regime"]
            d = ref_delta(2.0, 150, 0.02, z, G - 1.0)
            flag = (
                "  <-- pair regime but reference delta > 1e-5"
                if reg == "conservation-pair" and d > 1e-5
                else ""
            )
            print(f"{G:5} {C2:4} | {z:.6g} {reg} {rep.epsilon:.6g} | {mp.nstr(d, 8)} | {zref:.6g}{flag}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--random", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-grid", action="store_true")
    a = ap.parse_args()
    large_t()
    random_checks(a.random, a.seed)
    eps_checks(a.seed)
    if not a.skip_grid:
        grid()
