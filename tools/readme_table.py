"""Generated tables of the docs: the verdict table (``docs/verdicts.md``) and the README's findings.

``python -m tools.readme_table [--quick] [--seed S] [--write F] [--findings F [--from V]]``

Without options it prints the verdict table, the same as ``dptheory verify --all --markdown-table``.
``--write F`` replaces the block between ``<!-- verdict-table:start -->`` and
``<!-- verdict-table:end -->`` of F (``docs/verdicts.md``). ``--findings F`` replaces the block
between ``<!-- findings:start -->`` and ``<!-- findings:end -->`` of F (``README.md``) with the
findings table, built from the same run's verdict table; with ``--from V`` no check runs and the
findings come from the verdict table already in V. Files are written atomically.

Both tables come from a run of every check, never typed by hand: a finding's wording
(:data:`FINDINGS`) carries no measured number, its verdict and evidence are the verdict table's
cells for that claim, so the README and ``docs/verdicts.md`` cannot disagree
(``tests/project/test_readme_examples.py`` checks it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

START, END = "<!-- verdict-table:start -->", "<!-- verdict-table:end -->"
FINDINGS_START, FINDINGS_END = "<!-- findings:start -->", "<!-- findings:end -->"

#: The README's findings, in order: (claim id, what it means for a reader). Numbers come from the
#: claim's evidence, never from this text.
FINDINGS: tuple[tuple[str, str], ...] = (
    (
        "dicesgd.thm3.7",
        "**DiceSGD's Theorem 3.7 noise is not private.** `clip(e_t, C2)` enters the update undivided "
        "by B, so one example can shift the output by 2·C2 per step.",
    ),
    ("dicesgd.app-c4", "**Nor is the noise App. C.4 prescribes for the CIFAR-10 run.**"),
    (
        "dicesgd.remark-constant-factor",
        '**"DiceSGD needs only a constant factor more noise than DP-SGD" is false** in Theorem 3.7\'s '
        "setting, even at a fixed batch size.",
    ),
    ("dicesgd.code-noise", "**DiceSGD's released code is refuted** at its own ablation setting."),
    (
        "d2p2.projection-postprocessing",
        "**D2P2-SGD's projection is not post-processing:** the noise is added after A_kᵀg/√p, so the "
        "sensitivity scales with ‖A_kᵀu‖/√p.",
    ),
    (
        "d2p2.thm1",
        "**D2P2-SGD's Theorem 1 is false for every choice of its constants** for the algorithm as "
        "written (each noisy y_k released, A_k public), at large ε.",
    ),
    ("d2p2.thm3", "**D2P2-SGD's Theorem 3 fails** on a 1-smooth two-point mixture."),
    ("d2p2.clipping-bias", "**So does Table 4's clipping bias.**"),
    ("d2p2.lemma5", "**D2P2-SGD's Lemma 5 is false as stated** (inside its own domain)."),
    ("d2p2.code-schedule", "**D2P2-SGD's code decays the noise differently** from the paper."),
    ("dicesgd.example-b1", "DiceSGD App. B.1's clipped stationary point is misstated."),
    ("clip21.cor1", "Clip21-SGD2M's Corollary 1 (privacy) lost its formulas in the rendering."),
)


def splice(document: str, table: str, start: str = START, end: str = END) -> str:
    """``document`` with the text between the markers replaced by ``table``."""
    i, j = document.find(start), document.find(end)
    if i < 0 or j < i:
        raise ValueError(f"markers {start} ... {end} not found")
    return document[: i + len(start)] + "\n" + table.rstrip("\n") + "\n" + document[j:]


def block(document: str, start: str = START, end: str = END) -> str:
    """The text between the markers (without them)."""
    i, j = document.find(start), document.find(end)
    if i < 0 or j < i:
        raise ValueError(f"markers {start} ... {end} not found")
    return document[i + len(start) : j].strip("\n") + "\n"


def _split_row(line: str) -> list[str]:
    cells, cur, i, s = [], "", 0, line.strip()[1:-1]
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] == "|":
            cur, i = cur + "\\|", i + 2
            continue
        if s[i] == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += s[i]
        i += 1
    cells.append(cur.strip())
    return cells


def parse_verdict_table(table: str) -> dict[str, dict[str, str]]:
    """``{claim id: {column header: cell}}`` of a Markdown verdict table (cells kept escaped).

    Columns are found by their header, so a table with more columns parses the same."""
    lines = [ln for ln in table.splitlines() if ln.strip().startswith("|")]
    if len(lines) < 2:
        raise ValueError("no Markdown table found")
    header = _split_row(lines[0])
    rows = {}
    for ln in lines[2:]:
        cells = dict(zip(header, _split_row(ln), strict=True))
        rows[cells["Claim"].strip("`")] = cells
    return rows


def findings_table(verdicts: dict[str, dict[str, str]]) -> str:
    """The README's findings table from the verdict table's rows (see :data:`FINDINGS`)."""
    evidence = next(h for h in next(iter(verdicts.values())) if h.startswith("Evidence"))
    head = "| finding | verdict | evidence (from `docs/verdicts.md`) | rerun |"
    lines = [head, "| --- | --- | --- | --- |"]
    for claim_id, text in FINDINGS:
        row = verdicts.get(claim_id)
        if row is None:
            raise ValueError(f"finding {claim_id}: no such claim in the verdict table")
        rerun = f"`dptheory verify --claim {claim_id}`"
        lines.append(f"| {text} | {row['Verdict']} | {row[evidence]} | {rerun} |")
    return "\n".join(lines) + "\n"


def _write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".readme-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read_with_markers(option: str, path: str, start: str, end: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            document = fh.read()
        block(document, start, end)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"readme_table: error: {option}: {exc}\n")
        return None
    return document


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.readme_table", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="the CI-sized variant of every check")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write", metavar="FILE", help="splice the verdict table into FILE (docs/verdicts.md)")
    ap.add_argument("--findings", metavar="FILE", help="splice the findings table into FILE (README.md)")
    ap.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="with --findings: read the verdict table from FILE and run nothing",
    )
    args = ap.parse_args(argv)
    if args.source and not args.findings:
        sys.stderr.write("readme_table: error: --from: only applies with --findings\n")
        return 2
    if args.source and args.write:
        sys.stderr.write("readme_table: error: --from: cannot be combined with --write (it runs nothing)\n")
        return 2
    document = findings_doc = None
    if args.write and (document := _read_with_markers("--write", args.write, START, END)) is None:
        return 2
    if args.findings:
        findings_doc = _read_with_markers("--findings", args.findings, FINDINGS_START, FINDINGS_END)
        if findings_doc is None:
            return 2
    crashed = False
    if args.source:
        source = _read_with_markers("--from", args.source, START, END)
        if source is None:
            return 2
        table = block(source)
    else:
        from verification.engine import run_claims, select
        from verification.report import verdict_table

        results = run_claims(select(None, None, True), seed=args.seed, quick=args.quick)
        crashed = any(r.crashed for r in results)
        table = verdict_table(results)
    if document is not None:
        _write_atomic(args.write, splice(document, table))
    elif not args.findings:
        sys.stdout.write(table)
    if findings_doc is not None:
        try:
            findings = findings_table(parse_verdict_table(table))
        except (ValueError, KeyError) as exc:
            sys.stderr.write(f"readme_table: error: --findings: {exc}\n")
            return 2
        _write_atomic(args.findings, splice(findings_doc, findings, FINDINGS_START, FINDINGS_END))
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
