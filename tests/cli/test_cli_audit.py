"""`dptheory audit` command line contract."""

from __future__ import annotations

import json

import pytest

from dptheory.cli.main import main

SMALL = ["--dataset-size", "5000", "--batch-size", "100", "--steps", "20"]


def _run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_output_has_contract_keys(capsys):
    rc, out, err = _run(
        ["audit", "--algo", "dpsgd", "--noise-multiplier", "1.0", "--delta", "1e-5", "--json", *SMALL], capsys
    )
    assert rc == 0, err
    d = json.loads(out)
    for key in (
        "algo",
        "instance",
        "noise_multiplier",
        "delta",
        "epsilon_lower",
        "confidence",
        "epsilon_claimed",
        "epsilon_certified",
        "method",
        "assumptions_checked",
    ):
        assert key in d
    assert d["algo"] == "dpsgd"
    assert 0 < d["epsilon_lower"] <= d["epsilon_certified"]
    assert d["confidence"] == 1.0


def test_human_table(capsys):
    rc, out, _ = _run(
        ["audit", "--algo", "clip21sgd2m", "--noise-multiplier", "20", "--delta", "1e-5", "--rounds", "100"],
        capsys,
    )
    assert rc == 0
    assert "epsilon lower bound" in out and "epsilon certified" in out and "instance" in out
    assert "assumptions checked" in out


def test_dicesgd_eps_claimed_mode_refutes(capsys):
    rc, out, err = _run(
        [
            "audit",
            "--algo",
            "dicesgd",
            "--eps",
            "2",
            "--delta",
            "1e-5",
            "--mode",
            "claimed",
            "--samples",
            "300",
            "--seed",
            "3",
            "--json",
            *SMALL,
        ],
        capsys,
    )
    assert rc == 0, err
    d = json.loads(out)
    assert d["calibration"]["mode"].startswith("claimed")
    assert d["epsilon_claimed"] == pytest.approx(2.0, rel=1e-5)
    assert d["epsilon_lower"] > d["epsilon_claimed"]
    assert d["refutes_claim"] is True
    assert d["samples"] == 300 and d["seed"] == 3
    assert d["confidence"] == 0.99
    assert any("Assumption 3.5" in a["assumption"] for a in d["assumptions_checked"])


def test_reproducible_json(capsys):
    argv = [
        "audit",
        "--algo",
        "dicesgd",
        "--noise-multiplier",
        "40",
        "--delta",
        "1e-5",
        "--samples",
        "200",
        "--seed",
        "11",
        "--json",
        *SMALL,
    ]
    _, out1, _ = _run(argv, capsys)
    _, out2, _ = _run(argv, capsys)
    assert json.loads(out1) == json.loads(out2)


@pytest.mark.parametrize(
    "extra,option",
    [
        (["--noise-multiplier", "1", "--samples", "0"], "--samples"),
        (["--noise-multiplier", "1", "--confidence", "1.5"], "--confidence"),
        (["--noise-multiplier", "1", "--seed", "-2"], "--seed"),
        (["--noise-multiplier", "1", "--seed", "1.5"], "--seed"),
        ([], "--noise-multiplier"),
        (["--noise-multiplier", "1", "--eps", "2"], "--eps"),
        (["--noise-multiplier", "1", "--mode", "claimed"], "--mode"),
        (["--noise-multiplier", "nan"], "--noise-multiplier"),
        (["--noise-multiplier", "-1"], "--noise-multiplier"),
    ],
)
def test_bad_input_one_line_exit_2(extra, option, capsys):
    rc, out, err = _run(["audit", "--algo", "dpsgd", "--delta", "1e-5", *SMALL, *extra], capsys)
    assert rc == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and "Traceback" not in err


def test_bad_delta_and_algo(capsys):
    rc, _, err = _run(["audit", "--algo", "dpsgd", "--delta", "2", "--noise-multiplier", "1"], capsys)
    assert rc == 2 and "--delta" in err and len(err.strip().splitlines()) == 1
    rc, _, err = _run(["audit", "--algo", "nope", "--delta", "1e-5", "--noise-multiplier", "1"], capsys)
    assert rc == 2 and "--algo" in err and len(err.strip().splitlines()) == 1
