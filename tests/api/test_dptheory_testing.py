"""dptheory.testing: strategies stay in the envelope, assertions pass on true statements and fail
on false ones with a shrunk (re-checked) counterexample and a reproduce command, the papers'
counterexamples are the ones the claim modules replay, and the plugin works in a user's suite."""

from __future__ import annotations

import importlib.metadata
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from dptheory.claims import Constraint, Domain, Param
from dptheory.testing import (
    ENVELOPE,
    assert_bound_holds,
    assert_epsilon_at_most,
    assert_not_refuted_by_audit,
    certified_epsilon_of,
    dp_params,
    gradient_sets,
    mechanism_events,
    noise_schedules,
)

ROOT = Path(__file__).resolve().parents[2]
FAST = settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(dp_params(), noise_schedules(max_steps=200), gradient_sets(norm_bound=0.5))
def test_strategies_stay_in_the_documented_envelope(p, zs, g) -> None:
    lo, hi = ENVELOPE["sample_rate"]
    assert lo <= p.sample_rate <= hi and 1 <= p.steps <= 10**9 and isinstance(p.steps, int)
    assert ENVELOPE["noise_multiplier"][0] <= p.noise_multiplier <= ENVELOPE["noise_multiplier"][1]
    assert ENVELOPE["delta"][0] <= p.delta <= ENVELOPE["delta"][1]
    assert zs.ndim == 1 and len(zs) >= 1 and np.all(zs >= 0.1) and np.all(zs <= 1e4)
    assert g.ndim == 2 and np.all(np.linalg.norm(g, axis=1) <= 0.5)


def test_gradient_rows_of_tiny_entries_reach_their_radius_at_once() -> None:
    """Rows whose squares are subnormal (1e-160): their norm is inexact, so rescaling by it put the
    row ~4e-5 above the bound, and the ulp-step correction spun for hours in a user's suite."""
    import signal

    from dptheory.testing.strategies import _rows_at_radii

    g = np.array([[1e-160, 3e-161], [5e-324, 0.0], [0.3, -0.4], [0.0, 0.0]])
    radii = [2.0, 2.0, 1.0, 2.0]
    old = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the rescaling loop did not stop"))
    signal.alarm(5)
    try:
        out = _rows_at_radii(g, radii, 2.0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    norms = np.linalg.norm(out, axis=1)
    assert np.all(norms <= 2.0) and np.allclose(norms, [2.0, 2.0, 1.0, 0.0], rtol=1e-14, atol=0)
    # each row keeps its direction
    assert np.allclose(out[0] / norms[0], [1e-160, 3e-161] / np.linalg.norm([1.0, 0.3]) / 1e-160)
    assert np.allclose(out[2], [0.6, -0.8]) and out[1][1] == 0.0


@FAST
@given(mechanism_events(max_leaves=3, max_count=100))
def test_assert_epsilon_at_most_passes_at_the_accountants_own_number(m) -> None:
    eps = certified_epsilon_of(m, 1e-5)
    assert assert_epsilon_at_most(m, eps, 1e-5) == eps


def test_assert_epsilon_at_most_shrinks_under_hypothesis() -> None:
    """A false property: hypothesis shrinks the inputs, the assertion shrinks the mechanism."""

    @settings(max_examples=30, deadline=None, database=None, derandomize=True)
    @given(dp_params(max_steps=10**4))
    def prop(p) -> None:
        assert_epsilon_at_most(p.event(), 10.0, p.delta)

    with pytest.raises(AssertionError) as info:
        prop()
    msg = str(info.value)
    assert "minimal failing mechanism" in msg and "reproduce: python -c" in msg
    # the reported minimal mechanism really fails, and one repetition fewer would not
    cmd = msg.split("reproduce: ", 1)[1].strip()
    out = subprocess.run(
        cmd, shell=True, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT))
    )
    assert float(out.stdout) > 10.0


def _lemma5_lhs(q, sigma):
    return math.log1p(q * q * math.expm1(1 / sigma**2))  # exact RDP at order 2


def _lemma5_rhs(q, sigma):
    return 7 * q * q * 2 / sigma**2


LEMMA5 = Domain(
    params=(Param("q", "(0, 1/10)", 1e-9, 0.1), Param("sigma", "> 0", 0.1, 10.0)),
    constraints=(
        Constraint("2 <= (sigma^2/2) ln(1/q)", lambda p: 2 <= p["sigma"] ** 2 / 2 * np.log(1 / p["q"])),
    ),
)


