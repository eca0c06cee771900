"""CLI contract of ``dptheory verify``: JSON shape and exit codes 0 / 1 / 2."""

from __future__ import annotations

import json

import pytest

from dptheory.cli.main import main


def test_json_shape_and_exit_zero(capsys) -> None:
    rc = main(["verify", "--claim", "dicesgd.lemma-a1", "--claim", "d2p2.lemma4", "--quick", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    data = json.loads(out)
    assert [d["id"] for d in data] == ["dicesgd.lemma-a1", "d2p2.lemma4"]
    for d in data:
        assert {"id", "paper", "location", "verdict", "summary", "evidence"} <= set(d)
        assert d["verdict"] in ("confirmed", "refuted", "inconclusive")
        assert d["evidence"] and all("reproduce" in e and "details" in e for e in d["evidence"])


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["verify", "--claim", "no.such-claim"], "--claim"),
        (["verify", "--paper", "nosuchpaper"], "--paper"),
        (["verify"], "--all"),
        (["verify", "--all", "--report", "/nonexistent-dir-xyz/sub/rep"], "--report"),
    ],
)
def test_bad_input_exit_two_one_line(argv, needle, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        rc = main(argv)
        raise SystemExit(rc)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_report_path_that_is_a_file_is_rejected(tmp_path, capsys) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["verify", "--claim", "dicesgd.example-b1", "--report", str(f)]) == 2


def test_crashing_check_gives_exit_one_and_others_run(monkeypatch, capsys) -> None:
    from verification import registry
    from verification.claim import Check, Claim

    def boom(ctx):
        raise RuntimeError("deliberate")

    fake = Claim("dicesgd.lemma-a1", "dicesgd", "x", "s", "f", (), (Check("boom", "symbolic", boom),))
    monkeypatch.setitem(registry.CLAIMS, "dicesgd.lemma-a1", fake)
    rc = main(["verify", "--claim", "dicesgd.lemma-a1", "--claim", "dicesgd.example-b1", "--quick", "--json"])
    cap = capsys.readouterr()
    assert rc == 1
    assert "dicesgd.lemma-a1:boom crashed" in cap.err and "RuntimeError" in cap.err
    data = {d["id"]: d for d in json.loads(cap.out)}
    assert data["dicesgd.example-b1"]["verdict"] == "refuted"  # the other claim still ran
    assert data["dicesgd.lemma-a1"]["verdict"] == "inconclusive"


def test_report_and_markdown_table(tmp_path, capsys) -> None:
    rc = main(
        [
            "verify",
            "--claim",
            "dicesgd.example-b1",
            "--quick",
            "--markdown-table",
            "--report",
            str(tmp_path / "r"),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("| Claim | Where | Verdict |")
    assert (tmp_path / "r" / "report.md").exists() and list((tmp_path / "r" / "figures").glob("*.png"))
