"""Accounting benchmarks: dptheory vs dp-accounting (and Opacus), side by side in one run.

Run from the repository root::

    python benchmarks/bench_accounting.py          # human-readable table
    python benchmarks/bench_accounting.py --json   # one JSON object

(a) epsilon of an ``inv-k`` noise schedule (sigma_k = sigma / sqrt(k), k = 1..T, all steps
    distinct) with Poisson rate q: ours (``event_epsilon``: only the orders that can be optimal,
    :mod:`accounting.order_screen`; and the whole curve in one vectorised call) vs dp-accounting's
    ``RdpAccountant`` on the equivalent ``ComposedDpEvent`` of T ``PoissonSampledDpEvent`` s,
    both on dp-accounting's default order grid so the epsilons are comparable. Also
    T = 100 000 at base sigma 30 and 300: our default path (``evaluation="auto"``, which bounds
    that many distinct steps from a sigma grid: sound, slightly above exact) against our exact
    per-step evaluation (timed once) and the relative epsilon gap between them.
(b) calibration of static DP-SGD (q = 0.02, T = 150, eps = 2, delta = 1e-5): ours vs Opacus
    ``get_noise_multiplier(accountant="rdp")`` vs dp-accounting ``calibrate_dp_mechanism`` with
    its ``RdpAccountant``. Every returned sigma is re-evaluated with dp-accounting's
    ``RdpAccountant`` (a neutral judge) to show which ones actually meet the target.

Timings: ``time.perf_counter``, one warm-up call, then the best of ``--repeats`` runs.

``--invk`` runs only the T = 1000 inv-k case of (a) (dp-accounting's grid), both sides timed as
the *median* of ``--repeats`` runs, at least 31 (dp-accounting: ``--slow-repeats``, at least 3),
and prints both times, the ratio and both epsilons (ours also in hex, for bit-identity checks)::

    flock /tmp/dptheory-heavy.lock env PYTHONPATH=. python benchmarks/bench_accounting.py --invk
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

INV_K = {
    "q": 0.01,
    "base_sigma": 30.0,
    "delta": 1e-5,
    "steps": 1000,
    "big_steps": 100_000,
    "big_bases": (30.0, 300.0),
}
STATIC = {"q": 0.02, "steps": 150, "eps": 2.0, "delta": 1e-5}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def best_time(fn: Callable[[], Any], repeats: int, *, warmup: bool = True) -> tuple[float, Any]:
    """Optionally warm up once, then return (best wall time over ``repeats`` runs, last result)."""
    out = fn() if warmup else None
    best = float("inf")
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """One warm-up call, then (median wall time over ``repeats`` runs, last result)."""
    out = fn()
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def bench_invk(repeats: int, dp_repeats: int) -> dict[str, Any]:
    """(a) at T = 1000 on dp-accounting's grid only: medians of both sides, ratio, epsilons."""
    import dp_accounting

    from accounting.events import ScheduleEvent
    from accounting.order_screen import event_epsilon
    from accounting.orders import DP_ACCOUNTING_ORDERS

    q, base, delta, T = INV_K["q"], INV_K["base_sigma"], INV_K["delta"], INV_K["steps"]

    def ours() -> float:
        event = ScheduleEvent.from_schedule("inv-k", base, T, q)
        return event_epsilon(event, DP_ACCOUNTING_ORDERS, delta).epsilon

    def theirs() -> float:
        z = base / np.sqrt(np.arange(1, T + 1))  # same inv-k schedule, built independently
        event = dp_accounting.ComposedDpEvent(
            [dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(float(s))) for s in z]
        )
        return dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(delta)

    _log(f"(a) dp-accounting, T={T}, median of {max(1, dp_repeats)} (about 16 s each) ...")
    t_theirs, eps_theirs = median_time(theirs, dp_repeats)
    t_ours, eps_ours = median_time(ours, repeats)
    return {
        "params": {**INV_K, "schedule": "inv-k (sigma_k = sigma/sqrt(k))", "grid": "dp-accounting's"},
        "repeats": max(1, repeats),
        "dp_repeats": max(1, dp_repeats),
        "dp_accounting_s": t_theirs,
        "eps_dp_accounting": eps_theirs,
        "ours_s": t_ours,
        "eps_ours": eps_ours,
        "eps_ours_hex": float(eps_ours).hex(),
        "speedup": t_theirs / t_ours,
        "eps_rel_diff": abs(eps_ours - eps_theirs) / abs(eps_theirs),
        "targets": {"speedup": ">= 1000", "eps_rel_diff": "<= 1e-6"},
    }


