"""The README cannot drift from the code: its outputs, findings, imports and links are checked.

* every example output (``console`` blocks, ``python`` blocks followed by a ``text`` block) equals
  what the code prints now (``python -m tools.readme_examples --write`` refreshes them): the card
  and the Python examples in a fresh process, the other console examples through the CLI's
  ``main`` in this process;
* the findings table is the one generated from ``docs/verdicts.md``'s verdict table;
* README code imports only public names, and every public name is documented in docs/api.md;
* the README stays a front door (at most 250 lines) and nothing points outside the repository.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re

import pytest

from tools import readme_examples as rx
from tools import readme_table as rt

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
API_DOC = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
#: the README's Opacus example imports the integration, whose stable names docs/api.md lists once the
#: integration's section is written there; until then its ``__all__`` is the contract.
PUBLIC_MODULES_WITHOUT_SECTION = {"dptheory.integrations.opacus"}


def _examples(kind: str) -> list[rx.Example]:
    return [e for e in rx.examples(README) if e.kind == kind]


def test_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 250
    for heading in ("### Calibrate the noise", "### Inside Opacus", "### Verify a claim", "## What it finds"):
        assert heading in README
    assert "### Audit your own training run" in README


def test_the_card_command_output_is_shown_and_real() -> None:
    """The card's output is compared with a fresh process's by
    tests/project/test_light_install.py::test_calibrate_runs_without_any_optional_module, which runs
    this very command once with the optional modules refused (a stronger check than a plain run)."""
    from tests.project.test_light_install import CARD

    (card,) = [e for e in _examples("console") if e.code.startswith("dptheory calibrate ")]
    assert card.code == "dptheory calibrate --eps 2 --delta 1e-5 --algo dicesgd"
    assert card.code == "dptheory " + " ".join(CARD)
    assert card.expected.strip(), "the README shows no output for the card's command"


def _run_in_process(ex: rx.Example, tmp_path, monkeypatch, capsys) -> str:
    """What ``ex`` prints, from ``dptheory.cli.main.main`` in this process, under the environment
    :func:`tools.readme_examples.run` gives its fresh process (empty directory, 100 columns)."""
    import shlex
    import warnings

    from dptheory.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(shlex.split(ex.code)[1:])
    out, err = capsys.readouterr()
    assert rc == 0, f"{ex.code!r} exited {rc}: {err[-2000:]}"
    return out


def test_console_examples_print_what_the_readme_shows(tmp_path, monkeypatch, capsys) -> None:
    """In process: only the printed output is checked here.  That the command prints the same as a
    fresh process is checked on the card's command (above); the exit status and output of ``audit-run``
    as a process are tests/cli/test_cli_audit_run.py's."""
    others = [e for e in _examples("console") if not e.code.startswith("dptheory calibrate ")]
    assert others, "the README lost its verify example"
    assert {e.code.split()[1] for e in others} >= {"verify", "audit-run"}
    for ex in others:
        got = _run_in_process(ex, tmp_path, monkeypatch, capsys)
        assert rx.same(ex.expected, got), f"{ex.code}: README output drifted (readme_examples --write)"


def test_python_api_example_prints_what_the_readme_shows() -> None:
    (api,) = [e for e in _examples("python") if "import torch" not in e.code]
    got = rx.run(api)
    assert rx.same(api.expected, got), "README Python example output drifted (readme_examples --write)"


@pytest.mark.slow
def test_opacus_example_prints_what_the_readme_shows() -> None:
    pytest.importorskip("opacus")
    (op,) = [e for e in _examples("python") if "import torch" in e.code]
    got = rx.run(op)
    assert rx.same(op.expected, got), "README Opacus example output drifted (readme_examples --write)"


def test_example_comparison_can_fail() -> None:
    ex = rx.Example("console", "dptheory x", "eps 2.0  in 1.5s\n", (0, 1))
    assert rx.same(ex.expected, "eps 2.0  in 31.2s\n")
    assert not rx.same(ex.expected, "eps 2.1  in 1.5s\n")
    doc = "a\n```console\n$ dptheory x\nold\n```\nb"
    (found,) = rx.examples(doc)
    assert found.expected == "old\n" and rx.refresh(doc, {0: "new 1\nnew 2\n"}) == (
        "a\n```console\n$ dptheory x\nnew 1\nnew 2\n```\nb"
    )


