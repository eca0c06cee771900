"""Exact ties: a plain Gaussian (and a subsampled one) whose epsilon is the same at two
neighbouring grid orders, the noise stepped ulp by ulp across the tie, screened (event_epsilon)
against the whole curve.  The whole curve breaks a tie to the first order; screening must give
the same order and epsilon to 1e-12.

Usage: PYTHONPATH=$PWD python benchmarks/review_lower/tie_search.py [--ulps K]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.optimize import brentq

from accounting.conversion import epsilon_per_order, rdp_to_epsilon
from accounting.events import GaussianEvent, SelfComposedEvent, SubsampledGaussianEvent
from accounting.order_screen import event_epsilon
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS


def rng_skip(i: int) -> bool:
    """Keep every fourth fractional pair (each costs a whole-curve evaluation per ulp step)."""
    return i % 4 != 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ulps", type=int, default=30)
    args = ap.parse_args()
    n_cases = fails = flips = sweeps = 0
    for grid in (np.asarray(DP_ACCOUNTING_ORDERS, float), np.asarray(DEFAULT_ORDERS, float)):
        for method in ("classic", "improved"):
            for delta in (1e-5, 1e-12, 1e-100, 0.5):
                for i in range(grid.size - 1):
                    a, b = grid[i], grid[i + 1]
                    if a <= 1.5 or b > 64 or (b != math.floor(b) and rng_skip(i)):
                        continue

                    def gap(log_s, a=a, b=b, delta=delta, method=method):
                        r = math.exp(log_s) * np.array([a, b])
                        e = epsilon_per_order(np.array([a, b]), r, delta, method)
                        return float(e[0] - e[1])

                    try:
                        ls = brentq(gap, -60.0, 60.0, xtol=1e-15)
                    except ValueError:
                        continue
                    z0 = math.sqrt(0.5 / math.exp(ls))
                    for kind in ("gauss", "sub"):
                        z = z0
                        seen_orders = set()
                        for _ in range(args.ulps):
                            z = math.nextafter(z, 0.0)
                        for _ in range(2 * args.ulps):
                            z = math.nextafter(z, math.inf)
                            if kind == "gauss":
                                ev = GaussianEvent(z)
                            else:
                                ev = SelfComposedEvent(SubsampledGaussianEvent(1.0 - 1e-12, z), 1)
                            full = rdp_to_epsilon(ev.rdp(grid), delta, method=method)
                            got = event_epsilon(ev, grid, delta, method=method)
                            n_cases += 1
                            seen_orders.add(full.order)
                            if (
                                got.order != full.order
                                or abs(got.epsilon - full.epsilon) > 1e-12 * full.epsilon
                                or got.warnings != full.warnings
                            ):
                                fails += 1
                                if fails <= 15:
                                    print(
                                        f"{kind} z={z!r} delta={delta} {method} grid[{i}]={a},{b}: "
                                        f"screened {got.order} {got.epsilon!r} "
                                        f"vs whole {full.order} {full.epsilon!r}"
                                    )
                        sweeps += 1
                        flips += len(seen_orders) > 1
    print(f"{sweeps} ulp sweeps, {flips} of them cross the tie (the whole curve's order changes)")
    print(f"{n_cases} cases at exact ties (+-{args.ulps} ulp of noise), {fails} mismatches")


if __name__ == "__main__":
    main()