def test_assert_bound_holds_refutes_lemma5_with_a_shrunk_point() -> None:
    with pytest.raises(AssertionError) as info:
        assert_bound_holds(_lemma5_lhs, _lemma5_rhs, LEMMA5, samples=256, maxiter=10)
    msg = str(info.value)
    assert msg.startswith("bound violated") and "reproduce: python -c" in msg
    point = eval(msg.split(" at ", 1)[1].split(" (ratio", 1)[0])  # noqa: S307 - our own message
    assert LEMMA5.contains(point) and _lemma5_lhs(**point) > _lemma5_rhs(**point)
    assert all(len(f"{v:g}") <= 8 for v in point.values())  # shrunk to short decimals


def test_assert_bound_holds_passes_a_true_bound() -> None:
    # subsampling never hurts: e(2) <= 2/(2 sigma^2) = full-batch Gaussian RDP
    res = assert_bound_holds(_lemma5_lhs, lambda q, sigma: 1 / sigma**2, LEMMA5, samples=128, maxiter=5)
    assert res.max_ratio <= 1


def test_assert_not_refuted_by_audit_passes_and_fails_with_fewer_steps() -> None:
    assert_not_refuted_by_audit(
        algo="dpsgd", noise_multiplier=1.0, delta=1e-5, eps=1.3, sample_rate=0.01, steps=100
    )
    with pytest.raises(AssertionError) as info:
        assert_not_refuted_by_audit(
            algo="dpsgd", noise_multiplier=1.0, delta=1e-5, eps=0.5, sample_rate=0.01, steps=100
        )
    msg = str(info.value)
    assert "refuted by audit" in msg and "reproduce: dptheory audit --algo dpsgd" in msg
    small = float(msg.split("(epsilon >= ", 1)[1].split(";", 1)[0])
    assert small > 0.5 and "'steps': 50" in msg


def test_assert_converges_to_clip21_example1() -> None:
    """Example 1 of Clip21: clipped GD from |x0| <= a - tau/L never moves (a fixed point), so it
    converges to its fixed-point set but not to the optimum x* = 0."""
    from dptheory.testing import assert_converges_to

    opts = dict(steps=50, c1=0.5, problem_options={"x0": 2.5})
    assert_converges_to("dpsgd", "clip21-example1", "fixed_point", 1e-9, **opts)
    with pytest.raises(AssertionError, match="(?s)does not converge to optimum.*reproduce: python -c"):
        assert_converges_to("dpsgd", "clip21-example1", "optimum", 1e-3, **opts)


def test_known_counterexamples_match_the_claim_modules_and_replay() -> None:
    from dptheory.testing.counterexamples import KNOWN_COUNTEREXAMPLES as K
    from verification.claims.dicesgd import THM36_WITNESS, THM37_FAR_CASE

    assert K["dicesgd.thm3.6"].params == THM36_WITNESS
    assert K["dicesgd.thm3.7"].params == THM37_FAR_CASE
    assert K["d2p2.lemma5"].replay() > 2.0 and K["clip21.cor1"].replay() > 1.9
    assert K["d2p2.lemma5"].example() is not None


def test_import_dptheory_testing_is_light() -> None:
    code = (
        "import sys, dptheory, dptheory.testing, dptheory.testing.plugin;"
        "bad = [m for m in ('torch', 'sympy', 'matplotlib', 'hypothesis') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_pytest11_entry_point_is_declared() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"dptheory": "dptheory.testing.plugin"}


def test_user_suite_passes_with_the_plugin() -> None:
    """examples/user_suite run as a user would: its own rootdir, the plugin, the quick profile."""
    installed = any(
        ep.value == "dptheory.testing.plugin" for ep in importlib.metadata.entry_points(group="pytest11")
    )
    plugin = [] if installed else ["-p", "dptheory.testing.plugin"]
    suite = ROOT / "examples" / "user_suite"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *plugin, "--dptheory-profile", "quick", str(suite)],
        cwd=suite,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "9 passed" in out.stdout  # incl. the suite's check that the quick profile is loaded


@pytest.mark.parametrize(
    "algo,options",
    [
        ("dpsgd", {"sample_rate": 0.01, "steps": 200}),
        ("clip21sgd2m", {"rounds": 50, "tau": 1.0}),
        (
            "dicesgd",
            {"sample_rate": 0.01, "steps": 200, "dataset_size": 1000, "batch_size": 10, "c1": 1.0, "c2": 3.0},
        ),
    ],
)
def test_certified_epsilon_is_never_refuted_by_the_audit(algo: str, options: dict) -> None:
    """Self-use: our certified number, taken as the claim, survives the project's own audit."""
    from dptheory.claims import certified_epsilon

    eps = certified_epsilon(algo=algo, noise_multiplier=2.0, delta=1e-5, **options)
    res = assert_not_refuted_by_audit(
        algo=algo, noise_multiplier=2.0, delta=1e-5, eps=eps, samples=200, **options
    )
    assert 0 < res.epsilon_lower <= eps
