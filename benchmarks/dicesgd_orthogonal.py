"""The orthogonal storage audit of DiceSGD over the gap grid, at the certified z of each cell.

Run from the repository root::

    PYTHONPATH=. python benchmarks/dicesgd_orthogonal.py [--json] [--samples 4000000] [--seed 0]

For each (G/C1, C2/C1) of ``dptheory.figures_dicesgd`` at the DiceSGD defaults (N = 50000,
B = 1000, 3 epochs, C1 = 1) and eps = 2, delta = 1e-5: the certified z (``dptheory.api.calibrate``),
its regime, and the lower bound of :mod:`accounting.audit.dicesgd_orthogonal` at that z (confidence
0.99 over ``--seed``), with the ratio certified eps / eps_lower. Cells where the others cannot refill
more than C2 per step (the flush cells and the boundary cells ``G - C1 = C2``) are reported with
``"applicable": false``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from dptheory.figures_dicesgd import DELTA, EPS, GRID_C2, GRID_G


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=4_000_000, help="draws that certify the chosen test")
    ap.add_argument("--pilot-samples", type=int, default=20_000, help="draws that choose the test")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for name, value in (("--samples", args.samples), ("--pilot-samples", args.pilot_samples)):
        if value < 2:
            print(f"{name}: must be an integer >= 2", file=sys.stderr)
            sys.exit(2)
    from accounting.algorithms.registry import get_algorithm
    from accounting.audit.dicesgd_orthogonal import dicesgd_orthogonal_epsilon_lower
    from dptheory import api

    dice = get_algorithm("dicesgd")

    rows = []
    for g in GRID_G:
        for c2 in GRID_C2:
            rep = api.calibrate(defaults="paper", eps=EPS, delta=DELTA, algo="dicesgd", grad_bound=g, c2=c2)
            params = api.build_params(
                algo="dicesgd", delta=DELTA, noise_multiplier=rep.noise_multiplier, grad_bound=g, c2=c2
            )
            p, _, _ = dice.resolve(params)
            low, det = dicesgd_orthogonal_epsilon_lower(
                sample_rate=p.sample_rate,
                noise_multiplier=p.noise_multiplier,
                steps=p.steps,
                delta=DELTA,
                c1=p.c1,
                c2=p.c2,
                batch_size=p.batch_size,
                grad_bound=p.grad_bound,
                dataset_size=p.dataset_size,
                samples=args.samples,
                pilot_samples=args.pilot_samples,
                seed=args.seed,
            )
            eps_c = float(rep.epsilon)
            rows.append(
                {
                    "g_over_c1": g,
                    "c2_over_c1": c2,
                    "z": float(rep.noise_multiplier),
                    "regime": (rep.details or {}).get("regime"),
                    "eps_certified": eps_c,
                    "eps_lower_orthogonal": low,
                    "ratio_orthogonal": eps_c / low if low > 0 else math.inf,
                    **{k: v for k, v in det.items()},
                }
            )
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    from dptheory.cli.numbers import DOWN, UP, fmt  # lower bounds printed down, ratios up

    print("| G/C1 | C2/C1 | certified z | regime | orthogonal eps_lower | point estimate | certified/audit |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if not r["applicable"]:
            low = "n/a"
        else:
            low = fmt(r["eps_lower_orthogonal"], DOWN, 3)
        point = f"{r['point_estimate']:.3g}" if r["applicable"] else "-"
        print(
            f"| {r['g_over_c1']:g} | {r['c2_over_c1']:g} | {r['z']:.4g} | {r['regime']} | {low} | {point} "
            f"| {fmt(r['ratio_orthogonal'], UP, 3)} |"
        )


if __name__ == "__main__":
    main()
