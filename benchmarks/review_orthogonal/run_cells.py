"""Run the module under review on chosen grid cells; print its number, design and the plan it certified.

Usage (the module lives on branch ``ortho``)::

    PYTHONPATH=/work/wt/ortho python benchmarks/review_orthogonal/run_cells.py --seed 0 --samples 4000000 \
        --out /tmp/ortho_cells.json
"""

from __future__ import annotations

import argparse
import json
import time

CELLS = {  # (G/C1, C2/C1): certified z at eps = 2 (docs/audits.md on branch ortho)
    (2.0, 0.5): 11.08,
    (3.0, 0.5): 18.69,
    (3.0, 1.0): 18.69,
    (11.0, 0.5): 79.72,
    (11.0, 1.0): 79.72,
    (11.0, 2.0): 79.72,
}


def main() -> None:
    from accounting.audit.dicesgd_orthogonal import dicesgd_orthogonal_epsilon_lower

    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--samples", type=int, default=4_000_000)
    ap.add_argument("--cells", default="all")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cells = list(CELLS) if a.cells == "all" else [tuple(map(float, c.split(":"))) for c in a.cells.split(",")]
    rows = []
    for g, c2 in cells:
        t0 = time.time()
        eps, det = dicesgd_orthogonal_epsilon_lower(
            sample_rate=0.02, noise_multiplier=CELLS[(g, c2)], steps=150, delta=1e-5, c1=1.0, c2=c2,
            batch_size=1000.0, grad_bound=g, dataset_size=50_000, samples=a.samples, pilot_samples=20_000,
            seed=a.seed,
        )  # fmt: skip
        row = dict(g=g, c2=c2, z=CELLS[(g, c2)], eps_lower=eps, secs=round(time.time() - t0, 1), **det)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(a.out, "w") as f:
        json.dump(rows, f)


if __name__ == "__main__":
    main()