def test_findings_are_generated_from_the_verdict_table() -> None:
    verdicts = (ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8")
    rows = rt.parse_verdict_table(rt.block(verdicts))
    assert len(rows) >= 80
    expected = rt.findings_table(rows)
    shown = rt.block(README, rt.FINDINGS_START, rt.FINDINGS_END)
    assert shown == expected, (
        "README findings differ from docs/verdicts.md: run "
        "python -m tools.readme_table --findings README.md --from docs/verdicts.md"
    )
    assert all(cid in shown for cid, _ in rt.FINDINGS)


def test_finding_wording_carries_no_measured_number() -> None:
    # numbers belong to the generated evidence; the wording names statements and symbols only
    for cid, text in rt.FINDINGS:
        rest = re.sub(r"(Theorem|Lemma|Table|Corollary|App\.)\s+[A-Z]?[\d.]*\d", "", text)
        rest = re.sub(r"\S*[A-Za-z]\S*", "", rest)  # symbols such as C2, D2P2-SGD, 2·C2, 1-smooth
        assert not re.search(r"\d", rest), f"{cid}: typed number in the finding's wording: {text}"
    assert re.search(r"\d", re.sub(r"\S*[A-Za-z]\S*", "", "eps >= 50.5")), "the rule must catch numbers"


def _documented_sections() -> dict[str, str]:
    """``{module: section text}`` for each ``## `module` ...`` section of docs/api.md."""
    parts = re.split(r"^## ", API_DOC, flags=re.M)[1:]
    out = {}
    for part in parts:
        m = re.match(r"`([\w.]+)`", part)
        if m:
            out[m.group(1)] = part
    return out


def test_every_exported_name_is_documented() -> None:
    sections = _documented_sections()
    assert {"dptheory", "accounting"} <= set(sections)
    for module, text in sections.items():
        names = getattr(importlib.import_module(module), "__all__", None)
        if names is None:
            continue
        missing = [n for n in names if not re.search(r"(?<![\w.])" + re.escape(n) + r"\b", text)]
        assert not missing, f"docs/api.md, section {module}: undocumented public names {missing}"


def test_package_roots_export_what_they_list() -> None:
    import accounting
    import dptheory

    for mod in (accounting, dptheory):
        for name in mod.__all__:
            assert getattr(mod, name) is not None, f"{mod.__name__}.{name}"
    assert accounting.RdpAccountant is dptheory.RdpAccountant
    assert issubclass(dptheory.InvalidParameter, ValueError)


def _readme_imports() -> list[tuple[str, str]]:
    """``(module, name)`` for every project import in the README's code (name '' for ``import m``)."""
    found = []
    for lang, body, _, _ in rx.blocks(README):
        if lang != "python":
            continue
        for node in ast.walk(ast.parse(body)):
            if isinstance(node, ast.ImportFrom) and node.module:
                found += [(node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                found += [(a.name, "") for a in node.names]
        for m in re.finditer(r"\b(dptheory|accounting)\.(\w+)\b", body):
            if not re.search(rf"from {m.group(0)}\b|import {m.group(0)}\b", body):
                found.append((m.group(1), m.group(2)))
    for m in re.finditer(r"from ((?:dptheory|accounting|verification)[\w.]*) import ([\w, ]+)", README):
        found += [(m.group(1), n.strip()) for n in m.group(2).split(",")]
    return [(m, n) for m, n in found if m.split(".")[0] in {"dptheory", "accounting", "verification"}]


def test_readme_imports_only_public_names() -> None:
    public = set(_documented_sections()) | PUBLIC_MODULES_WITHOUT_SECTION
    imports = _readme_imports()
    assert ("dptheory.integrations.opacus", "DptheoryPrivacyEngine") in imports
    assert ("dptheory", "calibrate") in imports
    for module, name in imports:
        assert module in public, f"README imports from {module}, which docs/api.md does not make public"
        if name:
            exported = importlib.import_module(module).__all__
            assert name in exported, f"README uses {module}.{name}, not in {module}.__all__"


def test_nothing_points_outside_the_repository() -> None:
    texts = {"README.md": README} | {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")
    }
    texts["benchmarks/README.md"] = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for name, text in texts.items():
        assert "shared/papers" not in text and "../shared" not in text, name
    # the README's relative links resolve inside the repository
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_cli_doc_examples_print_what_the_doc_shows() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    found = rx.examples(text)
    assert found
    for ex in found:
        assert rx.same(ex.expected, rx.run(ex)), f"docs/cli.md: {ex.code} drifted (readme_examples --write)"


def test_readme_table_findings_without_a_run(tmp_path, capsys) -> None:
    verdicts = tmp_path / "verdicts.md"
    verdicts.write_text((ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8"), encoding="utf-8")
    target = tmp_path / "readme.md"
    target.write_text(f"top\n{rt.FINDINGS_START}\nstale\n{rt.FINDINGS_END}\nbottom\n", encoding="utf-8")
    assert rt.main(["--findings", str(target), "--from", str(verdicts)]) == 0
    text = target.read_text(encoding="utf-8")
    assert "stale" not in text and text.startswith("top\n") and text.endswith("bottom\n")
    assert rt.block(text, rt.FINDINGS_START, rt.FINDINGS_END) == rt.findings_table(
        rt.parse_verdict_table(rt.block(verdicts.read_text(encoding="utf-8")))
    )
    # bad input: one line, exit 2, nothing written
    no_markers = tmp_path / "plain.md"
    no_markers.write_text("no markers\n", encoding="utf-8")
    capsys.readouterr()
    assert rt.main(["--findings", str(no_markers), "--from", str(verdicts)]) == 2
    assert rt.main(["--from", str(verdicts)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "--findings" in err and "--from" in err
    assert no_markers.read_text(encoding="utf-8") == "no markers\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.md", "readme.md", "verdicts.md"]


def test_findings_table_parses_extra_columns() -> None:
    rows = rt.parse_verdict_table(
        "| Claim | Where | Kind | Verdict | Evidence (short) |\n| --- | --- | --- | --- | --- |\n"
        + "".join(f"| `{cid}` | x | edge | ❌ refuted | e \\| {cid} |\n" for cid, _ in rt.FINDINGS)
    )
    table = rt.findings_table(rows)
    assert "| ❌ refuted | e \\| dicesgd.thm3.7 |" in table
    with pytest.raises(ValueError, match="no such claim"):
        rt.findings_table({k: v for k, v in rows.items() if k != "d2p2.thm1"})
