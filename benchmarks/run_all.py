"""Every accounting benchmark in one table: our time, the anchor's time on the same line, ratio.

    python benchmarks/run_all.py --quick     # about 1-2 minutes on 2 shared cores
    python benchmarks/run_all.py             # the full sizes (several minutes: dp-accounting)
    python benchmarks/run_all.py --json      # one JSON list of rows

Each row is measured side by side in this one process: ours, then the anchor (dp-accounting's
``RdpAccountant``, Opacus' ``get_noise_multiplier``), each the best of ``--repeats`` runs (the
slow anchors once).  Times are process CPU seconds (``time.process_time``), which load on a
shared machine inflates less than wall time.  ``ratio`` = anchor / ours (> 1: we are faster).
Rows without an implementation to compare with (DiceSGD, D2P2 calibration, the T x q sweep)
leave the anchor empty (the sweep is ``sweep_tq.py``: RDP and PLD, a timeout per call).
Our grid caches are cleared before each of our runs, so repeated runs
measure cold work.

Rows from ``benchmarks/bench_optim.py`` (toy runs: ``toy_rows(quick)``) are added, measured side by
side there, with the keys used here
(``name``, ``ours_s``, and optionally ``anchor``, ``anchor_s``, ``ours_value``,
``anchor_value``, ``note``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DELTA = 1e-5


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _clear_caches() -> None:
    import accounting.schedule_bound as smooth_mod
    import accounting.sigma_grid as grid_mod

    grid_mod.GRID_CACHE.clear()
    smooth_mod.CACHE.clear()


def cpu_best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Best process-CPU time of ``repeats`` runs of ``fn`` (caches cleared first) and its value."""
    best, value = math.inf, None
    for _ in range(max(1, repeats)):
        _clear_caches()
        t = time.process_time()
        value = fn()
        best = min(best, time.process_time() - t)
    return best, value


def row(
    name: str,
    ours: tuple[float, Any],
    anchor: str = "",
    theirs: tuple[float, Any] | None = None,
    note: str = "",
) -> dict:
    out = {"name": name, "ours_s": ours[0], "ours_value": ours[1], "anchor": anchor, "note": note}
    if theirs is not None:
        out.update(anchor_s=theirs[0], anchor_value=theirs[1], ratio=theirs[0] / max(ours[0], 1e-9))
    return out


# ------------------------------------------------------------------------------------ rows
def static_calibration(repeats: int) -> list[dict]:
    """DP-SGD, q = 0.02, T = 150, eps = 2: smallest noise multiplier."""
    from bench_accounting import dp_accounting_static_calibration

    from dptheory import api

    q, steps, eps = 0.02, 150, 2.0
    ours = cpu_best(
        lambda: (
            api.calibrate(eps=eps, delta=DELTA, algo="dpsgd", sample_rate=q, steps=steps).noise_multiplier
        ),
        repeats,
    )

    def dpa() -> float:
        return dp_accounting_static_calibration(q, steps, eps, DELTA)

    rows = [row("static calibration dpsgd q=0.02 T=150 eps=2 (z)", ours, "dp-accounting", cpu_best(dpa, 1))]
    try:
        from opacus.accountants.utils import get_noise_multiplier
    except Exception:  # noqa: BLE001 - optional
        rows.append(row("static calibration (z)", ours, "opacus", None, note="opacus not installed"))
    else:
        opa = cpu_best(
            lambda: get_noise_multiplier(
                target_epsilon=eps, target_delta=DELTA, sample_rate=q, steps=steps, accountant="rdp"
            ),
            1,
        )
        rows.append(row("static calibration dpsgd q=0.02 T=150 eps=2 (z)", ours, "opacus", opa))
    return rows


