"""Issue 18 section 2: the documented envelope (T <= 1e9, delta >= 1e-100, sigma 0.1..1e4) holds on
every path, not only DP-SGD with RDP.  Each test is a regression for one class of failure: arrays of
length T, dp-accounting's PLD grid, counts at their overflow edge, options that do nothing, giant
error lines, encodings, and a claims file's code corrupting the output or the exit status.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from accounting import hidden_state as hs
from accounting.orders import DEFAULT_ORDERS
from dptheory.cli.main import main
from tests._forked_cli import run_cli
from tests._hostile_claims import claims_source

ROOT = Path(__file__).resolve().parents[2]


def _cli(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _one_error(rc, err, option):
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
    assert rc == 2 and len(lines) == 1, err
    assert option in lines[0], lines[0]
    return lines[0]


# --- arrays of length T on hidden-state paths ----------------------------------------------------


def _tables(z):
    split = hs._sg_table(0.01, z * np.sqrt(1 - hs.SPLIT_GRID), DEFAULT_ORDERS)
    full = hs._sg_table(0.01, np.array([z]), DEFAULT_ORDERS)[0]
    return split, full


@pytest.mark.parametrize(
    "steps,c2,grad_bound,batch",
    [
        (1, 1.0, None, 10.0),
        (7, 0.5, None, 10.0),
        (50, 0.5, 3.0, 10.0),
        (300, 3.0, 1.2, 1000.0),
        (999, 2.0, 1e4, 5.0),
    ],
)
def test_shift_groups_equal_the_array_version_when_exact(steps, c2, grad_bound, batch):
    arr = hs.hidden_state_shift_bounds(steps=steps, c1=1.0, c2=c2, batch_size=batch, grad_bound=grad_bound)
    values, counts = hs.shift_groups(steps=steps, c1=1.0, c2=c2, batch_size=batch, grad_bound=grad_bound)
    assert counts.sum() == steps
    split, full = _tables(3.0)
    ref = hs._certified_from_tables(arr * batch, 3.0, DEFAULT_ORDERS, split, full)
    got = hs._certified_from_tables((values, counts), 3.0, DEFAULT_ORDERS, split, full)
    np.testing.assert_array_equal(got, ref)


def test_shift_groups_bucketed_ramp_is_an_upper_bound_within_half_a_percent():
    steps, batch, g, c2 = 20_000, 100.0, 1.01, 50.0  # a ramp of 2e4 distinct values: bucketed
    orders = np.array([1.5, 2.0, 8.0, 32.0, 256.0])  # a short grid keeps the array reference cheap
    arr = hs.hidden_state_shift_bounds(steps=steps, c1=1.0, c2=c2, batch_size=batch, grad_bound=g) * batch
    values, counts = hs.shift_groups(steps=steps, c1=1.0, c2=c2, batch_size=batch, grad_bound=g)
    assert values.size <= hs.MAX_EXACT_SHIFTS + 2 < np.unique(arr).size and counts.sum() == steps
    split = hs._sg_table(0.01, 3.0 * np.sqrt(1 - hs.SPLIT_GRID), orders)
    full = hs._sg_table(0.01, np.array([3.0]), orders)[0]
    ref = hs._certified_from_tables(arr, 3.0, orders, split, full)
    got = hs._certified_from_tables((values, counts), 3.0, orders, split, full)
    assert np.all(got >= ref) and np.all(got <= ref * 1.005)


@pytest.mark.parametrize("grad_bound", [None, 1.001])
def test_dicesgd_certified_at_t_1e9_is_fast_and_monotone_in_t(grad_bound):
    kw = dict(delta=1e-5, sample_rate=0.02, noise_multiplier=4.0, c1=1.0, c2=1000.0, batch_size=1000.0)
    t0 = time.perf_counter()
    big = hs.dicesgd_certified_epsilon(steps=10**9, grad_bound=grad_bound, orders=DEFAULT_ORDERS, **kw)
    assert time.perf_counter() - t0 < 20
    small = hs.dicesgd_certified_epsilon(steps=10**6, grad_bound=grad_bound, orders=DEFAULT_ORDERS, **kw)
    assert np.isfinite(big) and big >= small > 0


# --- dp-accounting's PLD: cost estimated before the call ----------------------------------------


@pytest.mark.parametrize(
    "q,z,count", [(0.02, 4.0, 1000), (0.02, 1.0, 300), (1e-3, 1.0, 3000), (0.05, 0.5, 20)]
)
def test_pld_size_estimate_is_within_3x_of_dp_accountings_window(q, z, count, monkeypatch):
    """The estimate replays dp-accounting's own truncation rule; compare with the window it computes."""
    import dp_accounting as dpa
    from dp_accounting.pld import common, pld_privacy_accountant

    from accounting.pld_cost import pld_size

    seen = []
    real = common.compute_self_convolve_bounds

    def spy(lst, n, tail=0, orders=None):
        lo, hi = real(lst, n, tail, orders)
        seen.append(hi - lo + 1)
        return lo, hi

    monkeypatch.setattr(common, "compute_self_convolve_bounds", spy)
    acc = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4
    )
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), count))
    _, est = pld_size(q, z, count, 1e-4)
    assert seen and sum(seen) / 3 <= est <= 3 * sum(seen)