def _print_invk(s: dict[str, Any]) -> None:
    p = s["params"]
    print(f"inv-k schedule, q={p['q']}, base sigma={p['base_sigma']}, delta={p['delta']}, T={p['steps']}")
    print(
        f"    dp-accounting RdpAccountant  {s['dp_accounting_s'] * 1e3:10.1f} ms (median of"
        f" {s['dp_repeats']})  eps={s['eps_dp_accounting']:.12g}"
    )
    print(
        f"    dptheory event_epsilon       {s['ours_s'] * 1e3:10.2f} ms (median of {s['repeats']})"
        f"  eps={s['eps_ours']:.12g} ({s['eps_ours_hex']})"
    )
    print(
        f"    speed-up {s['speedup']:.0f}x (target >= 1000x); eps relative difference {s['eps_rel_diff']:.2e}"
    )


def bench_schedule(repeats: int, dp_repeats: int) -> dict[str, Any]:
    import dp_accounting

    from accounting.conversion import rdp_to_epsilon
    from accounting.events import ScheduleEvent
    from accounting.order_screen import event_epsilon
    from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS

    q, base, delta, T = INV_K["q"], INV_K["base_sigma"], INV_K["delta"], INV_K["steps"]

    def ours(steps: int, orders: np.ndarray) -> float:
        # End to end as users get epsilon: build the schedule, evaluate the orders that can be
        # optimal (accounting.order_screen), convert.
        event = ScheduleEvent.from_schedule("inv-k", base, steps, q)
        return event_epsilon(event, orders, delta).epsilon

    def ours_curve(steps: int, orders: np.ndarray) -> float:
        # The whole RDP curve (one vectorised call), then converted.
        event = ScheduleEvent.from_schedule("inv-k", base, steps, q)
        return rdp_to_epsilon(event.rdp(orders), delta).epsilon

    def theirs(steps: int) -> float:
        z = base / np.sqrt(np.arange(1, steps + 1))  # same inv-k schedule, built independently
        event = dp_accounting.ComposedDpEvent(
            [dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(float(s))) for s in z]
        )
        acc = dp_accounting.rdp.RdpAccountant()  # its default grid == DP_ACCOUNTING_ORDERS
        return acc.compose(event).get_epsilon(delta)

    _log(f"(a) dp-accounting on T={T} distinct steps (takes about a minute) ...")
    theirs(5)  # warm-up (imports, first-call overheads) on a tiny schedule; the real run takes minutes
    t_theirs, eps_theirs = best_time(lambda: theirs(T), dp_repeats, warmup=False)
    _log(f"    done in {t_theirs:.1f} s; dptheory T={T} ...")
    t_ours, eps_ours = best_time(lambda: ours(T, DP_ACCOUNTING_ORDERS), repeats)
    t_ours_def, eps_ours_def = best_time(lambda: ours(T, DEFAULT_ORDERS), repeats)
    t_curve, eps_curve = best_time(lambda: ours_curve(T, DP_ACCOUNTING_ORDERS), repeats)
    big = _bench_long(repeats)
    return {
        "params": {**INV_K, "schedule": "inv-k (sigma_k = sigma/sqrt(k))"},
        "dp_accounting_s": t_theirs,
        "eps_dp_accounting": eps_theirs,
        "ours_s": t_ours,
        "eps_ours": eps_ours,
        "speedup": t_theirs / t_ours,
        "ours_whole_curve_s": t_curve,
        "eps_ours_whole_curve": eps_curve,
        "speedup_whole_curve": t_theirs / t_curve,
        "eps_rel_diff": abs(eps_ours - eps_theirs) / abs(eps_theirs),
        "ours_default_grid_s": t_ours_def,
        "eps_ours_default_grid": eps_ours_def,
        "speedup_default_grid": t_theirs / t_ours_def,
        "big": big,
        "targets": {"speedup": ">= 100", "eps_rel_diff": "<= 1e-6", "big_default_s": "< 1"},
    }


