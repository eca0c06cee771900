"""`dptheory audit-run`: audit one real training run with canaries (one-run audit, digits demo).

    dptheory audit-run [--algo dpsgd|dicesgd|d2p2sgd] (--eps E | --noise-multiplier Z) --delta D
                       [--canaries M] [--mode white-box|black-box] [--noise-scale S]
                       [--residual-clip R] [--confidence 0.95] [--seed S] [--json]

Trains a small MLP on sklearn's digits once with M canaries (each included with probability 1/2)
and prints, side by side, the certified epsilon of the run as configured and the one-run lower
bounds (Steinke et al. 2023; f-DP against the exact subsampled-Gaussian curve, Mahloujifar et al.
2024) with their ratio to it.  The Python entry point for your own training is
``dptheory.auditing.canaries.audit_training``; see docs/audits.md ("Run audits").
"""

from __future__ import annotations

import json
import math
from typing import Any

from accounting.errors import InvalidParameter


def register(sub) -> None:
    from dptheory.cli.numbers import integer, number

    p = sub.add_parser(
        "audit-run",
        help="audit one real training run with canaries (one-run lower bound vs certified epsilon)",
        description=(
            "Train a small model on sklearn's digits once with M canaries and compare the certified "
            "epsilon of the run with one-run lower bounds on it (95% confidence by default). "
            "An estimate above the certified epsilon means the implementation leaks more than it "
            "accounts for."
        ),
    )
    p.add_argument("--algo", choices=("dpsgd", "dicesgd", "d2p2sgd"), default="dpsgd")
    p.add_argument("--eps", type=number, metavar="E", help="calibrate the noise to this certified epsilon")
    p.add_argument("--noise-multiplier", type=number, metavar="Z", help="noise multiplier (instead of --eps)")
    p.add_argument("--delta", type=number, default=1e-5, metavar="D", help="delta in (0, 1) (default 1e-5)")
    p.add_argument("--canaries", type=integer, default=1000, metavar="M", help="number of canaries (>= 10)")
    p.add_argument(
        "--mode",
        choices=("white-box", "black-box"),
        default="white-box",
        help="white-box: Dirac gradient canaries scored on every iterate; black-box: "
        "mislabelled inputs scored by the final model's loss",
    )
    p.add_argument(
        "--noise-scale",
        type=number,
        default=1.0,
        metavar="S",
        help="the run adds S times the noise it accounts for (default 1). S < 1 plants the bug the "
        "audit must catch: an implementation that leaks more than its accountant says",
    )
    p.add_argument(
        "--residual-clip",
        type=number,
        metavar="R",
        help="dicesgd only: residual clip R (certified epsilon is then the flush-regime one)",
    )
    p.add_argument("--confidence", type=number, default=0.95, metavar="C", help="in (0.5, 1) (default 0.95)")
    p.add_argument("--seed", type=integer, default=0, metavar="S", help="seed of the run and canaries")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def _check(args) -> None:
    if (args.eps is None) == (args.noise_multiplier is None):
        raise InvalidParameter("--eps", "give exactly one of --eps and --noise-multiplier")
    if args.eps is not None and not args.eps > 0:
        raise InvalidParameter("--eps", f"must be > 0 (got {args.eps:g})")
    if args.noise_multiplier is not None and not args.noise_multiplier > 0:
        raise InvalidParameter("--noise-multiplier", f"must be > 0 (got {args.noise_multiplier:g})")
    if not 0 < args.delta < 1:
        raise InvalidParameter("--delta", f"must be in (0, 1) (got {args.delta:g})")
    if not 10 <= args.canaries <= 100_000:
        raise InvalidParameter("--canaries", f"must be an integer in [10, 100000] (got {args.canaries})")
    if not 0 < args.noise_scale <= 100:
        raise InvalidParameter("--noise-scale", f"must be in (0, 100] (got {args.noise_scale:g})")
    if not 0.5 < args.confidence < 1:
        raise InvalidParameter("--confidence", f"must be in (0.5, 1) (got {args.confidence:g})")
    if args.residual_clip is not None and (args.algo != "dicesgd" or not args.residual_clip > 0):
        raise InvalidParameter("--residual-clip", "is for --algo dicesgd only, and must be > 0")
    if args.seed < 0:
        raise InvalidParameter("--seed", f"must be >= 0 (got {args.seed})")