def test_pld_past_1e10_steps_at_tiny_q_is_refused(capsys):
    """Found by the fuzz suite: q = 1e-9, 1e15 steps; dp-accounting asked for 148 GiB."""
    argv = ["calibrate", "--algo", "d2p2sgd", "--delta", "1e-100", "--eps", "1e-3", "--accountant", "pld"]
    argv += ["--epochs", "1e6", "--sample-rate", "1e-9", "--schedule", "exp", "--schedule-rho", "2"]
    rc, _, err = _cli(argv, capsys)
    assert "--accountant rdp" in _one_error(rc, err, "--accountant")


@pytest.mark.parametrize(
    "algo,length",
    [
        ("dpsgd", ["--steps", "1000000000"]),
        ("d2p2sgd", ["--steps", "1000000000"]),
        ("d2psgd", ["--steps", "1000000000"]),
        ("dp2sgd", ["--steps", "1000000000"]),
    ],
)
def test_pld_at_t_1e9_is_refused_naming_rdp(algo, length, capsys):
    argv = ["epsilon", "--algo", algo, "--noise-multiplier", "4", "--delta", "1e-5", "--accountant", "pld"]
    t0 = time.perf_counter()
    rc, _, err = _cli(argv + length, capsys)
    line = _one_error(rc, err, "--accountant")
    assert "--accountant rdp" in line and time.perf_counter() - t0 < 20


# --- counts at their overflow edge --------------------------------------------------------------


@pytest.mark.parametrize(
    "argv,option",
    [
        (["epsilon", "--algo", "dicesgd", "--noise-multiplier", "1", "--epochs", "1e300"], "--epochs"),
        (["epsilon", "--algo", "dp2sgd", "--noise-multiplier", "1", "--epochs", "1e300"], "--epochs"),
        (["audit", "--algo", "dpsgd", "--noise-multiplier", "1", "--epochs", "1e300"], "--epochs"),
        (["audit", "--algo", "dpsgd", "--noise-multiplier", "1", "--steps", "1e300"], "--steps"),
        (["audit", "--algo", "dicesgd", "--noise-multiplier", "1", "--samples", "1e12"], "--samples"),
        (["epsilon", "--algo", "dpsgd", "--noise-multiplier", "1", "--timeout", "1e10"], "--timeout"),
        (["epsilon", "--algo", "d2p2sgd", "--noise-multiplier", "1", "--model-dim", "1e300"], "--model-dim"),
        # options that do nothing (issue 9's rule)
        (["epsilon", "--algo", "d2psgd", "--noise-multiplier", "1", "--schedule-rho", "3"], "--schedule-rho"),
        (
            ["epsilon", "--algo", "dicesgd", "--noise-multiplier", "1", "--clip-mode", "automatic"],
            "--clip-mode",
        ),
        (["audit", "--algo", "dpsgd", "--noise-multiplier", "1", "--samples", "100"], "--samples"),
        (
            ["audit", "--algo", "clip21sgd2m", "--noise-multiplier", "1", "--confidence", "0.9"],
            "--confidence",
        ),
    ],
)
def test_overflow_edges_and_idle_options_are_one_line_errors(argv, option, capsys):
    rc, _, err = _cli([*argv, "--delta", "1e-5"], capsys)
    _one_error(rc, err, option)


