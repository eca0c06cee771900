"""Entry point of the ``dptheory`` console script.

Each subcommand lives in its own module exposing ``register(subparsers)`` and
``run(args) -> int``; modules keep heavy imports (torch, sympy, matplotlib) inside ``run``
so that ``dptheory calibrate`` starts fast.

Every bad input ends the same way: one line on stderr naming the option and what is
allowed, exit status 2, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from accounting.errors import InvalidParameter

SUBCOMMANDS = ("calibrate", "epsilon", "audit", "run", "verify", "figures")


class UsageError(InvalidParameter):
    """Bad command-line input that is not a parameter range (e.g. an unreadable file)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error on two lines; we want one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="dptheory",
        description="Privacy accounting and theory verification for private optimizers.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"dptheory.cli.{name}_cmd")
        module.register(sub)
    return parser


def _version() -> str:
    from dptheory import __version__

    return f"dptheory {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except InvalidParameter as exc:
        sys.stderr.write(f"dptheory {args.command}: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("dptheory: interrupted\n")
        return 130
    except BrokenPipeError:
        # `dptheory ... | head`: the reader left; silence the flush at exit as well.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:
        # An input or output path that failed after the up-front checks (disk full, a file that
        # vanished): still one line, never a traceback.
        where = f" '{exc.filename}'" if exc.filename else ""
        sys.stderr.write(f"dptheory {args.command}: error: cannot access{where}: {exc.strerror or exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