def _bench_long(repeats: int) -> list[dict[str, Any]]:
    """T = 100 000 distinct steps: the default path (auto -> sigma grid, sound upper bounds)
    against the exact per-step evaluation (timed once: it takes tens of seconds)."""
    from accounting.conversion import rdp_to_epsilon
    from accounting.events import ScheduleEvent
    from accounting.orders import DEFAULT_ORDERS
    from accounting.rdp import subsampled_gaussian_rdp

    q, delta, T = INV_K["q"], INV_K["delta"], INV_K["big_steps"]
    rows = []
    for base in INV_K["big_bases"]:

        def default(base: float = base) -> Any:
            # End to end, as a caller does it: build the schedule event, RDP (auto), convert.
            event = ScheduleEvent.from_schedule("inv-k", base, T, q)
            return rdp_to_epsilon(event.rdp(DEFAULT_ORDERS), delta)

        def exact(base: float = base) -> Any:
            event = ScheduleEvent.from_schedule("inv-k", base, T, q)
            z = np.asarray(event.noise_multipliers, dtype=float)
            return rdp_to_epsilon(subsampled_gaussian_rdp(q, z, DEFAULT_ORDERS, evaluation="exact"), delta)

        _log(f"    dptheory T={T}, base sigma {base:g}: default (grid) ...")
        t_def, r_def = best_time(default, repeats)
        _log("        exact (once, slow) ...")
        t_ex, r_ex = best_time(exact, 1, warmup=False)
        est = [w for w in r_def.warnings if w.startswith("long schedule")]
        rows.append(
            {
                "base_sigma": base,
                "last_sigma": base / T**0.5,
                "default_s": t_def,
                "eps_default": r_def.epsilon,
                "order_default": r_def.order,
                "exact_s": t_ex,
                "eps_exact": r_ex.epsilon,
                "order_exact": r_ex.order,
                "eps_rel_gap": r_def.epsilon / r_ex.epsilon - 1.0,
                "speedup": t_ex / t_def,
                "warning": est[0] if est else "",
            }
        )
    return rows


def dp_accounting_static_calibration(q: float, steps: int, eps: float, delta: float) -> float:
    """The anchor: dp-accounting's ``calibrate_dp_mechanism`` with its RDP accountant on ``steps``
    Poisson-subsampled Gaussian steps (shared with ``run_all.py``)."""
    import dp_accounting

    return dp_accounting.calibrate_dp_mechanism(
        dp_accounting.rdp.RdpAccountant,
        lambda s: dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), steps
        ),
        eps,
        delta,
    )


def _our_calibration_direct() -> Callable[[], float]:
    """Static DP-SGD calibration through accounting.calibration (+ rdp + conversion)."""
    from accounting.calibration import calibrate_decreasing
    from accounting.conversion import rdp_to_epsilon
    from accounting.orders import DEFAULT_ORDERS
    from accounting.rdp import subsampled_gaussian_rdp

    q, T, eps, delta = STATIC["q"], STATIC["steps"], STATIC["eps"], STATIC["delta"]

    def fn(z: float) -> float:
        return rdp_to_epsilon(subsampled_gaussian_rdp(q, z, DEFAULT_ORDERS, steps=T), delta).epsilon

    def run() -> float:
        # Same search interval as dp-accounting's default bracket search ends up using.
        return calibrate_decreasing(fn, eps, option="--noise-multiplier", lower=0.1, upper=100.0).value

    return run


def _our_calibration_api() -> Callable[[], float] | None:
    """The public entry point ``dptheory.calibrate`` (what the CLI runs), if present."""
    try:
        import dptheory
    except ImportError:
        return None
    q, T, eps, delta = STATIC["q"], STATIC["steps"], STATIC["eps"], STATIC["delta"]

    def run() -> float:
        return dptheory.calibrate(eps=eps, delta=delta, algo="dpsgd", sample_rate=q, steps=T).noise_multiplier

    return run


def bench_calibration(repeats: int, slow_repeats: int) -> dict[str, Any]:
    import dp_accounting

    q, T, eps, delta = STATIC["q"], STATIC["steps"], STATIC["eps"], STATIC["delta"]
    rows: dict[str, dict[str, Any]] = {}

    _log("(b) calibration ...")
    api = _our_calibration_api()
    if api is not None:
        t, z = best_time(api, repeats)
        rows["dptheory.calibrate"] = {"seconds": t, "sigma": float(z)}
    t, z = best_time(_our_calibration_direct(), repeats)
    rows["accounting.calibration"] = {"seconds": t, "sigma": float(z)}

    def dpa() -> float:
        return dp_accounting_static_calibration(q, T, eps, delta)

    t, z = best_time(dpa, slow_repeats)
    rows["dp_accounting"] = {"seconds": t, "sigma": float(z)}

    try:
        from opacus.accountants.utils import get_noise_multiplier
    except Exception as err:  # ImportError, or a broken install
        rows["opacus"] = {"skipped": f"opacus unavailable: {type(err).__name__}: {err}"}
    else:

        def opa() -> float:
            return get_noise_multiplier(
                target_epsilon=eps, target_delta=delta, sample_rate=q, steps=T, accountant="rdp"
            )

        t, z = best_time(opa, slow_repeats)
        rows["opacus"] = {"seconds": t, "sigma": float(z)}

    # Neutral judge: dp-accounting's RdpAccountant on its own default grid.
    for row in rows.values():
        if "sigma" in row:
            ev = dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(row["sigma"])), T
            )
            row["eps_dp_accounting_rdp"] = dp_accounting.rdp.RdpAccountant().compose(ev).get_epsilon(delta)
            row["meets_target"] = bool(row["eps_dp_accounting_rdp"] <= eps)
    ours_name = "dptheory.calibrate" if "dptheory.calibrate" in rows else "accounting.calibration"
    ours = rows[ours_name]
    for name, row in rows.items():
        if name != ours_name and "sigma" in row:
            row["time_ratio_theirs_over_ours"] = row["seconds"] / ours["seconds"]
            row["sigma_ratio_ours_over_theirs"] = ours["sigma"] / row["sigma"]
    return {
        "params": STATIC,
        "ours": ours_name,
        "rows": rows,
        "targets": {"time_ratio": "> 1 vs both", "sigma_ratio": "<= 1 vs both"},
    }


