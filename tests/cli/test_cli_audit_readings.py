"""`dptheory audit --algo dicesgd` shows Theorem 3.7's claimed epsilon under both readings."""

from __future__ import annotations

import json

import pytest

from dptheory.cli.main import main

ARGS = ["--dataset-size", "1000", "--batch-size", "10", "--steps", "100", "--c1", "1", "--c2", "1"]
AUDIT = ["audit", "--algo", "dicesgd", "--noise-multiplier", "20", "--delta", "1e-5", "--samples", "200"]
AUDIT += ARGS


def test_json_has_both_readings(capsys) -> None:
    from accounting.algorithms.dicesgd import theorem37_epsilon

    rc = main([*AUDIT, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    d = json.loads(out)
    rd = d["epsilon_claimed_by_reading"]
    assert [r["headline"] for r in rd] == [True, False]
    kw = dict(noise_multiplier=20.0, delta=1e-5, steps=100, dataset_size=1000, batch_size=10, c1=1.0, c2=1.0)
    assert rd[0]["epsilon_claimed"] == pytest.approx(theorem37_epsilon(**kw, reading="proof"))
    assert rd[1]["epsilon_claimed"] == pytest.approx(theorem37_epsilon(**kw, reading="c2"))
    # C = B C2 >= C2 prescribes more noise, so at a fixed noise it claims a larger epsilon
    assert rd[0]["epsilon_claimed"] > rd[1]["epsilon_claimed"]
    for r in rd:
        assert r["refuted"] == (d["epsilon_lower"] > r["epsilon_claimed"])
    assert d["epsilon_claimed"] == pytest.approx(rd[1]["epsilon_claimed"])  # unchanged field: C2^2 reading


def test_text_labels_both_readings(capsys) -> None:
    rc = main(AUDIT)
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "epsilon claimed, C^2 with C = B C2 (the proof's last step; headline)" in out
    assert "epsilon claimed, C2^2 (App. C.4 / Algorithm 4)" in out
    assert "reading" in out.split("verdict", 1)[1].splitlines()[0]


def test_other_algorithms_keep_one_claimed_row(capsys) -> None:
    rc = main(
        [
            "audit",
            "--algo",
            "dpsgd",
            "--noise-multiplier",
            "1",
            "--delta",
            "1e-5",
            "--dataset-size",
            "5000",
            "--batch-size",
            "100",
            "--steps",
            "20",
        ]
    )
    out, _ = capsys.readouterr()
    assert rc == 0 and "epsilon claimed " in out and "C2^2" not in out
