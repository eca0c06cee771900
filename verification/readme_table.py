"""The README's verdict table: ``python -m verification.readme_table [--quick] [--seed S] [--write F]``.

Prints the same table as ``dptheory verify --all --markdown-table``; with ``--write`` it replaces
the block between ``<!-- verdict-table:start -->`` and ``<!-- verdict-table:end -->`` of that
file instead (atomically). The table always comes from a fresh run of every check, never typed by
hand.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

START, END = "<!-- verdict-table:start -->", "<!-- verdict-table:end -->"


def splice(document: str, table: str) -> str:
    """``document`` with the text between the markers replaced by ``table``."""
    i, j = document.find(START), document.find(END)
    if i < 0 or j < i:
        raise ValueError(f"markers {START} ... {END} not found")
    return document[: i + len(START)] + "\n" + table.rstrip("\n") + "\n" + document[j:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verification.readme_table", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="the CI-sized variant of every check")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write", metavar="FILE", help="splice the table into FILE between the markers")
    args = ap.parse_args(argv)
    if args.write:
        try:
            with open(args.write, encoding="utf-8") as fh:
                document = fh.read()
            splice(document, "")
        except (OSError, ValueError) as exc:
            sys.stderr.write(f"readme_table: error: --write: {exc}\n")
            return 2
    from verification.engine import run_claims, select
    from verification.report import verdict_table

    results = run_claims(select(None, None, True), seed=args.seed, quick=args.quick)
    table = verdict_table(results)
    if not args.write:
        sys.stdout.write(table)
    else:
        folder = os.path.dirname(os.path.abspath(args.write))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".readme-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(splice(document, table))
        os.replace(tmp, args.write)
    return 1 if any(r.crashed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