def test_exact_dicesgd_audit_refuses_samples(capsys):
    # G <= C1: the hidden state never differs and the audit is exact, so --samples does nothing
    argv = ["audit", "--algo", "dicesgd", "--noise-multiplier", "4", "--delta", "1e-5", "--grad-bound", "0.5"]
    rc, _, err = _cli([*argv, "--steps", "100", "--samples", "100"], capsys)
    _one_error(rc, err, "--samples")


def test_run_c1_on_a_clip21_run_is_an_error(capsys):
    argv = ["run", "--algo", "clip21sgd2m", "--problem", "clip21-example1", "--steps", "5", "--c1", "5"]
    rc, _, err = _cli(argv, capsys)
    _one_error(rc, err, "--c1")


def test_run_plot_empty_and_verify_seed_negative(capsys):
    rc, _, err = _cli(
        ["run", "--algo", "dpsgd", "--problem", "quadratic", "--steps", "5", "--plot", ""], capsys
    )
    _one_error(rc, err, "--plot")
    rc, _, err = _cli(["verify", "--list", "--seed", "-1"], capsys)
    _one_error(rc, err, "--seed")


def test_schedule_rho_extreme_at_q_1_finishes(capsys):
    """exp schedule, rho = 1e6, q = 1: eps ~ 1e10; the audit's step-down loop hung at e - 1e-9 == e."""
    argv = ["audit", "--algo", "d2psgd", "--noise-multiplier", "2", "--delta", "1e-5", "--schedule", "exp"]
    t0 = time.perf_counter()
    rc, out, err = _cli(
        [*argv, "--schedule-rho", "1e6", "--sample-rate", "1", "--steps", "1000", "--json"], capsys
    )
    assert rc == 0, err
    d = json.loads(out)
    assert 0 < d["epsilon_lower"] <= d["epsilon_certified"]
    assert time.perf_counter() - t0 < 30


# --- giant error lines, encodings, closed streams -----------------------------------------------


def test_giant_values_are_cut_in_the_error_line(tmp_path, capsys):
    f = tmp_path / "huge.txt"
    f.write_text("1" * 1_000_000 + "x\n")
    argv = [
        "epsilon",
        "--algo",
        "d2psgd",
        "--noise-multiplier",
        "1",
        "--delta",
        "1e-5",
        "--schedule-file",
        str(f),
    ]
    rc, _, err = _cli(argv, capsys)
    assert len(_one_error(rc, err, "--schedule-file")) < 300
    rc, _, err = _cli(
        ["epsilon", "--algo", "dpsgd", "--noise-multiplier", "9" * 100_000 + "x", "--delta", "1e-5"], capsys
    )
    assert len(_one_error(rc, err, "--noise-multiplier")) < 300


