"""Adversarial search for cases where order screening with the closed-form bound
(accounting.order_screen.event_epsilon) differs from converting the whole curve.

Usage (from the worktree root):
    PYTHONPATH=$PWD python benchmarks/review_lower/screen_search.py [--cases N] [--seed S]

Criterion (tests/_screen_checks.py): same method, epsilon to 1e-12 relative, same order, same
edge flag, same warnings except a dropped-orders line for orders screening never evaluated.
Also checks that the bound never exceeds the computed RDP at any grid order (its premise).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import accounting.order_screen as screen
from accounting.conversion import rdp_to_epsilon
from accounting.events import (
    ComposedEvent,
    GaussianEvent,
    ScheduleEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
)
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS
from accounting.rdp_lower import event_lower_function

REL = 1e-12
DROPPED = "RDP orders dropped"


def _grids(rng) -> list[np.ndarray]:
    n = int(rng.integers(13, 60))
    start = 1.0 + 10.0 ** rng.uniform(-9, 0)
    return [
        np.asarray(DP_ACCOUNTING_ORDERS, dtype=float),
        np.asarray(DEFAULT_ORDERS, dtype=float),
        np.concatenate([[1.001, 1.005, 1.01, 1.02], DP_ACCOUNTING_ORDERS]),
        np.arange(1.05, 20.0, 0.25),
        np.linspace(start, start + rng.uniform(5, 200), n),  # usually no integer at all
        np.unique(np.concatenate([np.linspace(1.1, 9.9, 13), [float(rng.integers(2, 10))]])),  # one integer
        np.geomspace(start, 10.0 ** rng.uniform(1, 4), n),
        np.arange(21.0, 21.0 + n),  # integers above _FIRST_UP_TO only
        np.unique(np.concatenate([np.arange(2.0, 8.0), np.linspace(20.5, 90.5, 15)])),
        np.arange(1.5, 1.5 + n),  # only half-integers
    ]


def _rate(rng) -> float:
    return float(
        rng.choice([1.0, 1 - 1e-12, 0.9999, 0.5, 0.1, 0.01, 1e-3, 1e-5, 1e-9, 10.0 ** rng.uniform(-8, 0)])
    )


def _event(rng):
    kind = rng.random()
    z = lambda: float(10.0 ** rng.uniform(-1.5, 3.0))  # noqa: E731
    if kind < 0.35:
        steps = int(rng.integers(1, 31))
        q = tuple(_rate(rng) for _ in range(steps)) if rng.random() < 0.5 else _rate(rng)
        zs = tuple(float(10.0 ** rng.uniform(-1.5, 3.0)) for _ in range(steps))
        return ScheduleEvent(q, zs)
    if kind < 0.6:
        return SelfComposedEvent(SubsampledGaussianEvent(_rate(rng), z()), int(10 ** rng.uniform(0, 5)))
    if kind < 0.8:
        parts = [SelfComposedEvent(SubsampledGaussianEvent(_rate(rng), z()), int(rng.integers(1, 1000)))]
        parts.append(GaussianEvent(z(), float(rng.choice([1.0, 2.0, 0.5]))))
        return ComposedEvent(tuple(parts))
    return SubsampledGaussianEvent(_rate(rng), z())


def _delta(rng) -> float:
    u = rng.random()
    if u < 0.15:
        return float(rng.choice([1 - 1e-12, 0.999999, 0.9, 0.5]))
    return float(10.0 ** -rng.uniform(0.5, 300))


def check(event, orders, delta, method) -> str | None:
    curve = event.rdp(orders)
    full = rdp_to_epsilon(curve, delta, method=method)
    seen: set[float] = set()

    def evaluate(o):
        seen.update(np.asarray(o, dtype=float).tolist())
        return event.rdp(o)

    lower = event_lower_function(event)
    got = screen.screened_epsilon(
        evaluate, orders, delta, method=method, floor=screen.event_floor(event), lower=lower
    )
    also = screen.event_epsilon(event, orders, delta, method=method)
    dropped = {o for o, _ in curve.dropped}
    expected = full.warnings
    if dropped and not dropped & seen:
        expected = tuple(w for w in full.warnings if not w.startswith(DROPPED))
    # premise: the bound is below the computed RDP at every order the whole curve evaluated
    comp = dict(zip(curve.orders.tolist(), curve.rdp.tolist(), strict=True))
    lo = lower(orders)
    above = [(a, lo[i], comp[a]) for i, a in enumerate(orders.tolist()) if a in comp and lo[i] > comp[a]]
    problems = []
    if above:
        problems.append(f"bound above computed RDP at {above[:3]}")
    for name, g in (("screened", got), ("event_epsilon", also)):
        if g.method != full.method:
            problems.append(f"{name}: method")
        if np.isinf(full.epsilon) != np.isinf(g.epsilon):
            problems.append(f"{name}: eps {g.epsilon!r} vs {full.epsilon!r}")
        elif np.isfinite(full.epsilon):
            if abs(g.epsilon - full.epsilon) > REL * full.epsilon + 1e-300:
                problems.append(f"{name}: eps {g.epsilon!r} vs {full.epsilon!r}")
            if g.order != full.order:
                problems.append(f"{name}: order {g.order!r} vs {full.order!r}")
        if g.on_edge != full.on_edge:
            problems.append(f"{name}: on_edge {g.on_edge} vs {full.on_edge}")
        if g.warnings != expected:
            problems.append(f"{name}: warnings {g.warnings} vs {expected}")
    return "; ".join(problems) or None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    fails = 0
    for k in range(args.cases):
        event = _event(rng)
        grids = _grids(rng)
        orders = grids[int(rng.integers(0, len(grids)))]
        delta = _delta(rng)
        method = "classic" if rng.random() < 0.3 else "improved"
        try:
            msg = check(event, orders, delta, method)
        except Exception as e:  # noqa: BLE001 - a crash is a finding too
            msg = f"raised {type(e).__name__}: {e}"
        if msg:
            fails += 1
            print(f"case {k}: {event!r} orders={orders.tolist()!r} delta={delta!r} method={method}\n   {msg}")
    print(f"{args.cases} cases, {fails} mismatches, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
