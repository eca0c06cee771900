"""Calibration: the result always meets the target and is within rtol of the exact root."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.calibration import (
    CalibrationResult,
    calibrate_decreasing,
    calibrate_increasing,
    calibrate_steps,
)
from accounting.conversion import rdp_to_epsilon
from accounting.errors import InvalidParameter, UnreachableTarget
from accounting.orders import DP_ACCOUNTING_ORDERS
from accounting.rdp import subsampled_gaussian_rdp
from dptheory.testing import deltas, epsilons, sample_rates
from dptheory.testing import steps as step_counts


def dpsgd_eps(q: float, z: float, steps: int, delta: float = 1e-5) -> float:
    return rdp_to_epsilon(subsampled_gaussian_rdp(q, z, DP_ACCOUNTING_ORDERS, steps=steps), delta).epsilon


@settings(max_examples=25, deadline=None)
@given(root=st.floats(1e-6, 1e6), power=st.floats(0.2, 5.0), rtol=st.sampled_from([1e-3, 1e-6, 1e-9]))
def test_closed_form_root(root, power, rtol):
    def fn(x):
        return (root / x) ** power  # decreasing, fn(root) = 1

    res = calibrate_decreasing(fn, 1.0, option="--x", rtol=rtol)
    assert fn(res.value) <= 1.0
    assert root * (1 - 1e-12) <= res.value <= root * (1 + rtol) * (1 + 1e-12)
    lo, hi = res.bracket
    assert hi == res.value and lo < hi <= lo * (1 + rtol)
    assert res.achieved == fn(res.value)


@settings(max_examples=15, deadline=None)
@given(
    q=st.floats(0.005, 0.2),
    steps=st.integers(10, 2000),
    eps=st.floats(0.3, 8.0),
)
def test_noise_calibration_is_conservative(q, steps, eps):
    rtol = 1e-6

    def fn(z):
        return dpsgd_eps(q, z, steps)

    res = calibrate_decreasing(fn, eps, option="--eps", rtol=rtol)
    assert fn(res.value) <= eps
    assert fn(res.value * (1 - 2 * rtol)) > eps


def test_matches_dp_accounting_calibration():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as dp_rdp

    def make_event(z):
        return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.02, dpa.GaussianDpEvent(z)), 150)

    ref = dpa.calibrate_dp_mechanism(dp_rdp.RdpAccountant, make_event, 2.0, 1e-5)
    ours = calibrate_decreasing(lambda z: dpsgd_eps(0.02, z, 150), 2.0, option="--eps")
    assert ours.value <= ref  # never more noise than dp-accounting's (conservative) answer
    assert ours.value == pytest.approx(ref, rel=1e-3)


def test_lower_bound_already_meets_target():
    res = calibrate_decreasing(lambda x: 1.0 / x, 10.0, option="--x", lower=0.5, upper=100.0)
    assert res.value == 0.5 and res.achieved == 2.0


def test_unreachable_targets():
    with pytest.raises(UnreachableTarget) as info:
        calibrate_decreasing(lambda x: 1.0 + 1.0 / x, 0.5, option="--eps")
    assert info.value.option == "--eps" and isinstance(info.value, InvalidParameter)
    with pytest.raises(UnreachableTarget):
        calibrate_decreasing(lambda x: math.inf, 1.0, option="--eps")
    with pytest.raises(UnreachableTarget):
        calibrate_decreasing(lambda x: math.nan, 1.0, option="--eps")
    with pytest.raises(UnreachableTarget):
        calibrate_decreasing(lambda x: 1.0 / x, math.nan, option="--eps")


def test_infinite_values_below_root_are_handled():
    # epsilon is inf for tiny noise (no finite RDP order); calibration must still find the root
    res = calibrate_decreasing(lambda x: math.inf if x < 0.3 else 1.0 / x, 2.0, option="--eps")
    assert res.value == pytest.approx(0.5, rel=1e-6) and res.achieved <= 2.0


def test_calibrate_steps_exact():
    res = calibrate_steps(lambda t: 0.1 * t, 2.05, option="--steps")
    assert res == CalibrationResult(20.0, pytest.approx(2.0), res.iterations, (20.0, 21.0))
    assert calibrate_steps(lambda t: 0.0, 1.0, option="--steps", max_steps=1000).value == 1000
    with pytest.raises(UnreachableTarget, match="--steps"):
        calibrate_steps(lambda t: 5.0 * t, 1.0, option="--steps")


def test_calibrate_steps_dpsgd():
    res = calibrate_steps(lambda t: dpsgd_eps(0.02, 1.0, t), 2.0, option="--steps")
    t = int(res.value)
    assert dpsgd_eps(0.02, 1.0, t) <= 2.0 < dpsgd_eps(0.02, 1.0, t + 1)


def test_calibrate_increasing_sample_rate():
    rtol = 1e-6

    def fn(q):
        return dpsgd_eps(q, 1.0, 150)

    res = calibrate_increasing(fn, 2.0, option="--sample-rate", upper=1.0, rtol=rtol)
    assert fn(res.value) <= 2.0
    assert fn(min(1.0, res.value * (1 + 2 * rtol))) > 2.0
    # target so loose that the full rate is fine
    assert calibrate_increasing(fn, 1e9, option="--sample-rate", upper=1.0).value == 1.0
    with pytest.raises(UnreachableTarget, match="--sample-rate"):
        calibrate_increasing(lambda q: 1.0 + q, 0.5, option="--sample-rate", lower=1e-9, upper=1.0)


# -- the project's own use of dptheory.testing (issue 13): strategies over the envelope, and the
#    assertion that re-checks a calibration through an independent path (composed events).


@settings(max_examples=12, deadline=None)
@given(q=sample_rates(1e-4, 0.5), t=step_counts(1, 2000), eps=epsilons(0.5, 20.0), delta=deltas(1e-12, 1e-3))
def test_api_calibration_meets_its_target_as_a_composed_event(q, t, eps, delta):
    """``dptheory.calibrate``'s z, composed as T subsampled-Gaussian events and accounted afresh by
    ``assert_epsilon_at_most`` (which shrinks a failure to the fewest steps), is within the target."""
    from accounting.events import SelfComposedEvent, SubsampledGaussianEvent
    from dptheory import calibrate
    from dptheory.testing import assert_epsilon_at_most

    z = calibrate(eps=eps, delta=delta, algo="dpsgd", sample_rate=q, steps=t).noise_multiplier
    assert_epsilon_at_most(SelfComposedEvent(SubsampledGaussianEvent(q, z), t), eps, delta)
