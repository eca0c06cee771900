"""Print the README's verdict table: ``python -m verification.readme_table [--quick] [--seed S]``.

Equivalent to ``dptheory verify --all --markdown-table``; the table is generated from a fresh
run of every check, never typed by hand.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verification.readme_table", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="the CI-sized variant of every check")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from verification.engine import run_claims, select
    from verification.report import verdict_table

    results = run_claims(select(None, None, True), seed=args.seed, quick=args.quick)
    sys.stdout.write(verdict_table(results))
    return 1 if any(r.crashed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