def inv_k_schedule(repeats: int, steps: int) -> list[dict]:
    """inv-k schedule, base 30, q = 0.01, ``steps`` distinct steps, on dp-accounting's grid.

    Two rows against the same dp-accounting run: epsilon as users get it
    (:func:`accounting.order_screen.event_epsilon`, which evaluates only the orders that can be
    optimal) and the whole RDP curve converted (what a caller that shows the curve pays)."""
    import dp_accounting

    from accounting.conversion import rdp_to_epsilon
    from accounting.events import ScheduleEvent
    from accounting.order_screen import event_epsilon
    from accounting.orders import DP_ACCOUNTING_ORDERS

    q, base = 0.01, 30.0

    def ours() -> float:
        event = ScheduleEvent.from_schedule("inv-k", base, steps, q)
        return event_epsilon(event, DP_ACCOUNTING_ORDERS, DELTA).epsilon

    def ours_curve() -> float:
        event = ScheduleEvent.from_schedule("inv-k", base, steps, q)
        return rdp_to_epsilon(event.rdp(DP_ACCOUNTING_ORDERS), DELTA).epsilon

    def theirs() -> float:
        z = base / np.sqrt(np.arange(1, steps + 1))
        event = dp_accounting.ComposedDpEvent(
            [dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(float(s))) for s in z]
        )
        return dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(DELTA)

    ours()  # first-call imports (scipy.special) are not part of the timing
    o, c, t = cpu_best(ours, repeats), cpu_best(ours_curve, repeats), cpu_best(theirs, 1)
    return [
        row(
            f"inv-k schedule T={steps} distinct, same orders (eps via order screening, event_epsilon)",
            o,
            "dp-accounting",
            t,
            note=f"eps rel diff {abs(o[1] - t[1]) / t[1]:.1e}",
        ),
        row(
            f"inv-k schedule T={steps} distinct, same orders (whole RDP curve, then eps)",
            c,
            "dp-accounting",
            t,
            note=f"eps rel diff {abs(c[1] - t[1]) / t[1]:.1e}",
        ),
    ]


def million_steps(repeats: int, steps: int) -> dict:
    from accounting.conversion import rdp_to_epsilon
    from accounting.events import ScheduleEvent
    from accounting.orders import DEFAULT_ORDERS

    def ours() -> float:
        event = ScheduleEvent.from_schedule("inv-k", 300.0 * math.sqrt(steps / 1e5), steps, 0.01)
        return rdp_to_epsilon(event.rdp(DEFAULT_ORDERS), DELTA).epsilon

    return row(
        f"inv-k schedule T={steps:.0e} distinct (eps, sigma-grid bound)",
        cpu_best(ours, repeats),
        note="target < 5 s",
    )


def d2p2_defaults(repeats: int, anchor: bool) -> list[dict]:
    """D2P2-SGD paper defaults (2344 distinct inv-sqrt-k steps, fresh projection)."""
    from dptheory import api

    eps = cpu_best(
        lambda: api.epsilon(algo="d2p2sgd", noise_multiplier=3.0, delta=DELTA, defaults="paper").epsilon,
        repeats,
    )
    theirs, note = (
        None,
        "anchor skipped (--quick); the full run times dp-accounting on the same composed event",
    )
    if anchor:
        import dp_accounting

        from accounting.algorithms.registry import get_algorithm

        alg = get_algorithm("d2p2sgd")
        p, _, _ = alg.resolve(api.build_params(algo="d2p2sgd", delta=DELTA, noise_multiplier=3.0))
        z, counts = alg.multiplier_blocks(p)
        factor = 1.05125  # the certified fresh-projection factor at these defaults (see its output)

        def dpa() -> float:
            event = dp_accounting.ComposedDpEvent(
                [
                    dp_accounting.PoissonSampledDpEvent(
                        p.sample_rate, dp_accounting.GaussianDpEvent(float(s / factor))
                    )
                    for s in np.repeat(z, counts)
                ]
            )
            return dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(DELTA * 0.9)

        theirs = cpu_best(dpa, 1)
        note = "anchor: one evaluation of the same schedule at the final factor (ours iterates the split 4x)"
    rows = [row("D2P2 defaults: epsilon, z=3 (eps)", eps, "dp-accounting" if anchor else "", theirs, note)]
    cal = cpu_best(
        lambda: api.calibrate(eps=2.0, delta=DELTA, algo="d2p2sgd", defaults="paper").noise_multiplier,
        repeats,
    )
    rows.append(
        row(
            "D2P2 defaults: calibrate eps=2 (z)", cal, note="no anchor calibrates this schedule; target < 2 s"
        )
    )
    return rows


def dicesgd_default(repeats: int) -> dict:
    from dptheory import api

    cal = cpu_best(
        lambda: api.calibrate(eps=2.0, delta=DELTA, algo="dicesgd", defaults="paper").noise_multiplier,
        repeats,
    )
    return row(
        "DiceSGD defaults: calibrate eps=2 (z)", cal, note="hidden-state bound; no anchor implements it"
    )


