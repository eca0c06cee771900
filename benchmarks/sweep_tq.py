"""Time ``epsilon`` over a grid of steps T and sample rates q, RDP and PLD, to find cliffs.

    python benchmarks/sweep_tq.py                      # d2psgd, T x q grid of issue 11, 60 s per call
    python benchmarks/sweep_tq.py --quick              # a few cells, 20 s per call
    python benchmarks/sweep_tq.py --accountant pld --timeout 30 --json

A cliff is a cell that costs much more than a *larger* T at the same q (run time should grow
smoothly with the work).  Each call runs in this process under a SIGALRM timeout and reports
process CPU seconds; a call that runs out of time is reported as ``timeout`` with its limit, so
one cliff cannot stall the sweep.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DELTA = 1e-5
#: The grid of issue 11 ("T in {1e3, 3e3, 1e4, 2e4, 1e5} x q in {0.01, 0.1, 0.3, 0.6}").
FULL_STEPS = (1_000, 3_000, 10_000, 20_000, 100_000)
FULL_RATES = (0.01, 0.1, 0.3, 0.6)
QUICK_STEPS = (1_000, 20_000, 100_000)
QUICK_RATES = (0.01, 0.3)
#: Base noise multiplier of the swept schedule (inv-sqrt-k, as the D2P2 defaults).
BASE_NOISE = 30.0


class CallTimeout(BaseException):
    """Raised by the per-call alarm (a BaseException so library ``except Exception`` cannot eat it)."""


def timed(fn: Callable[[], Any], timeout: float) -> tuple[float, Any, bool]:
    """``(process CPU seconds, value, timed_out)`` of ``fn()`` stopped after ``timeout`` wall seconds."""

    def _expire(signum, frame):  # noqa: ARG001
        raise CallTimeout()

    old = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    t0 = time.process_time()
    try:
        value, out = fn(), False
    except CallTimeout:
        value, out = None, True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return time.process_time() - t0, value, out


def sweep(
    steps: Sequence[int],
    rates: Sequence[float],
    accountants: Sequence[str],
    timeout: float,
    *,
    algo: str = "d2psgd",
    base: float = BASE_NOISE,
    log: Callable[[str], None] | None = None,
) -> list[dict]:
    """One row per (accountant, q, T): ``{name, accountant, q, T, ours_s, ours_value, timed_out}``."""
    from dptheory import api

    rows = []
    for acc in accountants:  # warm-up: first-call imports (dp-accounting, scipy parts) are not the cell's
        api.epsilon(algo=algo, noise_multiplier=base, delta=DELTA, sample_rate=0.1, steps=10, accountant=acc)
    for acc in accountants:
        for q in rates:
            for t in steps:

                def call(q: float = q, t: int = t, acc: str = acc) -> float:
                    r = api.epsilon(
                        algo=algo, noise_multiplier=base, delta=DELTA, sample_rate=q, steps=t, accountant=acc
                    )
                    return float(r.epsilon)

                cpu, eps, out = timed(call, timeout)
                note = f"timeout after {timeout:g} s (wall)" if out else ""
                rows.append(
                    {
                        "name": f"sweep {algo} z={base:g} {acc} q={q} T={t} (eps)",
                        "accountant": acc,
                        "q": q,
                        "T": t,
                        "ours_s": cpu,
                        "ours_value": eps,
                        "timed_out": out,
                        "note": note,
                    }
                )
                if log is not None:
                    log(f"  {acc} q={q} T={t}: {cpu:.2f} s CPU, eps={eps} {note}")
    return rows


def cliffs(rows: list[dict], factor: float = 3.0, floor_s: float = 1.0) -> list[tuple[dict, str]]:
    """``(row, why)`` for each cell costing more than ``factor`` times a larger-T cell of the same
    (accountant, q) and more than ``floor_s``: the non-monotone run times this sweep exists to catch."""
    found = []
    for r in rows:
        for s in rows:
            same = s["accountant"] == r["accountant"] and s["q"] == r["q"]
            if same and s["T"] > r["T"] and r["ours_s"] > max(floor_s, factor * s["ours_s"]):
                why = (
                    f"{r['accountant']} q={r['q']}: T={r['T']} takes {r['ours_s']:.2f} s "
                    f"but T={s['T']} only {s['ours_s']:.2f} s"
                )
                found.append((r, why))
                break
    return found


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a few cells, 20 s per call")
    ap.add_argument("--accountant", choices=("rdp", "pld", "both"), default="both")
    ap.add_argument("--algo", default="d2psgd", help="a schedule algorithm (d2psgd, d2p2sgd, dp2sgd)")
    ap.add_argument("--timeout", type=float, default=None, help="wall seconds per call (60; 20 with --quick)")
    ap.add_argument("--json", action="store_true", help="print one JSON list of rows")
    args = ap.parse_args(argv)
    timeout = args.timeout or (20.0 if args.quick else 60.0)
    if not (math.isfinite(timeout) and timeout > 0):
        ap.error("--timeout: must be a number > 0")
    accs = ("rdp", "pld") if args.accountant == "both" else (args.accountant,)
    steps, rates = (QUICK_STEPS, QUICK_RATES) if args.quick else (FULL_STEPS, FULL_RATES)
    rows = sweep(
        steps, rates, accs, timeout, algo=args.algo, log=lambda m: print(m, file=sys.stderr, flush=True)
    )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for acc in accs:
        print(f"\n{acc}: CPU seconds (eps) of `dptheory epsilon --algo {args.algo}` z={BASE_NOISE:g}")
        print("| q \\ T | " + " | ".join(str(t) for t in steps) + " |")
        print("| --- |" + " ---: |" * len(steps))
        for q in rates:
            cells = []
            for t in steps:
                r = next(x for x in rows if x["accountant"] == acc and x["q"] == q and x["T"] == t)
                cells.append(
                    f"> {timeout:g} (timeout)"
                    if r["timed_out"]
                    else f"{r['ours_s']:.2f} ({r['ours_value']:.4g})"
                )
            print(f"| {q} | " + " | ".join(cells) + " |")
    found = [why for _, why in cliffs(rows)]
    print("\ncliffs: " + ("; ".join(found) if found else "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
