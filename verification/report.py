"""Markdown output: the verdict table (docs/verdicts.md) and the full report (an appendix).

The report is written into a temporary directory next to the target and renamed into place, so
an interrupted run never leaves a half-written report. Figures are rendered from the checks'
:class:`~verification.claim.Plot` data with matplotlib (Agg backend, imported lazily).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from verification.claim import ClaimResult, Plot

_BADGE = {"confirmed": "✅ confirmed", "refuted": "❌ refuted", "inconclusive": "❔ inconclusive"}


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def kind_cell(r: ClaimResult) -> str:
    """What a verdict rests on: the basis of a confirmation, or the degenerate edge a refutation needs."""
    if r.basis:
        return {"search": "search", "definition": "definition / algebra", "implementation": "implementation"}[
            r.basis
        ]
    if r.edge:
        return f"edge: {r.edge}"
    return ""


def verdict_counts(results: Sequence[ClaimResult]) -> str:
    """The headline figures: only a confirmation by search counts as "confirmed"; the others are named."""
    n = {v: sum(1 for r in results if r.verdict.value == v) for v in ("confirmed", "refuted", "inconclusive")}
    by = {b: sum(1 for r in results if r.basis == b) for b in ("search", "definition", "implementation")}
    unstated = n["confirmed"] - sum(by.values())
    edge = sum(1 for r in results if r.edge)
    parts = [f"{by['search']} confirmed by search"]
    if by["definition"]:
        parts.append(f"{by['definition']} true by definition or algebra")
    if by["implementation"]:
        parts.append(f"{by['implementation']} implementation checks")
    if unstated:
        parts.append(f"{unstated} confirmed on an unstated basis")
    parts.append(f"{n['refuted']} refuted" + (f" ({edge} only at a degenerate edge)" if edge else ""))
    parts.append(f"{n['inconclusive']} inconclusive")
    return ", ".join(parts)


def verdict_table(results: Sequence[ClaimResult], *, summary_chars: int = 180) -> str:
    """The Markdown verdict table, one row per claim (generated, never typed).

    "Kind / edge" says what a confirmation rests on (search, definition / algebra, implementation)
    or, for a refutation that holds only at a degenerate edge of the stated domain, that edge."""
    lines = [
        "| Claim | Where | Verdict | Kind / edge | Evidence (short) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in results:
        lines.append(
            f"| `{r.claim.id}` | {_cell(r.claim.location)} | {_BADGE[r.verdict.value]} | "
            f"{_cell(kind_cell(r))} | {_cell(_short(r.summary, summary_chars))} |"
        )
    return "\n".join(lines) + "\n"


def _num(x) -> str:
    return f"{x:.4g}" if isinstance(x, int | float) else str(x)


def verdict_context(r: ClaimResult) -> list[str]:
    """What stands behind a verdict, for the text output of ``dptheory verify`` (one item a line):
    the verdict per declared reading (headline marked), each deciding check's adversarial search
    (decades spanned per parameter, evaluations, worst ratio and where), and the premises."""
    lines = []
    per = r.readings_json()
    if per:
        lines.append(
            "readings: "
            + "; ".join(
                f"{x['reading']}{' [headline]' if x['headline'] else ''} -> {x['verdict']}" for x in per
            )
        )
    searched = False
    for ch in r.checks:
        d = ch.evidence.details
        if not isinstance(d, dict) or "decades_spanned" not in d:
            continue
        searched = True
        spans = ", ".join(
            f"{k} {v['decades']:g} dec" if "decades" in v else f"{k} [{_num(v['min'])}, {_num(v['max'])}]"
            for k, v in d["decades_spanned"].items()
        )
        at = ", ".join(f"{k}={_num(v)}" for k, v in d.get("at", {}).items())
        role = "deciding" if ch.deciding else "informative"
        lines.append(
            f"searched ({ch.name}, {role}{', ' + ch.reading if ch.reading else ''}): "
            f"{d['evaluations']} evaluations; worst ratio {_num(d['max_violation_ratio'])} at {at}; {spans}"
        )
    if not searched and r.claim.domain is not None:
        names = ", ".join(p.name for p in r.claim.domain.params)
        lines.append(
            f"domain: {names} (declared; the deciding checks are closed-form, symbolic or a fixed family)"
        )
    if r.premises:
        lines.append("depends on: " + ", ".join(f"{pid} ({v.value})" for pid, v in r.premises))
    return lines


def render_plot(plot: Plot, path: Path) -> None:
    """Draw one figure to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    for s in plot.series:
        style = s.get("style", "-")
        ax.plot(s["x"], s["y"], style, label=s["label"], markersize=4)
    for h in plot.hlines:
        ax.axhline(h["y"], color="grey", linestyle=":", label=h["label"])
    if plot.logx:
        ax.set_xscale("log")
    if plot.logy:
        ax.set_yscale("log")
    ax.set_title(plot.title, fontsize=10)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _details_block(details: dict) -> str:
    return "```json\n" + json.dumps(details, indent=2, default=str)[:6000] + "\n```\n"


