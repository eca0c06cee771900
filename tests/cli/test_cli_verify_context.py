"""`dptheory verify` text output shows, under each verdict, the readings and the searched domain."""

from __future__ import annotations

from dptheory.cli.main import main


def test_text_output_shows_readings_and_search(capsys) -> None:
    rc = main(["verify", "--claim", "dicesgd.step2-composition", "--claim", "dicesgd.thm2.3", "--quick"])
    out = capsys.readouterr().out
    assert rc == 0
    lines = out.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("dicesgd.step2-composition"))
    block = []
    for ln in lines[i + 1 :]:
        if not ln.startswith("    "):
            break
        block.append(ln.strip())
    assert block[0] == (
        "readings: for every history [headline] -> confirmed; averaged over histories -> refuted"
    )
    searched = [b for b in block if b.startswith("searched (adaptive-two-step-search, deciding")]
    assert searched and "evaluations; worst ratio" in searched[0] and "alpha-1 6 dec" in searched[0]
    j = next(k for k, ln in enumerate(lines) if ln.startswith("dicesgd.thm2.3"))
    assert lines[j + 1].strip().startswith("readings: Alg. 1 as printed")
    assert lines[j + 2].strip().startswith("domain: u, v (declared")


def test_json_output_unchanged_shape(capsys) -> None:
    import json

    rc = main(["verify", "--claim", "dicesgd.step2-composition", "--quick", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data[0]["readings"] and data[0]["domain"]["params"]
