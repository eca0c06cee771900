"""A schedule whose noise multiplier underflows to 0 or overflows to inf at some step (found by
hand on ``exp``: sigma = 1e-300 with rho = 1e300 crashed ``epsilon`` and ``audit`` with a
ZeroDivisionError; short runs blamed ``--noise-multiplier: must be > 0 (got 0.0)``, a value
never given).  Each factor is valid alone; the step's product is not, and the one error line
names the option that makes it so."""

from __future__ import annotations

import numpy as np
import pytest

from accounting.errors import InvalidParameter
from accounting.schedules import noise_multipliers, schedule_blocks
from dptheory.cli.main import main

UNDER = ["--noise-multiplier", "1e-300", "--schedule", "exp", "--schedule-rho", "1e300"]
OVER = ["--noise-multiplier", "1e300", "--schedule", "exp", "--schedule-rho", "1e-300"]


def _one_error(argv, capsys, option):
    rc = main(argv)
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert f"error: {option}:" in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("cmd", ["epsilon", "audit"])
@pytest.mark.parametrize("algo", ["d2psgd", "d2p2sgd", "dp2sgd"])
@pytest.mark.parametrize("extra", [[], ["--steps", "10"]])
def test_underflowing_exp_schedule_is_one_line_naming_the_rho(cmd, algo, extra, capsys):
    line = _one_error([cmd, "--algo", algo, "--delta", "1e-5", *UNDER, *extra], capsys, "--schedule-rho")
    assert "underflows to 0" in line and "--noise-multiplier 1e-300" in line


@pytest.mark.parametrize("cmd", ["epsilon", "audit"])
def test_overflowing_exp_schedule_is_one_line_naming_the_rho(cmd, capsys):
    line = _one_error([cmd, "--algo", "d2psgd", "--delta", "1e-5", *OVER], capsys, "--schedule-rho")
    assert "overflows to inf" in line


def test_pld_accountant_refuses_it_too(capsys):
    _one_error(
        ["epsilon", "--algo", "d2psgd", "--delta", "1e-5", *UNDER, "--accountant", "pld"],
        capsys,
        "--schedule-rho",
    )


def test_schedule_file_product_underflow_names_the_file(tmp_path, capsys):
    f = tmp_path / "s.txt"
    f.write_text("1.0\n1e-300\n")
    argv = [
        "epsilon",
        "--algo",
        "d2psgd",
        "--delta",
        "1e-5",
        "--noise-multiplier",
        "1e-30",
        "--schedule-file",
        str(f),
    ]
    line = _one_error(argv, capsys, "--schedule-file")
    assert "step 2" in line


def test_the_api_raises_invalid_parameter_naming_the_option():
    for fn in (noise_multipliers, schedule_blocks):
        with pytest.raises(InvalidParameter) as exc:
            fn("exp", 1e-300, 10, rho=1e300)
        assert exc.value.option == "--schedule-rho"
        with pytest.raises(InvalidParameter):
            fn("exp", 1e-300, 10**7, rho=1e300)  # the blocked path (T > EXACT_STEPS)


def test_representable_extremes_still_account():
    # sigma_T = 1e-300 / 1e7 = 1e-307: tiny but a normal number, so the schedule is built as before
    z = noise_multipliers("exp", 1e-300, 50, rho=1e7)
    assert np.all(z > 0) and z[-1] == pytest.approx(1e-307, rel=1e-9)
    values, counts = schedule_blocks("inv-k", 1e-300, 10**7)
    assert np.all(values > 0) and int(counts.sum()) == 10**7
