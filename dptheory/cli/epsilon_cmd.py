"""``dptheory epsilon --noise-multiplier Z --delta D --algo ALGO [options] [--json]``.

Prints the epsilon of ALGO at delta for base noise multiplier Z (certified by default).
"""

from __future__ import annotations

import argparse

from dptheory.cli.numbers import number
from dptheory.cli.params import add_privacy_options


def register(sub) -> None:
    p = sub.add_parser(
        "epsilon",
        help="epsilon of an algorithm at a given noise multiplier",
        description=(
            "Epsilon at --delta of ALGO run with base noise multiplier Z (noise std / L2 sensitivity "
            "of the summed quantity; schedules scale it per step)."
        ),
    )
    p.add_argument(
        "--noise-multiplier",
        type=number,
        metavar="Z",
        help="base noise multiplier (> 0); required unless --schedule-file is given (then default 1)",
    )
    p.add_argument("--delta", type=number, required=True, metavar="D", help="delta in (0, 1)")
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
        render_defaults,
        render_report,
    )

    options = options_from_args(args)
    z = args.noise_multiplier
    if z is None and args.schedule_file is None:
        from accounting.errors import InvalidParameter

        raise InvalidParameter("--noise-multiplier", "is required (a number > 0)")
    if args.compare:
        from dptheory.cli.progress import bar

        with bar(args, desc="epsilon --compare", total=3, unit=" stages") as stages:

            def progress(name: str) -> None:
                if stages is not None:
                    stages.set_postfix_str(name)
                    stages.update(0 if name == "epsilon claimed" else 1)

            result = api.compare(
                defaults="paper",
                noise_multiplier=1.0 if z is None else z,
                delta=args.delta,
                algo=args.algo,
                mode=args.mode,
                accountant=args.accountant,
                progress=progress,
                **options,
            )
        main = result.get("certified")
        if hasattr(main, "warnings"):
            emit_warnings(main.warnings)
        if args.json:
            print(json.dumps(compare_to_json(result), indent=2, allow_nan=False))
        else:
            print(render_compare(result, command="epsilon"))
            report = main if hasattr(main, "defaults_assumed") else result.get("claimed")
            print(render_defaults(report))
        return 0
    report = api.epsilon(
        defaults="paper",
        noise_multiplier=z,
        delta=args.delta,
        algo=args.algo,
        mode=args.mode,
        accountant=args.accountant,
        **options,
    )
    emit_warnings(report.warnings)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, allow_nan=False))
    else:
        print(render_report(report, command="epsilon"))
    return 0
