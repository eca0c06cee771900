"""Certified DiceSGD noise vs the audit's lower bound over a grid of G/C1 and C2/C1 (issue 10, section 2).

Run from the repository root::

    PYTHONPATH=. python benchmarks/dicesgd_grid.py [--samples 100000] [--json]

For each (G/C1, C2/C1) at the DiceSGD defaults (N = 50000, B = 1000, 3 epochs, C1 = 1) and
eps = 2, delta = 1e-5: the certified z (``dptheory.api.calibrate``, flat clipping, ``--grad-bound G``),
the regime that gave it and P(E^c), then the audit's eps_lower at that z (the 1-D lattice instance
of ``accounting/audit/dicesgd.py``, Monte Carlo, confidence 0.99) and the ratio 2 / eps_lower
(certified over audited epsilon at the same noise). The audit is a *lower* bound, so the ratio is
an upper bound on how loose the certified number can be on that instance.
"""

from __future__ import annotations

import argparse
import json
import time

from accounting.algorithms.registry import get_algorithm
from accounting.audit import run_audit
from dptheory import api

G_OVER_C1 = (1.25, 1.5, 2.0, 3.0, 11.0)
C2_OVER_C1 = (0.5, 1.0, 2.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    dice = get_algorithm("dicesgd")
    rows = []
    for g in G_OVER_C1:
        for c2 in C2_OVER_C1:
            t0 = time.perf_counter()
            rep = api.calibrate(eps=2.0, delta=1e-5, algo="dicesgd", grad_bound=g, c2=c2)
            params = api.build_params(
                algo="dicesgd", delta=1e-5, noise_multiplier=rep.noise_multiplier, grad_bound=g, c2=c2
            )
            p, _, _ = dice.resolve(params)
            aud = run_audit(p, samples=args.samples, confidence=0.99, seed=0)
            d = rep.details or {}
            rows.append(
                dict(
                    g_over_c1=g,
                    c2_over_c1=c2,
                    z=rep.noise_multiplier,
                    regime=d.get("regime"),
                    p_fail=d.get("p_fail"),
                    eps_lower=aud.epsilon_lower,
                    ratio=2.0 / aud.epsilon_lower if aud.epsilon_lower > 0 else float("inf"),
                    seconds=time.perf_counter() - t0,
                )
            )
            if args.json:
                print(json.dumps(rows[-1]), flush=True)
    if not args.json:
        print("| G/C1 | C2/C1 | certified z | regime | P(E^c) | audit eps_lower at z | certified/audit |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            pf = "-" if r["p_fail"] is None else f"{r['p_fail']:.2g}"
            print(
                f"| {r['g_over_c1']:g} | {r['c2_over_c1']:g} | {r['z']:.4g} | {r['regime']} | {pf} | "
                f"{r['eps_lower']:.3g} | {r['ratio']:.3g} |"
            )


if __name__ == "__main__":
    main()
