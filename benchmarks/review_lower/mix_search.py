"""Compositions: lower_rdp_steps over mixtures of rates (q = 1 rows, repeated pairs, counts)
and event_lower_function over composed events, against the 60-digit binomial sums (integer
orders) summed over the steps.

Usage: PYTHONPATH=$PWD:$PWD/benchmarks/review_lower python benchmarks/review_lower/mix_search.py [--cases N]
"""

from __future__ import annotations

import argparse
import time

import mpmath as mp
import numpy as np
from reference import log_a_int

from accounting.events import (
    ComposedEvent,
    GaussianEvent,
    ScheduleEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
)
from accounting.rdp_lower import event_lower_function, lower_rdp_steps

ORDERS = np.concatenate([np.arange(2.0, 41.0), [64.0, 128.0, 256.0]])


def _row(rng):
    u = rng.random()
    q = (
        1.0
        if u < 0.2
        else float(10.0 ** rng.uniform(-12, 0))
        if u < 0.8
        else float(1 - 10.0 ** rng.uniform(-12, -1))
    )
    return q, float(10.0 ** rng.uniform(-1, 3)), float(rng.choice([1, 1, 3, 1000, 10.0 ** rng.uniform(0, 8)]))


def ref_total(rows, alpha: int) -> mp.mpf:
    return mp.fsum(c * log_a_int(q, z, alpha) for q, z, c in rows) / (alpha - 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    worst, where, bad = 0.0, None, []
    for _ in range(args.cases):
        rows = [_row(rng) for _ in range(int(rng.integers(1, 6)))]
        if rng.random() < 0.3:
            rows.append(rows[0])  # a repeated (q, sigma) pair
        q, z, c = (np.array(v) for v in zip(*rows, strict=True))
        low = lower_rdp_steps(q, z, ORDERS, c)
        # the same steps as events: a schedule (counts 1) and self-composed parts
        ints = [r for r in rows if float(r[2]).is_integer()]
        parts = [
            SelfComposedEvent(SubsampledGaussianEvent(a, b), int(k))
            if a < 1
            else SelfComposedEvent(GaussianEvent(b), int(k))
            for a, b, k in ints
        ]
        ev_low = event_lower_function(ComposedEvent(tuple(parts)))(ORDERS) if parts else None
        sched = ScheduleEvent(tuple(r[0] for r in rows), tuple(r[1] for r in rows))
        s_low = event_lower_function(sched)(ORDERS)
        for j, a in enumerate(ORDERS):
            ref = ref_total(rows, int(a))
            for name, val, rr in (
                ("steps", low[j], ref),
                ("events", None if ev_low is None else ev_low[j], ref_total(ints, int(a)) if ints else None),
                ("schedule", s_low[j], ref_total([(x, y, 1.0) for x, y, _ in rows], int(a))),
            ):
                if val is None or val <= 0:
                    continue
                r = float(mp.mpf(val) / rr)
                if r > worst:
                    worst, where = r, (name, rows, float(a))
                if r > 1:
                    bad.append((name, rows, float(a), float(val), float(rr)))
    print(
        f"{args.cases} compositions x {ORDERS.size} integer orders x 3 routes: "
        f"worst bound/true = {worst!r} at {where}"
    )
    print(f"violations: {len(bad)}")
    for b in bad[:10]:
        print("  ", b)
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