def sweep(quick: bool) -> list[dict]:
    """d2psgd epsilon over T x q, RDP and PLD, each call under a timeout (``sweep_tq.py``): the
    time should grow smoothly with T; a cliff (a cell slower than a larger T) is named in its note."""
    import sweep_tq  # type: ignore[import-not-found]

    grid = (
        (sweep_tq.QUICK_STEPS, sweep_tq.QUICK_RATES) if quick else (sweep_tq.FULL_STEPS, sweep_tq.FULL_RATES)
    )
    rows = sweep_tq.sweep(*grid, ("rdp", "pld"), 20.0 if quick else 60.0)
    for r, why in sweep_tq.cliffs(rows):
        r["note"] = f"{r['note']}; cliff: {why}" if r["note"] else f"cliff: {why}"
    return [{k: r[k] for k in ("name", "ours_s", "ours_value", "note")} for r in rows]


def accountant_rows(steps: int, anchor_steps: int) -> list[dict]:
    """RdpAccountant with a new noise every step (inv-k: z_k = 30 / sqrt(k), q = 0.01), then a
    restore from its state dict; per step, against Opacus's ``RDPAccountant`` and
    dp-accounting's ``RdpAccountant``.

    The anchors cost 0.1-0.3 s per distinct step, so they run on ``anchor_steps`` steps spread
    evenly over the same schedule (same noise range) and the rows compare CPU seconds *per
    step*; ours runs the whole ``steps``-step history (epsilon logged every 100 steps, as a
    trainer would).  ``value`` columns: epsilon of that anchor history, ours and theirs (each on
    its default order grid).  Restore: ours is ``from_state_dict`` + ``get_epsilon`` (the
    stored total verified against the recomputed history); Opacus is ``load_state_dict`` +
    ``get_epsilon`` (it recomputes every step); dp-accounting has no checkpoint format, so its
    restore is composing the history again.
    """
    import dp_accounting
    from opacus.accountants import RDPAccountant as OpacusRdp

    from accounting.accountant import RdpAccountant

    def schedule(n: int) -> np.ndarray:
        return 30.0 / np.sqrt(np.arange(1, n + 1))

    z = schedule(steps)
    z_anchor = z[np.unique(np.linspace(0, steps - 1, anchor_steps).round().astype(int))]
    n_a = z_anchor.size

    def ours(zs: np.ndarray) -> RdpAccountant:
        acc = RdpAccountant()
        for i, s in enumerate(zs):
            acc.step(noise_multiplier=float(s), sample_rate=0.01)
            if i % 100 == 99:  # a trainer that logs epsilon now and then
                acc.get_epsilon(DELTA)
        acc.get_epsilon(DELTA)
        return acc

    def opacus(zs: np.ndarray) -> OpacusRdp:
        acc = OpacusRdp()
        for s in zs:
            acc.step(noise_multiplier=float(s), sample_rate=0.01)
        acc.get_epsilon(DELTA)
        return acc

    def dpa(zs: np.ndarray) -> dp_accounting.rdp.RdpAccountant:
        acc = dp_accounting.rdp.RdpAccountant()
        for s in zs:
            acc.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(float(s))))
        acc.get_epsilon(DELTA)
        return acc

    def per_step(t: tuple[float, Any], n: int, value: float) -> tuple[float, float]:
        return t[0] / n, value

    eps_ours_anchor = ours(z_anchor).get_epsilon(DELTA)
    t_ours = cpu_best(lambda: ours(z), 1)
    acc = t_ours[1]
    t_opacus = cpu_best(lambda: opacus(z_anchor), 1)
    t_dpa = cpu_best(lambda: dpa(z_anchor), 1)
    ours_step = per_step(t_ours, steps, eps_ours_anchor)
    eps_full = acc.get_epsilon(DELTA)
    label = f"RdpAccountant.step, s/step (ours T={steps}, anchors T={n_a} of the same schedule)"
    note = f"{1e3 * ours_step[0]:.3f} ms/step, target 0.5; ours eps at T={steps}: {eps_full:.6g}"
    theirs_opacus = per_step(t_opacus, n_a, t_opacus[1].get_epsilon(DELTA))
    theirs_dpa = per_step(t_dpa, n_a, t_dpa[1].get_epsilon(DELTA))
    out = [
        row(label, ours_step, "Opacus RDPAccountant", theirs_opacus, note),
        row(label, ours_step, "dp-accounting", theirs_dpa, note),
    ]

    state = acc.state_dict()
    r_ours = cpu_best(lambda: RdpAccountant.from_state_dict(state).get_epsilon(DELTA), 1)
    small = opacus(z_anchor).state_dict()

    def opacus_restore() -> float:
        back = OpacusRdp()
        back.load_state_dict(small)
        return back.get_epsilon(DELTA)

    r_opacus = cpu_best(opacus_restore, 1)
    r_dpa = cpu_best(lambda: dpa(z_anchor).get_epsilon(DELTA), 1)
    label = f"RdpAccountant restore, s/step (ours T={steps}, anchors T={n_a})"
    note = f"ours {r_ours[0]:.3f} s for T={steps}, target <= 0.5 s; restored eps {r_ours[1]:.6g}"
    ours_rest = per_step(r_ours, steps, eps_ours_anchor)
    out += [
        row(label, ours_rest, "Opacus RDPAccountant", per_step(r_opacus, n_a, r_opacus[1]), note),
        row(label, ours_rest, "dp-accounting (recompose)", per_step(r_dpa, n_a, r_dpa[1]), note),
    ]
    return out