def _certified(args, q: float, steps: int, n: int, z: float | None) -> tuple[float, float]:
    """(noise multiplier, certified epsilon) of the run as configured."""
    from dptheory import api

    opts: dict[str, Any] = dict(algo=args.algo, delta=args.delta, sample_rate=q, steps=steps, dataset_size=n)
    if args.algo == "dpsgd":
        opts["c1"] = 1.0
    elif args.algo == "dicesgd":
        opts.update(c1=1.0, c2=1.0)
        if args.residual_clip is not None:
            opts["residual_clip"] = args.residual_clip
    if z is None:
        report = api.calibrate(eps=args.eps, **opts)
        return float(report.noise_multiplier), float(report.epsilon)
    report = api.epsilon(noise_multiplier=z, **opts)
    return z, float(report.epsilon)


def run(args) -> int:
    _check(args)
    from dptheory.auditing import CanaryScoreAuditor, SubsampledGaussian
    from dptheory.auditing.digits_run import schedule, train_audited
    from dptheory.cli.progress import bar

    n = 1797  # sklearn digits
    q, steps = schedule(n)
    z, certified = _certified(args, q, steps, n, args.noise_multiplier)
    with bar(args, desc="audit-run", total=steps, unit=" steps") as steps_bar:

        def progress(t: int, total: int) -> None:  # t steps of `total` done
            steps_bar.update(t - steps_bar.n)
            if t == total:
                steps_bar.set_description_str("audit-run: auditing")

        r = train_audited(
            algo=args.algo,
            noise_multiplier=z,
            canaries=args.canaries,
            mode=args.mode,
            noise_scale=args.noise_scale,
            residual_clip=args.residual_clip,
            seed=args.seed,
            progress=None if steps_bar is None else progress,
        )
        auditor = CanaryScoreAuditor(r["in_scores"], r["out_scores"], seed=args.seed)
        sig = 1.0 - args.confidence
        lower = auditor.epsilon_one_run(sig, args.delta, one_sided=False)
        lower_fdp = auditor.epsilon_one_run_fdp(
            sig, args.delta, one_sided=False, curve=SubsampledGaussian(q, steps)
        )
    ideal = _ideal(args, certified, sig)
    claimed = None
    if args.algo == "dicesgd" and args.residual_clip is None:
        # the DP-SGD epsilon at the same noise: what DiceSGD's paper claims for its hidden state
        from dptheory import api

        claimed = float(
            api.epsilon(
                algo="dpsgd",
                noise_multiplier=z,
                delta=args.delta,
                sample_rate=q,
                steps=steps,
                dataset_size=n,
                c1=1.0,
            ).epsilon
        )
    best = max(lower, lower_fdp)
    # The f-DP bound holds only within its family, the DP-SGD curve: it may decide only for dpsgd.
    # There either of two bounds at `confidence` may fire, so the verdict holds at 1 - 2 sig (union
    # bound); for the other algorithms only Steinke's (family-free) bound decides, at `confidence`.
    fdp_decides = args.algo == "dpsgd"
    deciding = best if fdp_decides else lower
    leaks = deciding > certified
    verdict_confidence = 1.0 - 2.0 * sig if fdp_decides else args.confidence
    out = {
        "algo": args.algo,
        "mode": args.mode,
        "canaries": args.canaries,
        "confidence": args.confidence,
        "delta": args.delta,
        "noise_multiplier": z,
        "noise_scale": args.noise_scale,
        "sample_rate": q,
        "steps": steps,
        "certified_epsilon": certified,
        "epsilon_lower": lower,
        "epsilon_lower_fdp": lower_fdp,
        # the deciding bound's ratio, so that the printed ratio exceeds 1 exactly when the verdict fails
        "ratio": deciding / certified if certified > 0 and math.isfinite(certified) else None,
        "leaks_more_than_accounted": leaks,
        "verdict_confidence": verdict_confidence,
        "fdp_in_family": fdp_decides,
        "ideal_epsilon_lower": ideal,
        # undefined (null) when the ideal audit itself certifies nothing (lower bound 0)
        "ratio_to_ideal": (best / ideal) if ideal else None,
        "dpsgd_epsilon_same_noise": claimed,
        "accuracy": r["accuracy"],
    }
    if args.json:
        print(json.dumps(out))
        return 0
    print(_render(out))
    return 0