def _dptheory(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **kw.pop("env", {})}
    return subprocess.run(
        [sys.executable, "-m", "dptheory.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        **kw,
    )


def test_ascii_terminal_lists_claims_without_unicode_error():
    """Standard streams encoded in ASCII (what PYTHONIOENCODING=ascii gives): a forked child whose
    stdout and stderr are ASCII text files."""
    rc, out, err, _ = run_cli(["verify", "--list"], encoding="ascii")
    assert rc == 0 and "UnicodeEncodeError" not in err
    assert "\\xa7" in out  # the section sign, escaped


def test_closed_stdout_is_an_error_not_a_lost_result():
    r = _dptheory(["epsilon", "--algo", "dpsgd", "--noise-multiplier", "1", "--delta", "1e-5"], stdout=None)
    assert r.returncode == 0
    code = (
        "import os, sys, subprocess; os.close(1); "
        "sys.exit(subprocess.run([sys.executable, '-m', 'dptheory.cli.main', 'verify', '--list']).returncode)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 2 and "standard output is closed" in r.stderr


# --- hostile claims files -----------------------------------------------------------------------



@pytest.mark.parametrize(
    "body,top,rc_want,crash",
    [
        ("sys.exit(3)", "", 1, "sys.exit(3)"),
        ("os._exit(0)", "", 1, "os._exit(0)"),
        ("print('NOISE')", "", 0, None),
        ("sys.stdout.close()", "", 0, None),
        ("pass", "print('NOISE')", 0, None),
        ("pass", "os._exit(0)", 2, None),
        ("pass", "sys.exit(0)", 2, None),
    ],
)
def test_claims_file_code_cannot_corrupt_output_or_exit_status(tmp_path, body, top, rc_want, crash):
    f = tmp_path / "hostile.py"
    f.write_text(claims_source(body, top))
    # a child process of its own: os._exit or a closed stdout in the file would end only the child
    rc, out, err, _ = run_cli(["verify", "--claims-file", str(f), "--quick", "--json"])
    assert rc == rc_want, err
    if rc_want == 2:
        assert out == "" and "--claims-file" in err and "called" in err
        return
    doc = json.loads(out)  # valid JSON: nothing the check printed is in it
    assert "NOISE" not in out
    text = json.dumps(doc)
    if crash:
        assert f"UserExit: {crash} called (at hostile.py:5)" in text
    else:
        assert "crashed" not in err


@pytest.mark.parametrize(
    "kw",
    [dict(algo="dpsgd"), dict(algo="dicesgd", grad_bound=0.5, steps=100), dict(algo="dicesgd", steps=50)],
)
def test_audit_reproduce_commands_run(kw, capsys):
    """dptheory.claims.audit_command names --samples only where the audit samples (else it is an error)."""
    import shlex

    from dptheory.claims import audit_command

    cmd = audit_command(noise_multiplier=4.0, delta=1e-5, samples=100, seed=0, **kw)
    rc, out, err = _cli(shlex.split(cmd)[1:], capsys)
    assert rc == 0 and out, err


def _sweep_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("envelope_sweep", ROOT / "benchmarks" / "envelope_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "algos",
    [
        ["dpsgd", "clip21sgd2m", "dp2sgd", "dicesgd"],
        pytest.param(["d2psgd", "d2p2sgd"], marks=pytest.mark.slow),
    ],
)
def test_envelope_sweep_certified_never_below_the_audit(algos, capsys):
    """benchmarks/envelope_sweep.py --algos: every certified path against its audit's lower bound."""
    assert _sweep_module().audit_sweep(algos, cases=1, seed=3, case_timeout=20)
    out = capsys.readouterr().out
    assert all(f"{a}:" in out for a in algos)


def test_dp_accounting_overflow_is_one_line(capsys):
    """Found by the fuzz suite: dp2sgd, PLD, sigma 0.3, delta 1e-100: dp-accounting's OverflowError."""
    argv = [
        "epsilon",
        "--algo",
        "dp2sgd",
        "--delta",
        "1e-100",
        "--noise-multiplier",
        "0.3",
        "--accountant",
        "pld",
    ]
    argv += ["--steps", "1", "--schedule", "exp", "--schedule-rho", "1e300", "--model-dim", "1e9"]
    rc, out, err = _cli([*argv, "--projection-dim", "1e9"], capsys)
    if rc == 0:  # a number is fine; it must then be a finite upper bound
        assert "epsilon" in out
    else:
        assert "--accountant rdp" in _one_error(rc, err, "--accountant")