def _title(results: Sequence[ClaimResult]) -> str:
    """The built-in papers' title, or the papers a user's --claims-file names."""
    papers = list(dict.fromkeys(r.claim.paper for r in results))
    if set(papers) <= {"dicesgd", "clip21", "d2p2"}:
        return "# Machine-checked claims of DiceSGD, Clip21-SGD2M and D2P2-SGD"
    return "# Machine-checked claims: " + "; ".join(papers)


def report_markdown(
    results: Sequence[ClaimResult],
    *,
    seed: int,
    quick: bool,
    command: str,
    runtime_s: float,
    figures: dict[str, str],
) -> str:
    """The full report text; ``figures`` maps (claim id, plot name) keys to relative PNG paths."""
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        _title(results),
        "",
        f"Generated by `{command}` on {now} (seed {seed}, {'quick' if quick else 'full'} mode, "
        f"{runtime_s:.0f} s). {verdict_counts(results)}.",
        "",
        "How to read this appendix: each claim is tested by one or more checks. *Deciding* checks "
        "determine the "
        "verdict (any concrete counterexample refutes; the claim is confirmed only if every deciding check "
        "confirms "
        "it; otherwise it is inconclusive). *Informative* checks test alternative readings of ambiguous "
        "formulas, "
        "single proof steps, or stronger statements; they are reported but do not move the verdict. Every "
        "number "
        "below was computed when this report was generated; the `reproduce` line of each check recomputes "
        "it.",
        "",
        "## Verdicts",
        "",
        verdict_table(results),
    ]
    for r in results:
        c = r.claim
        out += [
            f"## `{c.id}` — {c.location}",
            "",
            f"**Verdict: {_BADGE[r.verdict.value]}"
            + (f" ({kind_cell(r)})" if kind_cell(r) else "")
            + f".** {r.summary}",
            "",
            f"**Statement.** {c.statement}",
            "",
            f"**Formula.** `{c.formula}`",
            "",
            "**Assumptions.** " + "; ".join(c.assumptions),
            "",
        ]
        if c.notes:
            out += [f"**Reading.** {c.notes}", ""]
        for ch in r.checks:
            role = "deciding" if ch.deciding else "informative"
            reading = f", reading: {ch.reading}" if ch.reading else ""
            out += [
                f"### Check `{ch.name}` ({ch.kind}, {role}{reading}) — {_BADGE[ch.verdict.value]}",
                "",
                ch.summary,
                "",
                f"*Method.* {ch.evidence.method}. *Time* {ch.seconds:.1f} s. *Reproduce:* "
                f"`{ch.evidence.reproduce}`",
                "",
            ]
            if ch.crashed:
                out += [f"**The check crashed:** `{ch.crashed}`", ""]
            if ch.evidence.details:
                out += [
                    "<details><summary>numbers</summary>",
                    "",
                    _details_block(ch.evidence.details),
                    "</details>",
                    "",
                ]
            for p in ch.evidence.plots:
                rel = figures.get(f"{c.id}/{p.name}")
                if rel:
                    out += [f"![{p.title}]({rel})", ""]
    return "\n".join(out)


class ReportDirError(ValueError):
    """``--report DIR`` cannot be written (the CLI turns this into exit status 2)."""


def check_report_dir(path: str) -> Path:
    """Validate ``--report DIR`` before any work: the parent must exist and be writable."""
    UsageError = ReportDirError  # noqa: N806 - same call shape as the CLI's error

    if not path or not path.strip():
        raise UsageError("must name a directory (got an empty path)")
    target = Path(path).expanduser().resolve()
    if target.parent == target:  # '/', or a drive root: the report is renamed into place
        raise UsageError(f"{path} is a filesystem root; name a directory inside it")
    if target.exists() and not target.is_dir():
        raise UsageError(f"{path} exists and is not a directory")
    parent = target.parent
    if not parent.is_dir():
        raise UsageError(f"parent directory {parent} does not exist")
    from accounting.errors import InvalidParameter
    from dptheory.paths import probe_writable_dir

    try:  # the report is built next to the target and renamed into place
        probe_writable_dir("--report", str(parent))
    except InvalidParameter as exc:
        raise UsageError(exc.message) from None
    return target


def write_report(
    results: Sequence[ClaimResult], target: Path, *, seed: int, quick: bool, command: str, runtime_s: float
) -> Path:
    """Write report.md, results.json and figures/*.png into ``target`` atomically."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        figdir = tmp / "figures"
        figdir.mkdir()
        figures: dict[str, str] = {}
        for r in results:
            for ch in r.checks:
                for p in ch.evidence.plots:
                    fname = f"{r.claim.id.replace('.', '_')}__{p.name}.png"
                    render_plot(p, figdir / fname)
                    figures[f"{r.claim.id}/{p.name}"] = f"figures/{fname}"
        text = report_markdown(
            results, seed=seed, quick=quick, command=command, runtime_s=runtime_s, figures=figures
        )
        (tmp / "report.md").write_text(text, encoding="utf-8")
        (tmp / "results.json").write_text(
            json.dumps([r.to_json() for r in results], indent=2, default=str), encoding="utf-8"
        )
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
