"""The ``dptheory run`` command-line contract: output keys, one-line errors, exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from dptheory.cli.main import main

KEYS = ("final_loss", "grad_norm", "dist_to_opt", "dist_to_fixed_point", "x")


def test_json_output_has_the_metric_keys(capsys):
    rc = main(
        [
            "run",
            "--algo",
            "dpsgd",
            "--problem",
            "dicesgd-b1",
            "--steps",
            "200",
            "--lr",
            "0.5",
            "--seeds",
            "2",
            "--json",
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    for k in KEYS:
        assert k in out
    assert out["x"]["mean"] == pytest.approx(-0.5, abs=1e-6)
    assert len(out["final_loss"]["values"]) == 2
    assert out["fixed_point"]["point"] == [pytest.approx(-0.5)]
    assert out["privacy"]["private"] is False


def test_text_output(capsys):
    rc = main(
        ["run", "--algo", "clipsgd", "--problem", "clip21-example1", "--steps", "20", "--device", "cpu"]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "private: no" in out and "distance to clipped fixed point" in out and "[-2, 2]" in out


def test_plot_option(tmp_path, capsys):
    path = tmp_path / "p.png"
    rc = main(
        [
            "run",
            "--algo",
            "clip21sgd2m",
            "--problem",
            "stochastic-quadratic",
            "--steps",
            "20",
            "--plot",
            str(path),
            "--device",
            "cpu",
        ]
    )
    assert rc == 0 and path.stat().st_size > 1000


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--algo", "adam", "--problem", "quadratic"], "--algo"),
        (["--algo", "dpsgd", "--problem", "rosenbrock"], "--problem"),
        (["--algo", "dpsgd", "--problem", "quadratic", "--lr", "nan"], "--lr"),
        (["--algo", "dpsgd", "--problem", "quadratic", "--sample-rate", "0"], "--sample-rate"),
        (["--algo", "dpsgd", "--problem", "quadratic", "--noise-multiplier", "-1"], "--noise-multiplier"),
        (["--algo", "dpsgd", "--problem", "quadratic", "--eps", "1"], "--delta"),
        (["--algo", "dpsgd", "--problem", "quadratic", "--beta", "0.3"], "--beta"),
        (["--algo", "clip21sgd2m", "--problem", "quadratic", "--beta-hat", "2"], "--beta-hat"),
        (["--algo", "dpsgd", "--problem", "quadratic", "--plot", "/nonexistent-dir/x.png"], "--plot"),
        (["--algo", "dpsgd", "--problem", "quadratic", "--seeds", "0"], "--seeds"),
        (["--algo", "dpsgd", "--problem", "quadratic", "--device", "tpu"], "--device"),
        (["--algo", "d2p2sgd", "--problem", "quadratic", "--projection-dim", "0"], "--projection-dim"),
    ],
)
def test_bad_input_one_line_exit_2(argv, option, capsys):
    rc = main(["run", *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and option in err and "Traceback" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present: --device cuda is valid here")
def test_device_cuda_without_cuda(capsys):
    rc = main(["run", "--algo", "dpsgd", "--problem", "quadratic", "--device", "cuda", "--steps", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and "--device" in err and err.count("\n") == 1


def test_argparse_errors_are_one_line():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dptheory.cli.main",
            "run",
            "--algo",
            "dpsgd",
            "--problem",
            "quadratic",
            "--steps",
            "x",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_cli_modules_do_not_import_torch():
    code = (
        "import sys, dptheory.cli.run_cmd, dptheory.cli.figures_cmd, dptheory.cli.main;"
        "assert 'torch' not in sys.modules and 'matplotlib' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_figures_bad_out_dir(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    rc = main(["figures", "--out", str(f)])
    err = capsys.readouterr().err
    assert rc == 2 and "--out" in err and err.count("\n") == 1
    rc = main(["figures", "--out", str(tmp_path / "no" / "such" / "dir")])
    assert rc == 2


def test_figures_out_dir_that_cannot_be_created(tmp_path, capsys, monkeypatch):
    # access() says the parent is writable, yet mkdir fails (as under /proc or a read-only
    # mount): still one line and exit 2, no traceback.
    import os

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "makedirs", refuse)
    rc = main(["figures", "--out", str(tmp_path / "figs")])
    err = capsys.readouterr().err
    assert rc == 2 and "--out" in err and err.count("\n") == 1


@pytest.mark.slow
def test_figures_quick(tmp_path, capsys):
    from dptheory.figures import FIGURES

    rc = main(["figures", "--out", str(tmp_path), "--quick"])
    assert rc == 0
    for name in FIGURES:
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FIGURES)
