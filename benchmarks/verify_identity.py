"""Snapshot ``dptheory verify`` results without timings, and compare two snapshots.

A speed-up of the verification must not change what it reports: every claim's verdict, its
per-reading verdicts, every check's verdict, summary and evidence (evaluation counts, worst
ratios, counterexamples). This script records all of that (the ``--json`` payload minus the
``seconds`` fields) plus per-check wall and process CPU times, and compares two records.

    python benchmarks/verify_identity.py snap --quick before.json
    python benchmarks/verify_identity.py snap --quick after.json
    python benchmarks/verify_identity.py compare before.json after.json

``snap --claim ID`` restricts the run to some claims (premises still run, as in ``verify``).
``compare`` exits 1 and lists the first differences when the records differ. A change that alters
some verdicts on purpose names them: ``compare --except-claim ID`` leaves those claims out (they
are listed, with their verdicts before and after), ``--ignore-key KEY`` drops a field added to
every record (e.g. ``basis``, ``edge``) so the rest can still be shown unchanged.
``snap --jobs N`` runs the claims in N worker processes (``dptheory verify --jobs``), to show
that the parallel run reports exactly what the serial one does. ``costs SNAP`` prints the
per-claim seconds of a snapshot as the tables of ``tools/cost_hints.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter


def snapshot(quick: bool, claim_ids: list[str], seed: int, jobs: int = 1) -> dict:
    from verification import engine, registry

    claims = engine.select(claim_ids or None, None, run_all=not claim_ids)
    wall0, cpu0 = time.perf_counter(), _cpu_with_children()
    results = engine.run_claims(claims, seed=seed, quick=quick, progress=False, jobs=jobs)
    wall, cpu = time.perf_counter() - wall0, _cpu_with_children() - cpu0
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


def _cpu_with_children() -> float:
    """User + system CPU of this process and of its reaped children (the --jobs workers)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def per_claim_seconds(snap: dict) -> dict[str, float]:
    """Each claim's summed check wall time in a snapshot, rounded to 0.1 s."""
    out: dict[str, float] = {}
    for seconds, cid, _check in snap["per_check_wall_s"]:
        out[cid] = out.get(cid, 0.0) + seconds
    return {cid: round(s, 1) for cid, s in sorted(out.items())}


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


def _drop(x, keys: set[str]):
    if isinstance(x, dict):
        return {k: _drop(v, keys) for k, v in x.items() if k not in keys}
    if isinstance(x, list):
        return [_drop(v, keys) for v in x]
    return x


def compare(before: dict, after: dict, *, except_claims=(), ignore_keys=()) -> list[str]:
    """Differences between two snapshots' results (timings ignored); empty when identical.

    ``except_claims`` are left out of the comparison; ``ignore_keys`` are dropped at every depth."""
    if before["quick"] != after["quick"] or before["seed"] != after["seed"]:
        return ["the snapshots were taken with different --quick/--seed"]
    skip, keys = set(except_claims), set(ignore_keys)
    out: list[str] = []
    a = _drop([c for c in before["claims"] if c["id"] not in skip], keys)
    b = _drop([c for c in after["claims"] if c["id"] not in skip], keys)
    _diff(a, b, "claims", out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("snap", help="run the claims and write a snapshot")
    sp.add_argument("out")
    sp.add_argument("--quick", action="store_true")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--claim", action="append", default=[])
    sp.add_argument("--jobs", type=int, default=1)
    hp = sub.add_parser("costs", help="print a snapshot's per-claim seconds (for tools/cost_hints.py)")
    hp.add_argument("snap")
    cp = sub.add_parser("compare", help="compare two snapshots")
    cp.add_argument("before")
    cp.add_argument("after")
    cp.add_argument("--except-claim", action="append", default=[], help="leave this claim out (repeatable)")
    cp.add_argument("--ignore-key", action="append", default=[], help="drop this field at any depth")
    args = ap.parse_args(argv)
    if args.cmd == "snap":
        snap = snapshot(args.quick, args.claim, args.seed, args.jobs)
        with open(args.out, "w") as fh:
            json.dump(snap, fh, indent=1, sort_keys=True, default=repr)
        print(f"wall {snap['wall_s']} s, cpu {snap['cpu_s']} s, verdicts {snap['verdicts']}")
        for t, cid, check in snap["per_check_wall_s"][:10]:
            print(f"  {t:8.2f} s  {cid}:{check}")
        return 0
    if args.cmd == "costs":
        with open(args.snap) as fh:
            for cid, s in per_claim_seconds(json.load(fh)).items():
                print(f"    {cid!r}: {s},")
        return 0
    with open(args.before) as fb, open(args.after) as fa:
        before, after = json.load(fb), json.load(fa)
    diffs = compare(before, after, except_claims=args.except_claim, ignore_keys=args.ignore_key)
    for d in diffs:
        print(d)
    verdict = {c["id"]: c["verdict"] for c in before["claims"]}
    for c in after["claims"]:
        if c["id"] in args.except_claim:
            print(f"left out: {c['id']}: {verdict.get(c['id'], '(new)')} -> {c['verdict']}")
    print(
        f"{'IDENTICAL' if not diffs else 'DIFFERENT'}: {len(before['claims'])} claims; "
        f"cpu {before['cpu_s']} s -> {after['cpu_s']} s, wall {before['wall_s']} s -> {after['wall_s']} s"
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
