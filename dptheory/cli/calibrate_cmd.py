"""``dptheory calibrate --eps E --delta D --algo ALGO [options] [--json]``.

Prints the smallest noise multiplier whose epsilon (in the chosen mode, certified by default)
is <= E, or with ``--target steps`` the largest number of steps at a given noise multiplier.
"""

from __future__ import annotations

import argparse

from dptheory.cli.numbers import number
from dptheory.cli.params import add_privacy_options


def register(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="smallest noise multiplier reaching (eps, delta) for an algorithm",
        description=(
            "Calibrate the noise multiplier (or, with --target steps, the number of steps) of ALGO so "
            "that its epsilon at --delta is <= --eps. The result always satisfies the target; noise is "
            "within a relative tolerance of 1e-6 of the exact root (regula falsi on log z, log eps)."
        ),
    )
    p.add_argument("--eps", type=number, required=True, metavar="E", help="target epsilon (> 0)")
    p.add_argument("--delta", type=number, required=True, metavar="D", help="target delta in (0, 1)")
    p.add_argument(
        "--target",
        choices=("noise_multiplier", "steps"),
        default="noise_multiplier",
        help="what to calibrate (default noise_multiplier; steps needs --noise-multiplier)",
    )
    p.add_argument(
        "--noise-multiplier", type=number, metavar="Z", help="fixed base noise multiplier for --target steps"
    )
    add_privacy_options(p)
    p.add_argument("--compare", action="store_true", help="print claimed, certified and audit side by side")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from dptheory import api
    from dptheory.cli.params import (
        compare_to_json,
        emit_warnings,
        options_from_args,
        render_compare,
        render_report,
    )

    options = options_from_args(args)
    if args.compare:
        if args.target != "noise_multiplier":
            from dptheory.cli.main import UsageError

            raise UsageError("--compare", "only works with --target noise_multiplier")
        from dptheory.cli.progress import bar

        with bar(args, desc="calibrate --compare", unit=" stages") as stages:

            def stage(name: str) -> None:
                if stages is not None:
                    stages.set_postfix_str(name, refresh=False)
                    stages.update(1)

            result = api.compare(
                defaults="paper",
                eps=args.eps,
                delta=args.delta,
                algo=args.algo,
                mode=args.mode,
                accountant=args.accountant,
                progress=stage,
                **options,
            )
        emit_warnings(result["calibrated"].warnings)
        if args.json:
            print(json.dumps(compare_to_json(result), indent=2, allow_nan=False))
        else:
            print(render_report(result["calibrated"], command="calibrate"))
            print(render_compare(result, command="calibrate"))
        return 0
    from dptheory.cli.progress import bar as progress_bar

    # A progress bar only on a terminal and without --json (long schedules take a while to
    # calibrate; dptheory.cli.progress)
    with progress_bar(args, desc="calibrating", unit=" evals") as bar:

        def progress(value: float, epsilon: float) -> None:
            if bar is not None:
                bar.set_postfix_str(f"{args.target} {value:.6g} -> eps {epsilon:.6g}", refresh=False)
                bar.update(1)

        same = dict(
            defaults="paper",
            eps=args.eps,
            delta=args.delta,
            algo=args.algo,
            mode=args.mode,
            accountant=args.accountant,
            target=args.target,
            noise_multiplier=args.noise_multiplier,
        )
        report = api.calibrate(progress=progress, **same, **options)
        # DiceSGD without a residual clip: what a user can train with, in the same run (first screen)
        from dptheory import dicesgd_hint

        alt = dicesgd_hint.trainable_alternative(
            report, calibrate=lambda **kw: api.calibrate(**same, **kw), options=options, progress=progress
        )
    emit_warnings(report.warnings)
    if args.json:
        out = report.to_json()
        if alt is not None:
            out["trainable_alternative"] = alt
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        print(render_report(report, command="calibrate", note=alt and alt["sentence"]))
    return 0