def _ideal(args, certified: float, significance: float) -> float | None:
    """The better of the two one-sided-and-two-sided estimates on ideal scores at the same m:
    in ~ N(mu, 1), out ~ N(0, 1), mu the GDP parameter whose epsilon at delta is the certified
    one (seeded; the yardstick for how good the run's canaries and scores are)."""
    import numpy as np
    from scipy import optimize

    from accounting.audit.stats import gaussian_delta
    from dptheory.auditing import CanaryScoreAuditor

    if not 0 < certified < 50:
        return None
    mu = optimize.brentq(lambda u: gaussian_delta(certified, u) - args.delta, 1e-6, 60.0)
    rng = np.random.default_rng(args.seed)
    s = rng.random(args.canaries) < 0.5
    x = rng.normal(size=args.canaries) + mu * s
    a = CanaryScoreAuditor(x[s], x[~s], seed=args.seed)
    return max(
        a.epsilon_one_run(significance, args.delta, one_sided=False),
        a.epsilon_one_run_fdp(significance, args.delta, one_sided=False),
    )


def _down(x: float) -> str:
    """Lower bounds print rounded down (4 significant digits)."""
    if x <= 0:
        return "0"
    p = 10 ** (math.floor(math.log10(x)) - 3)
    return f"{math.floor(x / p) * p:.4g}"


def _up(x: float) -> str:
    if not math.isfinite(x):
        return "inf"
    if x <= 0:
        return "0"
    p = 10 ** (math.floor(math.log10(x)) - 3)
    return f"{math.ceil(x / p) * p:.4g}"


def _render(o: dict) -> str:
    pct = f"{100 * o['confidence']:g}%"
    lines = [
        f"dptheory audit-run: {o['algo']} on digits, {o['canaries']} {o['mode']} canaries, "
        f"q = {o['sample_rate']:.4g}, T = {o['steps']}, z = {_up(o['noise_multiplier'])}"
        + ("" if o["noise_scale"] == 1 else f", run adds {o['noise_scale']:g}x the accounted noise"),
    ]
    rows = [
        (f"certified epsilon (delta = {o['delta']:g})", _up(o["certified_epsilon"])),
        (f"one-run lower bound, Steinke ({pct})", _down(o["epsilon_lower"])),
        (
            f"one-run lower bound, f-DP exact curve ({pct})",
            _down(o["epsilon_lower_fdp"])
            + ("" if o["fdp_in_family"] else "  (DP-SGD's curve: indicative only for this algorithm)"),
        ),
    ]
    if o["ratio"] is not None:
        which = "best lower bound" if o["fdp_in_family"] else "Steinke bound"
        rows.append((f"ratio ({which} / certified)", _down(o["ratio"])))
    if o["ideal_epsilon_lower"] is not None:
        rows.append(
            (
                "same audit on ideal GDP scores",
                f"{_down(o['ideal_epsilon_lower'])} (run / ideal = "
                f"{'n/a' if o['ratio_to_ideal'] is None else _down(o['ratio_to_ideal'])}: "
                "quality of the canaries and scores)",
            )
        )
    width = max(len(label) for label, _ in rows) + 2
    lines += [f"  {label + ':':<{width}}{value}" for label, value in rows]
    if o["dpsgd_epsilon_same_noise"] is not None:
        c = o["dpsgd_epsilon_same_noise"]
        best = max(o["epsilon_lower"], o["epsilon_lower_fdp"])
        verdict = "above it: the hidden state leaks" if o["epsilon_lower"] > c else "not above it"
        lines.append(
            f"  DP-SGD epsilon at the same noise (DiceSGD paper's claim): {_up(c)}; Steinke bound {verdict}"
            f" (best bound {_down(best)})"
        )
    if o["leaks_more_than_accounted"]:
        lines.append(
            "  AUDIT FAILED: the implementation leaks more than it accounts for "
            f"(lower bound above the certified epsilon; verdict at {100 * o['verdict_confidence']:g}% "
            "confidence)"
        )
    else:
        lines.append("  consistent: no evidence that the run leaks more than it accounts for")
    lines.append(f"  (test accuracy {o['accuracy']:.3f}; see docs/audits.md, 'Run audits')")
    return "\n".join(lines)
