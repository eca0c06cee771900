"""docs/your-paper.md §1: the claims file it shows is complete and runs as written (issue 19 §5)."""

from __future__ import annotations

import json
import pathlib
import re

from dptheory.cli.main import main

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "your-paper.md"


def _claims_file_block() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## 1. A claims file") : text.index("## 2.")]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return block


def _verify(capsys, path: pathlib.Path) -> dict:
    rc = main(["verify", "--claims-file", str(path), "--quick", "--jobs", "1", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    (row,) = json.loads(out)
    return row


def test_snippet_runs_as_a_claims_file(tmp_path, capsys):
    path = tmp_path / "my_paper_claims.py"
    path.write_text(_claims_file_block(), encoding="utf-8")
    row = _verify(capsys, path)
    assert row["id"] == "gauss.classical-eps-below-1" and row["verdict"] == "confirmed"


def test_snippet_check_refutes_the_claim_beyond_its_domain(tmp_path, capsys):
    """Negative control: the same file with eps allowed up to 1000 (where the classical noise is
    known to fail, Balle & Wang 2018) must be refuted by the same check."""
    block = _claims_file_block()
    wider = block.replace('Param("eps", "(0, 1)", 1e-6, 1 - 1e-9)', 'Param("eps", "(0, 1000)", 1e-6, 1000.0)')
    assert wider != block
    path = tmp_path / "wider_claims.py"
    path.write_text(wider, encoding="utf-8")
    assert _verify(capsys, path)["verdict"] == "refuted"


def test_claims_file_type_error_reads_correctly(tmp_path, capsys):
    """The one-line error for a wrong item names its type grammatically ("is of type int")."""
    path = tmp_path / "bad.py"
    path.write_text("CLAIMS = [1]\n", encoding="utf-8")
    rc = main(["verify", "--claims-file", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and "CLAIMS[0]" in err and "is of type int, not a dptheory.claims.Claim" in err
    assert "is a int" not in err and err.count("\n") == 1
