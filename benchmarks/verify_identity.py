"""Snapshot ``dptheory verify`` results without timings, and compare two snapshots.

A speed-up of the verification must not change what it reports: every claim's verdict, its
per-reading verdicts, every check's verdict, summary and evidence (evaluation counts, worst
ratios, counterexamples). This script records all of that (the ``--json`` payload minus the
``seconds`` fields) plus per-check wall and process CPU times, and compares two records.

    python benchmarks/verify_identity.py snap --quick before.json
    python benchmarks/verify_identity.py snap --quick after.json
    python benchmarks/verify_identity.py compare before.json after.json

``snap --claim ID`` restricts the run to some claims (premises still run, as in ``verify``).
``compare`` exits 1 and lists the first differences when the records differ.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter


def snapshot(quick: bool, claim_ids: list[str], seed: int) -> dict:
    from verification import engine, registry

    claims = engine.select(claim_ids or None, None, run_all=not claim_ids)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    results = engine.run_claims(claims, seed=seed, quick=quick, progress=False)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    records, timing = [], []
    for r in results:
        rec = r.to_json()
        rec.pop("seconds")
        for ev in rec["evidence"]:
            timing.append([round(ev.pop("seconds"), 3), rec["id"], ev["check"]])
        records.append(rec)
    timing.sort(reverse=True)
    return {
        "quick": quick,
        "seed": seed,
        "claims": records,
        "verdicts": dict(Counter(rec["verdict"] for rec in records)),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "per_check_wall_s": timing,
        "n_registered": len(registry.CLAIMS),
    }


def _diff(a, b, path: str, out: list[str]) -> None:
    if len(out) >= 20:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'after' if k in b else 'before'}")
            else:
                _diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")


def compare(before: dict, after: dict) -> list[str]:
    """Differences between two snapshots' results (timings ignored); empty when identical."""
    if before["quick"] != after["quick"] or before["seed"] != after["seed"]:
        return ["the snapshots were taken with different --quick/--seed"]
    out: list[str] = []
    _diff(before["claims"], after["claims"], "claims", out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("snap", help="run the claims and write a snapshot")
    sp.add_argument("out")
    sp.add_argument("--quick", action="store_true")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--claim", action="append", default=[])
    cp = sub.add_parser("compare", help="compare two snapshots")
    cp.add_argument("before")
    cp.add_argument("after")
    args = ap.parse_args(argv)
    if args.cmd == "snap":
        snap = snapshot(args.quick, args.claim, args.seed)
        with open(args.out, "w") as fh:
            json.dump(snap, fh, indent=1, sort_keys=True, default=repr)
        print(f"wall {snap['wall_s']} s, cpu {snap['cpu_s']} s, verdicts {snap['verdicts']}")
        for t, cid, check in snap["per_check_wall_s"][:10]:
            print(f"  {t:8.2f} s  {cid}:{check}")
        return 0
    with open(args.before) as fb, open(args.after) as fa:
        before, after = json.load(fb), json.load(fa)
    diffs = compare(before, after)
    for d in diffs:
        print(d)
    print(
        f"{'IDENTICAL' if not diffs else 'DIFFERENT'}: {len(before['claims'])} claims; "
        f"cpu {before['cpu_s']} s -> {after['cpu_s']} s, wall {before['wall_s']} s -> {after['wall_s']} s"
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
