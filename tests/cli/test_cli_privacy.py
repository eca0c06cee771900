"""CLI contract of ``dptheory calibrate`` / ``dptheory epsilon``: JSON keys, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import dptheory
from dptheory.cli.main import main

KEYS = {
    "algo",
    "mode",
    "accountant",
    "epsilon",
    "delta",
    "noise_multiplier",
    "noise_std",
    "order",
    "sample_rate",
    "steps",
    "assumptions",
}


def _run(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_card_example_runs_as_typed(capsys):
    """`dptheory calibrate --eps 2 --delta 1e-5 --algo dicesgd`, as typed.  In process: the same
    command in a fresh interpreter, all of its output compared, is
    tests/project/test_readme_examples.py::test_the_card_command_output_is_shown_and_real."""
    rc, out, err = _run(capsys, ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dicesgd"])
    assert rc == 0, err
    assert "defaults assumed" in out
    assert "--dataset-size = 50000" in out and "--batch-size = 1000" in out
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["epsilon", "--noise-multiplier", "1.0", "--delta", "1e-5", "--algo", "dpsgd"],
        ["epsilon", "--noise-multiplier", "5", "--delta", "1e-5", "--algo", "dicesgd", "--mode", "claimed"],
        ["epsilon", "--noise-multiplier", "3", "--delta", "1e-5", "--algo", "d2p2sgd", "--epochs", "1"],
        [
            "epsilon",
            "--noise-multiplier",
            "20",
            "--delta",
            "1e-5",
            "--algo",
            "clip21sgd2m",
            "--rounds",
            "100",
        ],
        ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dpsgd"],
        ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dp2sgd", "--epochs", "1"],
    ],
)
def test_json_keys(capsys, argv):
    rc, out, err = _run(capsys, argv + ["--json"])
    assert rc == 0, err
    obj = json.loads(out)
    assert KEYS <= set(obj)
    assert isinstance(obj["assumptions"], list)
    assert obj["epsilon"] > 0


def test_cli_and_api_agree(capsys):
    rc, out, _ = _run(
        capsys,
        [
            "calibrate",
            "--eps",
            "1.5",
            "--delta",
            "1e-6",
            "--algo",
            "d2psgd",
            "--epochs",
            "2",
            "--schedule",
            "inv-k",
            "--json",
        ],
    )
    assert rc == 0
    cli = json.loads(out)
    api = dptheory.calibrate(defaults="paper", eps=1.5, delta=1e-6, algo="d2psgd", epochs=2, schedule="inv-k")
    assert cli["noise_multiplier"] == api.noise_multiplier
    assert cli["epsilon"] == api.epsilon
    rc, out, _ = _run(
        capsys,
        [
            "epsilon",
            "--noise-multiplier",
            "12",
            "--delta",
            "1e-5",
            "--algo",
            "clip21sgd2m",
            "--rounds",
            "300",
            "--mode",
            "claimed",
            "--json",
        ],
    )
    cli = json.loads(out)
    api = dptheory.epsilon(
        defaults="paper", noise_multiplier=12, delta=1e-5, algo="clip21sgd2m", rounds=300, mode="claimed"
    )
    assert cli["epsilon"] == api.epsilon


def test_human_output_lists_defaults(capsys):
    rc, out, _ = _run(capsys, ["epsilon", "--noise-multiplier", "1", "--delta", "1e-5", "--algo", "dpsgd"])
    assert rc == 0
    assert "defaults assumed:" in out and "--epochs = 3" in out and "epsilon" in out


BAD = [
    (["calibrate", "--eps", "0", "--delta", "1e-5", "--algo", "dpsgd"], "--eps"),
    (["calibrate", "--eps", "-1", "--delta", "1e-5", "--algo", "dpsgd"], "--eps"),
    (["calibrate", "--eps", "nan", "--delta", "1e-5", "--algo", "dpsgd"], "--eps"),
    (["calibrate", "--eps", "2", "--delta", "0", "--algo", "dpsgd"], "--delta"),
    (["calibrate", "--eps", "2", "--delta", "1", "--algo", "dpsgd"], "--delta"),
    (["calibrate", "--eps", "2", "--delta", "nan", "--algo", "dpsgd"], "--delta"),
    (["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "adam"], "--algo"),
    (
        ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dpsgd", "--sample-rate", "0"],
        "--sample-rate",
    ),
    (
        ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dpsgd", "--sample-rate", "1.2"],
        "--sample-rate",
    ),
    (["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dpsgd", "--steps", "0"], "--steps"),
    (["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dpsgd", "--batch-size", "-5"], "--batch-size"),
    (["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dpsgd", "--steps", "nan"], "--steps"),
    (["epsilon", "--noise-multiplier", "0", "--delta", "1e-5", "--algo", "dpsgd"], "--noise-multiplier"),
    (["epsilon", "--noise-multiplier", "-1", "--delta", "1e-5", "--algo", "dpsgd"], "--noise-multiplier"),
    (["epsilon", "--noise-multiplier", "nan", "--delta", "1e-5", "--algo", "dpsgd"], "--noise-multiplier"),
    (["epsilon", "--delta", "1e-5", "--algo", "dpsgd"], "--noise-multiplier"),
    (
        [
            "epsilon",
            "--noise-multiplier",
            "1",
            "--delta",
            "1e-5",
            "--algo",
            "d2psgd",
            "--schedule-file",
            "/nonexistent/x",
        ],
        "--schedule-file",
    ),
    (
        ["epsilon", "--noise-multiplier", "1", "--delta", "1e-5", "--algo", "dicesgd", "--accountant", "pld"],
        "--accountant",
    ),
    (
        [
            "calibrate",
            "--eps",
            "1e-3",
            "--delta",
            "1e-5",
            "--algo",
            "clip21sgd2m",
            "--target",
            "steps",
            "--noise-multiplier",
            "1",
        ],
        "--eps",
    ),
]


@pytest.mark.parametrize("argv,option", BAD)
def test_bad_input_one_line_exit_2(capsys, argv, option):
    rc, out, err = _run(capsys, argv)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert option in lines[0]
    assert "Traceback" not in err


def test_empty_schedule_file(capsys, tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("")
    rc, _, err = _run(
        capsys, ["calibrate", "--eps", "1", "--delta", "1e-5", "--algo", "d2psgd", "--schedule-file", str(f)]
    )
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--schedule-file" in err


def test_argparse_errors_are_one_line(capsys):
    assert main(["calibrate", "--eps", "abc", "--delta", "1e-5", "--algo", "dpsgd"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1


def test_bad_input_subprocess_no_traceback():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dptheory.cli.main",
            "epsilon",
            "--noise-multiplier",
            "nan",
            "--delta",
            "1e-5",
            "--algo",
            "dpsgd",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_compare_prints_three_rows(capsys):
    rc, out, err = _run(
        capsys, ["epsilon", "--noise-multiplier", "1", "--delta", "1e-5", "--algo", "dpsgd", "--compare"]
    )
    assert rc == 0, err
    assert "claimed" in out and "certified" in out and "audit" in out
    rc, out, err = _run(
        capsys, ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dpsgd", "--compare", "--json"]
    )
    assert rc == 0, err
    obj = json.loads(out)
    assert {"claimed", "certified", "audit", "calibrated"} <= set(obj)


def test_help_documents_defaults(capsys):
    assert main(["calibrate", "--help"]) == 0
    out = capsys.readouterr().out
    assert "N = 50000" in out and "--schedule" in out and "default" in out


def test_params_from_args_resolves_defaults():
    import argparse

    from dptheory.cli.params import add_privacy_options, params_from_args

    parser = argparse.ArgumentParser()
    add_privacy_options(parser)
    parser.add_argument("--noise-multiplier", type=float)
    parser.add_argument("--delta", type=float)
    args = parser.parse_args(
        ["--algo", "dicesgd", "--noise-multiplier", "3", "--delta", "1e-5", "--c1", "0.5"]
    )
    p = params_from_args(args)
    assert (p.algo, p.noise_multiplier, p.delta, p.c1, p.c2) == ("dicesgd", 3.0, 1e-5, 0.5, 1.0)
    assert (p.dataset_size, p.batch_size, p.steps) == (50_000, 1000, 150)
    args = parser.parse_args(["--algo", "clip21sgd2m", "--rounds", "7"])
    p = params_from_args(args)
    assert (p.steps, p.rounds, p.tau) == (7, 7, 1.0)
