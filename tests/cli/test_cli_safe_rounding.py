"""Issue 18 section 1, "tables that round the wrong way": every renderer, every printed privacy number
on its safe side.

Upper bounds (certified and claimed epsilon), calibrated noise multipliers and delta are
printed rounded up, lower bounds (audits) and sample rates rounded down
(:func:`dptheory.cli.numbers.fmt`).  Each test runs a subcommand (text and ``--json``) and checks
every privacy number it prints against the API's value for the same arguments: the text on the
safe side and within its digits, the JSON exactly.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dptheory
from accounting.algorithms.base import PrivacyParams
from dptheory import api
from dptheory.cli.main import main
from dptheory.cli.numbers import DOWN, UP, fmt

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf")
DIGITS_RTOL = 1e-5  # 6 significant digits


def _run(capsys, argv):
    assert main(argv) == 0
    return capsys.readouterr().out


def _row(text: str, label: str) -> str:
    """The value column of the table row ``label`` (first match; labels are left-aligned)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(label + " ") and stripped[len(label) :].startswith("  "):
            return stripped[len(label) :].strip()
    raise AssertionError(f"no row {label!r} in\n{text}")


def _num(cell: str, index: int = 0) -> float:
    return float(NUMBER.findall(cell)[index])


def safe(printed: float, value: float, direction: str) -> None:
    if direction == UP:
        assert printed >= value, (printed, value)
    else:
        assert printed <= value, (printed, value)
    assert printed == pytest.approx(value, rel=DIGITS_RTOL)


# ------------------------------------------------------------------------------ the helper
@settings(max_examples=300, deadline=None)
@given(
    x=st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False),
    digits=st.integers(1, 17),
)
def test_fmt_rounds_to_the_safe_side(x, digits):
    up, down = float(fmt(x, UP, digits)), float(fmt(x, DOWN, digits))
    assert down <= x <= up
    assert up == pytest.approx(x, rel=10.0 ** (1 - digits)) and down == pytest.approx(
        x, rel=10.0 ** (1 - digits)
    )


def test_fmt_leaves_exact_values_alone():
    assert fmt(1e-5, UP) == "1e-05" and fmt(1.1, UP) == "1.1" and fmt(0.01, DOWN) == "0.01"
    assert fmt(math.inf, UP) == "inf" and fmt(3, DOWN) == "3" and fmt(None, UP) == "-"


# ----------------------------------------------------------------- the two examples
def test_calibrate_compare_prints_a_noise_that_meets_the_target(capsys):
    argv = ["calibrate", "--algo", "dpsgd", "--eps", "1", "--delta", "1e-5", "--sample-rate", "0.01",
            "--steps", "1000", "--compare"]  # fmt: skip
    text = _run(capsys, argv)
    z = api.calibrate(eps=1.0, delta=1e-5, algo="dpsgd", sample_rate=0.01, steps=1000, defaults="paper")
    header = float(re.search(r"--compare: z = (\S+)", text).group(1))
    safe(header, z.noise_multiplier, UP)  # was 1.51312 < 1.5131228...
    printed_eps = dptheory.epsilon(noise_multiplier=header, delta=1e-5, algo="dpsgd", sample_rate=0.01,
                                   steps=1000, defaults="paper").epsilon  # fmt: skip
    assert printed_eps <= 1.0  # at the nearest-rounded 1.51312 it was 1.0000021
    certified = _row(text, "certified")
    safe(_num(certified, 1), z.noise_multiplier, UP)  # the "z for target" column


def test_audit_prints_certified_up_and_lower_bound_down(capsys):
    argv = ["audit", "--algo", "dpsgd", "--noise-multiplier", "1.1", "--delta", "1e-5", "--sample-rate",
            "0.01", "--steps", "1000"]  # fmt: skip
    text = _run(capsys, argv)
    p = PrivacyParams(algo="dpsgd", noise_multiplier=1.1, delta=1e-5, sample_rate=0.01, steps=1000)
    result = dptheory.audit(p, samples=2000, confidence=0.99, seed=0)
    safe(_num(_row(text, "epsilon certified")), result.epsilon_certified, UP)  # was 1.71177 < 1.71177017
    safe(_num(_row(text, "epsilon lower bound")), result.epsilon_lower, DOWN)  # was 1.45515 > 1.45514879
    safe(_num(_row(text, "epsilon claimed")), result.epsilon_claimed, UP)
    assert _row(text, "noise multiplier z") == "1.1"
    data = json.loads(_run(capsys, [*argv, "--json"]))
    assert data["epsilon_lower"] == result.epsilon_lower
    assert data["epsilon_certified"] == result.epsilon_certified


