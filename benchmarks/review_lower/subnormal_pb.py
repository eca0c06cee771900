"""Targeted search: fractional orders below 23 whose P_B terms (the top moment E[t^alpha] and
i <= floor(alpha)) lie more than ~708 e-folds below the shift M (subnormal), while the P_A
terms reach up to i = floor(alpha) + 2, within 600 of M, so the log-space recomputation is not
triggered.  Compares rdp_lower's bound with the project's computed RDP and, for the worst
cases, with mpmath quadrature (reference.py).

Usage: PYTHONPATH=$PWD:$PWD/benchmarks/review_lower python benchmarks/review_lower/subnormal_pb.py [--cases N]
       [--tmin -745.13 --tmax -744.45]   (the last subnormal e-fold: the largest excess)
"""

from __future__ import annotations

import argparse
import math

import mpmath as mp
import numpy as np
from lower_search import load
from reference import log_a_quad

from accounting.rdp import subsampled_gaussian_rdp


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=4000)
    ap.add_argument("--quad", type=int, default=6)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--tmin", type=float, default=-744.4, help="g_top - M range (e^-745.13 rounds to 0)")
    ap.add_argument("--tmax", type=float, default=-700.0)
    ap.add_argument("--module", help="an rdp_lower.py to test instead of the package's")
    args = ap.parse_args()
    lower_rdp_steps = load(args.module).lower_rdp_steps
    rng = np.random.default_rng(args.seed)
    found = []
    tried = 0
    for _ in range(args.cases):
        n = int(rng.integers(1, 23))
        alpha = n + float(rng.uniform(1e-6, 1.0 - 1e-6))
        lr = float(rng.uniform(-27.0, 27.0))
        t = float(rng.uniform(args.tmin, args.tmax))
        s = (-t - (24.0 - alpha) * lr) / (552.0 - alpha * (alpha - 1.0))
        if not s > 0:
            continue
        g24, g_a = 24.0 * lr + 552.0 * s, (n + 2) * lr + (n + 2) * (n + 1) * s
        if g24 - g_a > 600.0 or g24 < 600.0:
            continue
        q = 1.0 / (1.0 + math.exp(-lr))
        sigma = math.sqrt(0.5 / s)
        if not 0.0 < q < 1.0:
            continue
        tried += 1
        low = float(lower_rdp_steps(q, sigma, [alpha])[0])
        comp = float(subsampled_gaussian_rdp(q, sigma, np.array([alpha]), evaluation="exact").rdp[0])
        if low > comp:
            found.append((low / comp, q, sigma, alpha, low, comp))
    found.sort(reverse=True)
    print(f"{tried} targeted (q, sigma, alpha); bound above the computed RDP in {len(found)}")
    for _ratio, q, sigma, alpha, low, comp in found[: args.quad]:
        true = log_a_quad(q, sigma, alpha, dps=40) / (mp.mpf(alpha) - 1)
        print(
            f"  q={q!r} sigma={sigma!r} alpha={alpha!r}: bound {low!r} computed {comp!r} "
            f"quadrature {mp.nstr(true, 17)}  bound/true - 1 = {float(mp.mpf(low) / true - 1):.3e}"
        )


if __name__ == "__main__":
    main()