def startup_rows(repeats: int) -> list[dict]:
    """``dptheory calibrate`` as a whole process against ``python -c pass`` (bench_startup.py)."""
    import bench_startup  # type: ignore[import-not-found]

    return [bench_startup.startup_row(max(3, repeats))]


def optim_rows(quick: bool) -> list[dict]:
    """Toy-run rows from ``bench_optim.toy_rows``: ``(name, ours_s, anchor_s, ratio, note)`` tuples,
    measured side by side there (anchor: the reference engine, or Opacus where the note says so)."""
    try:
        import bench_optim  # type: ignore[import-not-found]
    except Exception as err:  # noqa: BLE001 - optional, reported
        return [{"name": "optimizer rows", "ours_s": math.nan, "note": f"bench_optim not importable: {err}"}]
    out = []
    for name, ours_s, anchor_s, ratio, note in bench_optim.toy_rows(quick):
        anchor = "Opacus DPOptimizer" if "Opacus" in name or "Opacus" in note else "reference engine"
        out.append(
            {
                "name": name,
                "ours_s": ours_s,
                "anchor": anchor,
                "anchor_s": anchor_s,
                "ratio": ratio,
                "note": note,
            }
        )
    return out


# ----------------------------------------------------------------------------------- output
def _fmt(v: Any) -> str:
    if v is None or v == "":
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def print_table(rows: list[dict]) -> None:
    print(
        "| benchmark | ours (CPU s) | value | anchor | anchor (CPU s) | anchor value | anchor/ours | note |"
    )
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | --- |")
    for r in rows:
        ratio = f"{r['ratio']:.1f}x" if "ratio" in r else ""
        print(
            f"| {r['name']} | {_fmt(r.get('ours_s'))} | {_fmt(r.get('ours_value'))} | "
            f"{r.get('anchor', '')} | "
            f"{_fmt(r.get('anchor_s'))} | {_fmt(r.get('anchor_value'))} | {ratio} | {r.get('note', '')} |"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, slow anchors skipped (1-2 min)")
    ap.add_argument("--json", action="store_true", help="print one JSON list instead of the table")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of our (fast) calls; best is kept")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    quick, rep = args.quick, max(1, args.repeats)
    steps_kinds: list[tuple[str, Callable[[], Any]]] = [
        ("start-up", lambda: startup_rows(rep)),
        ("static calibration", lambda: static_calibration(rep)),
        ("inv-k schedule", lambda: inv_k_schedule(rep, 200 if quick else 1000)),
        ("long schedule", lambda: [million_steps(1, 100_000 if quick else 1_000_000)]),
        ("D2P2 defaults", lambda: d2p2_defaults(1, anchor=not quick)),
        ("DiceSGD", lambda: [dicesgd_default(1)]),
        ("T x q sweep", lambda: sweep(quick)),
        ("RdpAccountant", lambda: accountant_rows(300 if quick else 2000, 10 if quick else 40)),
        ("optimizer", lambda: optim_rows(quick)),
    ]
    rows: list[dict] = []
    for label, fn in steps_kinds:
        _log(f"{label} ...")
        rows.extend(fn())
    if args.json:
        print(json.dumps(rows, indent=2, default=float))
    else:
        print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