def _print_human(out: dict[str, Any]) -> None:
    s = out["schedule"]
    p = s["params"]
    print(f"(a) inv-k schedule, q={p['q']}, base sigma={p['base_sigma']}, delta={p['delta']}, T={p['steps']}")
    print(
        f"    dp-accounting RdpAccountant  {s['dp_accounting_s']:10.3f} s   eps={s['eps_dp_accounting']:.12g}"
    )
    print(f"    dptheory (same grid)         {s['ours_s']:10.3f} s   eps={s['eps_ours']:.12g} (screened)")
    t, e = s["ours_whole_curve_s"], s["eps_ours_whole_curve"]
    print(f"    dptheory (whole RDP curve)   {t:10.3f} s   eps={e:.12g}")
    t, e = s["ours_default_grid_s"], s["eps_ours_default_grid"]
    print(f"    dptheory (default grid)      {t:10.3f} s   eps={e:.12g}")
    print(
        f"    speed-up {s['speedup']:.1f}x (default grid {s['speedup_default_grid']:.1f}x, whole curve"
        f" {s['speedup_whole_curve']:.1f}x), target >= 100x"
    )
    print(f"    eps relative difference {s['eps_rel_diff']:.2e}, target <= 1e-6")
    big = p["big_steps"]
    for r in s["big"]:
        print(
            f"    T={big}, base sigma {r['base_sigma']:g} (sigma_T {r['last_sigma']:.3g}), default grid:"
            f" default (auto -> sigma grid) {r['default_s']:.3f} s eps={r['eps_default']:.9g};"
            f" exact {r['exact_s']:.1f} s eps={r['eps_exact']:.9g};"
            f" eps gap {r['eps_rel_gap']:.2e} relative; target < 1 s"
        )
    c = out["calibration"]
    p = c["params"]
    print(f"(b) calibrate static DP-SGD q={p['q']}, T={p['steps']}, eps={p['eps']}, delta={p['delta']}")
    for name, row in c["rows"].items():
        if "skipped" in row:
            print(f"    {name:24s} skipped: {row['skipped']}")
            continue
        line = f"    {name:24s} {row['seconds'] * 1e3:9.1f} ms  sigma={row['sigma']:.9f}"
        line += f"  eps(dp-acc RDP)={row['eps_dp_accounting_rdp']:.9f}"
        if "time_ratio_theirs_over_ours" in row:
            line += f"  time/ours={row['time_ratio_theirs_over_ours']:.1f}"
            line += f"  sigma ours/this={row['sigma_ratio_ours_over_theirs']:.9f}"
        print(line)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats of our (fast) calls")
    ap.add_argument("--slow-repeats", type=int, default=1, help="timed repeats of the reference calls")
    ap.add_argument("--invk", action="store_true", help="only the T = 1000 inv-k case, medians (see above)")
    args = ap.parse_args(argv)

    import logging

    logging.getLogger("absl").setLevel(logging.ERROR)  # dp-accounting's per-order warnings
    if args.invk:
        res = bench_invk(max(args.repeats, 31), max(args.slow_repeats, 3))
        if args.json:
            print(json.dumps(res, indent=2, default=_json_default))
        else:
            _print_invk(res)
        return 0
    out = {
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "numpy": np.__version__,
        },
        "schedule": bench_schedule(args.repeats, args.slow_repeats),
        "calibration": bench_calibration(args.repeats, max(3, args.slow_repeats)),
    }
    if args.json:
        print(json.dumps(out, indent=2, default=_json_default))
    else:
        _print_human(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
