"""Snapshot RDP values bit for bit over a grid of inputs, and compare two snapshots.

A refactoring of the accounting must leave every RDP value identical to the last bit, and the
value of a call must not depend on what the process computed before it.  ``snap`` records the
hex form of every value (constant steps, a decreasing schedule, a sigma-grid schedule, the
smooth-schedule bound, each over the default orders); ``--reverse`` evaluates the same inputs in
the opposite order, so that comparing a forward and a reverse snapshot of one tree tests the
history-independence.

    PYTHONPATH=. python benchmarks/rdp_identity.py snap before.json          # on the old tree
    PYTHONPATH=. python benchmarks/rdp_identity.py snap after.json           # on the new tree
    PYTHONPATH=. python benchmarks/rdp_identity.py snap --reverse after-rev.json
    python benchmarks/rdp_identity.py compare before.json after.json

``compare`` prints how many values differ and the largest relative difference, and exits 1 if any
value differs.  About 2 s of CPU per snapshot.
"""

from __future__ import annotations

import argparse
import json
import sys


def _inputs() -> list[tuple]:
    jobs: list[tuple] = [("const", q, s, 100) for q in (1e-4, 0.01, 0.1, 0.5) for s in (0.6, 1.1, 5.0, 50.0)]
    jobs += [("sched", 0.02, 1.0, 300), ("grid", 0.01, 1.0, 21_000), ("smooth", 0.01, 3.0, 2000)]
    return jobs


def _values(job: tuple) -> list[str]:
    import numpy as np

    from accounting.orders import DEFAULT_ORDERS
    from accounting.rdp import subsampled_gaussian_rdp
    from accounting.schedule_bound import smooth_schedule_rdp

    kind, q, s, t = job
    if kind == "const":
        curve = subsampled_gaussian_rdp(q, s, DEFAULT_ORDERS, steps=t)
    elif kind == "sched":
        curve = subsampled_gaussian_rdp(q, s * (1 + 3 / np.sqrt(np.arange(1, t + 1))), DEFAULT_ORDERS)
    elif kind == "grid":
        z = s + np.random.default_rng(1).uniform(0.0, 2.0, t)
        curve = subsampled_gaussian_rdp(q, z, DEFAULT_ORDERS)
    else:
        curve = smooth_schedule_rdp("inv-sqrt-k", q, s, t, DEFAULT_ORDERS)
    return [float(v).hex() for v in curve.rdp]


def snap(path: str, reverse: bool) -> None:
    jobs = _inputs()
    order = jobs[::-1] if reverse else jobs
    record = {repr(j): _values(j) for j in order}
    with open(path, "w") as f:
        json.dump(record, f)


def compare(a_path: str, b_path: str) -> int:
    with open(a_path) as f:
        a = json.load(f)
    with open(b_path) as f:
        b = json.load(f)
    if a.keys() != b.keys():
        print("the snapshots cover different inputs")
        return 1
    total = differ = 0
    worst = 0.0
    for key in a:
        for x, y in zip(a[key], b[key], strict=True):
            total += 1
            if x != y:
                differ += 1
                fx, fy = float.fromhex(x), float.fromhex(y)
                if fx == fx and fy == fy and max(abs(fx), abs(fy)) > 0:
                    worst = max(worst, abs(fx - fy) / max(abs(fx), abs(fy)))
                if differ <= 5:
                    print(f"  {key}: {x} vs {y}")
    print(f"{differ}/{total} values differ; largest relative difference {worst:.2e}")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("snap")
    p.add_argument("out")
    p.add_argument("--reverse", action="store_true", help="evaluate the inputs in the opposite order")
    p = sub.add_parser("compare")
    p.add_argument("a")
    p.add_argument("b")
    args = parser.parse_args(argv)
    if args.cmd == "snap":
        snap(args.out, args.reverse)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
