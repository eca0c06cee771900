"""The candidate (K7) recomputed independently, against the project's audits on the issue-22 grid.

Reviewer's script. The candidate's RDP and its (eps, delta) conversion are recomputed here from
the formulas (own code: order grid 1.01..1024, the conversion of Balle et al. 2020, Thm 21,
``eps = rdp + log((a-1)/a) - (log delta + log a)/(a-1)``); only the audits are the project's
(``accounting.audit.dicesgd`` lattice audit, ``accounting.audit.dicesgd_storage``). For every
grid cell (DiceSGD defaults, flat clipping, grad bound G) it prints the candidate eps at the
certified z of docs/hidden-state.md, the candidate z for eps = 2, and both audits' eps_lower at
both z. Soundness requires candidate eps >= every audit eps_lower at the same z.

    PYTHONPATH=$PWD python benchmarks/review_conservation/grid_vs_audits.py [--samples 20000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.special import gammaln, logsumexp

from accounting.audit.dicesgd import dice_instance, dicesgd_epsilon_lower
from accounting.audit.dicesgd_storage import dicesgd_storage_epsilon_lower

N, B, T, C1, DELTA, EPS = 50_000, 1000.0, 150, 1.0, 1e-5, 2.0
Q = B / N
CELLS = [  # G/C1, C2/C1, certified z (docs/hidden-state.md grid table)
    (1.25, 0.5, 1.262),
    (1.5, 0.5, 191.9),
    (1.5, 1.0, 1.514),
    (2.0, 0.5, 383.2),
    (2.0, 1.0, 383.2),
    (2.0, 2.0, 2.019),
    (3.0, 0.5, 766.0),
    (3.0, 1.0, 766.0),
    (3.0, 2.0, 766.0),
    (11.0, 0.5, 3828.0),
    (11.0, 1.0, 3828.0),
    (11.0, 2.0, 3828.0),
]
ORDERS = np.concatenate([np.linspace(1.01, 2, 50), np.geomspace(2, 1024, 400)])


def cand_eps(z: float, g: float) -> float:
    n = np.arange(T + 1.0)
    lp = gammaln(T + 1) - gammaln(n + 1) - gammaln(T - n + 1) + n * math.log(Q) + (T - n) * math.log1p(-Q)
    s = (np.sqrt(n) + n * (g - C1) / C1) ** 2 / z**2
    best = math.inf
    for a in ORDERS:
        rdp = logsumexp(lp + (a - 1) * a * s / 2) / (a - 1)
        eps = rdp + math.log((a - 1) / a) - (math.log(DELTA) + math.log(a)) / (a - 1)
        best = min(best, eps)
    return max(best, 0.0)


def cand_z(g: float) -> float:
    lo, hi = 0.05, 1e5
    for _ in range(70):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if cand_eps(mid, g) > EPS else (lo, mid)
    return hi


def audits(z, g, c2, samples):
    inst = dice_instance(sample_rate=Q, steps=T, c1=C1, c2=c2, batch_size=B, noise_multiplier=z, grad_bound=g)
    lat, _ = dicesgd_epsilon_lower(inst, DELTA, samples=samples, confidence=0.99, seed=0)
    sto, _ = dicesgd_storage_epsilon_lower(
        sample_rate=Q, noise_multiplier=z, steps=T, delta=DELTA, c1=C1, c2=c2, batch_size=B, grad_bound=g,
        dataset_size=N,
    )  # fmt: skip
    return float(lat), float(sto)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20000)
    args = ap.parse_args()
    print(
        "| G/C1 | C2/C1 | z_cert | cand eps @z_cert | lattice @z_cert | storage @z_cert | cand z | "
        "lattice @cand z | storage @cand z |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    for g, c2, zc in CELLS:
        ce = cand_eps(zc, g)
        la, st = audits(zc, g, c2, args.samples)
        zk = cand_z(g)
        la2, st2 = audits(zk, g, c2, args.samples)
        worst = max(worst, la / ce, st / ce, la2 / EPS, st2 / EPS)
        print(
            f"| {g:g} | {c2:g} | {zc:g} | {ce:.4g} | {la:.4g} | {st:.4g} | {zk:.4g} | {la2:.4g} | {st2:.4g} |"
        )
    print(f"max audit / candidate: {worst:.4f} (must be <= 1)")


if __name__ == "__main__":
    main()
