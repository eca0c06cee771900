"""`dptheory calibrate` (placeholder until its issue lands: refuses with exit 2)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="(not yet available)")
    p.set_defaults(handler=run)


def run(args) -> int:
    from dptheory.cli.main import UsageError

    raise UsageError("calibrate", "this subcommand is not implemented yet")