# ------------------------------------------------------------------------- every renderer
CASES = [
    ("dpsgd", ["--sample-rate", "0.01", "--steps", "500"]),
    ("dicesgd", ["--sample-rate", "0.02", "--steps", "100"]),
    ("d2psgd", ["--sample-rate", "0.02", "--steps", "200"]),
    ("clip21sgd2m", ["--rounds", "50"]),
]


def _api_options(opts: list[str]) -> dict:
    out = {}
    for k, v in zip(opts[::2], opts[1::2], strict=True):
        out[k.lstrip("-").replace("-", "_")] = int(v) if v.isdigit() else float(v)
    return out


def _check_report_table(text: str, report) -> None:
    safe(_num(_row(text, "epsilon")), report.epsilon, UP)
    safe(_num(_row(text, "noise multiplier z")), report.noise_multiplier, UP)
    safe(_num(_row(text, "delta")), report.delta, UP)
    if report.noise_std is not None:
        safe(_num(_row(text, "noise std")), report.noise_std, UP)
    if report.sample_rate is not None:
        safe(_num(_row(text, "sample rate q")), report.sample_rate, DOWN)


def _check_compare_table(text: str, result: dict) -> None:
    safe(float(re.search(r"--compare: z = (\S+)", text).group(1)), result["noise_multiplier"], UP)
    for m in ("claimed", "certified"):
        r = result[m]
        cell = _row(text, r.label or m)
        safe(_num(cell), r.epsilon, UP)
        z_needed = result.get(f"{m}_noise_multiplier")
        if isinstance(z_needed, float):
            safe(_num(cell, 1), z_needed, UP)
    audit = result["audit"]
    if not isinstance(audit, str):
        safe(_num(_row(text, "audit")), audit.epsilon_lower, DOWN)


@pytest.mark.parametrize(("algo", "opts"), CASES, ids=[c[0] for c in CASES])
def test_epsilon_and_calibrate_tables_round_safely(capsys, algo, opts):
    common = ["--algo", algo, "--delta", "1e-5", *opts]
    kw = dict(algo=algo, delta=1e-5, defaults="paper", **_api_options(opts))
    z = 2.0
    report = api.epsilon(noise_multiplier=z, **kw)
    _check_report_table(_run(capsys, ["epsilon", "--noise-multiplier", str(z), *common]), report)
    assert (
        json.loads(_run(capsys, ["epsilon", "--noise-multiplier", str(z), *common, "--json"]))["epsilon"]
        == report.epsilon
    )
    cal = api.calibrate(eps=4.0, **kw)
    _check_report_table(_run(capsys, ["calibrate", "--eps", "4", *common]), cal)
    assert (
        json.loads(_run(capsys, ["calibrate", "--eps", "4", *common, "--json"]))["noise_multiplier"]
        == cal.noise_multiplier
    )


@pytest.mark.parametrize(("algo", "opts"), CASES[:2], ids=[c[0] for c in CASES[:2]])
def test_compare_tables_round_safely(capsys, algo, opts):
    common = ["--algo", algo, "--delta", "1e-5", *opts, "--compare"]
    kw = dict(algo=algo, delta=1e-5, defaults="paper", **_api_options(opts))
    text = _run(capsys, ["epsilon", "--noise-multiplier", "1.7", *common])
    _check_compare_table(text, api.compare(noise_multiplier=1.7, **kw))
    text = _run(capsys, ["calibrate", "--eps", "3", *common])
    result = api.compare(eps=3.0, **kw)
    _check_compare_table(text, result)
    data = json.loads(_run(capsys, ["calibrate", "--eps", "3", *common, "--json"]))
    assert data["noise_multiplier"] == result["noise_multiplier"]
    assert data["certified"]["epsilon"] == result["certified"].epsilon


def test_audit_with_calibration_rounds_the_calibrated_noise_up(capsys):
    argv = ["audit", "--algo", "dpsgd", "--eps", "1", "--delta", "1e-5", "--sample-rate", "0.01",
            "--steps", "300"]  # fmt: skip
    text = _run(capsys, argv)
    cal = api.calibrate(eps=1.0, delta=1e-5, algo="dpsgd", sample_rate=0.01, steps=300, defaults="paper")
    line = _row(text, "noise calibrated")
    safe(_num(line), cal.noise_multiplier, UP)  # "z = ... for eps = 1.0"
    safe(_num(_row(text, "noise multiplier z")), cal.noise_multiplier, UP)
    safe(_num(_row(text, "epsilon certified")), cal.epsilon, UP)
