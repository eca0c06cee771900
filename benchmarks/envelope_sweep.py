"""Envelope soundness sweep: our certified epsilon against a rigorous lower bound.

16 corners plus 400 log-uniform cases of (q, sigma, T, delta) over the documented envelope
(q in [1e-9, 1], sigma in [0.1, 1e4], T in [1, 1e9], delta in [1e-100, 0.1]).  For each, the
RDP epsilon of T Poisson-subsampled Gaussian steps is compared with the sum-test lower bound
of ``accounting.audit.sum_test``; the ratio must never fall below 1.

Run: ``python benchmarks/envelope_sweep.py [--cases N] [--seed S]`` (about 12 s for 416 cases).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np

from accounting.audit.sum_test import sum_test_epsilon_lower
from accounting.conversion import rdp_to_epsilon
from accounting.orders import DEFAULT_ORDERS
from accounting.rdp import subsampled_gaussian_rdp

LOW = np.array([-9.0, -1.0, 0.0, -100.0])  # log10 of q, sigma, T, delta
HIGH = np.array([0.0, 4.0, 9.0, -1.0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    corners = [np.array(c) for c in itertools.product(*zip(LOW, HIGH, strict=True))]
    cases = corners + [rng.uniform(LOW, HIGH) for _ in range(args.cases)]
    worst, where, positive = math.inf, None, 0
    t0 = time.perf_counter()
    for lq, ls, lt, ld in cases:
        q, sigma, steps, delta = 10**lq, 10**ls, max(1, round(10**lt)), 10**ld
        eps = rdp_to_epsilon(subsampled_gaussian_rdp(q, sigma, DEFAULT_ORDERS, steps=steps), delta).epsilon
        lower = sum_test_epsilon_lower(q, sigma, steps, delta, thresholds=200)
        if lower <= 0:
            continue
        positive += 1
        if eps / lower < worst:
            worst, where = eps / lower, dict(q=q, sigma=sigma, steps=steps, delta=delta, eps=eps, lower=lower)
    print(f"{len(cases)} cases, {positive} with a positive lower bound, {time.perf_counter() - t0:.1f} s")
    print(f"worst eps / lower bound = {worst:.6g} at {where}")
    if worst < 1:
        raise SystemExit("UNSOUND: an epsilon below the rigorous lower bound")


if __name__ == "__main__":
    main()
