"""The stateful RdpAccountant: merging, caching, checkpoints, composing foreign mechanisms."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from accounting.accountant import RdpAccountant
from accounting.conversion import rdp_to_epsilon
from accounting.errors import InvalidParameter
from accounting.events import (
    GaussianEvent,
    RdpCurveEvent,
    ScheduleEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
)
from accounting.interop import dp_accounting_rdp_epsilon
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def test_consecutive_identical_steps_merge():
    acc = RdpAccountant()
    for _ in range(100):
        acc.step(noise_multiplier=1.1, sample_rate=0.01)
    acc.step(noise_multiplier=1.1, sample_rate=0.01, count=50)
    assert acc.history == (SelfComposedEvent(SubsampledGaussianEvent(0.01, 1.1), 150),)
    acc.step(noise_multiplier=2.0, sample_rate=0.01)
    acc.step(noise_multiplier=1.1, sample_rate=0.01)
    assert len(acc.history) == 3 and acc.steps == 152


def test_step_equals_event_and_dp_accounting():
    acc = RdpAccountant(orders=DP_ACCOUNTING_ORDERS)
    for _ in range(120):
        acc.step(noise_multiplier=0.9, sample_rate=0.02)
    ev = SelfComposedEvent(SubsampledGaussianEvent(0.02, 0.9), 120)
    np.testing.assert_allclose(acc.rdp_curve().rdp, ev.rdp(DP_ACCOUNTING_ORDERS).rdp, rtol=1e-12)
    eps = acc.get_epsilon(1e-5)
    assert _rel(eps, dp_accounting_rdp_epsilon(ev, 1e-5, DP_ACCOUNTING_ORDERS)) <= 1e-9
    # whole-history export agrees too
    import dp_accounting

    theirs = dp_accounting.rdp.RdpAccountant(list(DP_ACCOUNTING_ORDERS)).compose(acc.to_dp_event())
    assert _rel(eps, theirs.get_epsilon(1e-5)) <= 1e-9


def test_stepping_a_schedule_equals_composing_it():
    ev = ScheduleEvent.from_schedule("exp", 2.0, 40, 0.05)
    by_step = RdpAccountant()
    for z in ev.noise_multipliers:
        by_step.step(noise_multiplier=z, sample_rate=0.05)
    at_once = RdpAccountant()
    at_once.compose(ev)
    np.testing.assert_allclose(by_step.rdp_curve().rdp, at_once.rdp_curve().rdp, rtol=1e-12)
    assert by_step.steps == 40 and at_once.steps == 0 and len(at_once.history) == 1


def test_epsilon_grows_with_each_step_and_is_cached():
    acc = RdpAccountant()
    prev = 0.0
    for k in range(1, 30):
        acc.step(noise_multiplier=1.0 + 0.1 * (k % 3), sample_rate=0.05)
        r1 = acc.get_epsilon_result(1e-5)
        assert acc.get_epsilon_result(1e-5) is r1  # memoised until the next change
        assert r1.epsilon > prev
        prev = r1.epsilon
    classic = acc.get_epsilon(1e-5, method="classic")
    assert classic >= prev  # the improved conversion is never worse than Mironov's


def test_default_orders_and_validation():
    assert np.array_equal(RdpAccountant().orders, DEFAULT_ORDERS)
    acc = RdpAccountant()
    with pytest.raises(InvalidParameter) as info:
        acc.step(noise_multiplier=-1.0, sample_rate=0.1)
    assert info.value.option == "noise_multiplier"
    with pytest.raises(InvalidParameter) as info:
        acc.step(noise_multiplier=1.0, sample_rate=0.1, count=0)
    assert info.value.option == "count"
    with pytest.raises(InvalidParameter) as info:
        acc.get_epsilon(1.5)
    assert info.value.option == "delta"
    with pytest.raises(InvalidParameter):
        RdpAccountant(orders=[])
    assert acc.history == ()  # failed calls leave no trace


def _busy_accountant() -> RdpAccountant:
    acc = RdpAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.01, count=500)
    acc.step(noise_multiplier=0.7, sample_rate=0.02)
    acc.compose(ScheduleEvent.from_schedule("inv-sqrt-k", 2.0, 20, (0.01)))
    acc.compose(GaussianEvent(10.0, sensitivity=2.0), count=3)
    return acc


def test_state_dict_round_trips_exactly_through_json():
    acc = _busy_accountant()
    text = json.dumps(acc.state_dict(), allow_nan=False)  # plain JSON, no NaN/inf literals
    back = RdpAccountant.from_state_dict(json.loads(text))
    assert back.history == acc.history
    assert np.array_equal(back.orders, acc.orders)
    assert np.array_equal(back.rdp_curve().rdp, acc.rdp_curve().rdp)
    assert back.get_epsilon(1e-6) == acc.get_epsilon(1e-6)
    assert back.state_dict() == acc.state_dict()
    # training continues identically after a restore
    acc.step(noise_multiplier=0.7, sample_rate=0.02)
    back.step(noise_multiplier=0.7, sample_rate=0.02)
    assert back.get_epsilon(1e-5) == acc.get_epsilon(1e-5)
    assert back.history == acc.history


def test_load_state_dict_rejects_bad_checkpoints():
    sd = _busy_accountant().state_dict()
    tampered = copy.deepcopy(sd)
    tampered["total"]["rdp"][5] = tampered["total"]["rdp"][5] * 0.5  # understated RDP
    with pytest.raises(ValueError, match="inconsistent"):
        RdpAccountant.from_state_dict(tampered)
    wrong = dict(sd, version=999)
    with pytest.raises(ValueError, match="version"):
        RdpAccountant.from_state_dict(wrong)
    with pytest.raises(ValueError):
        RdpAccountant().load_state_dict({"format": "something else"})


class _HiddenStateStep:
    """Stand-in for another mechanism that is only available as an RDP curve."""

    label = "toy-hidden-state"

    def rdp(self, orders):
        return GaussianEvent(4.0).rdp(orders)


def test_compose_foreign_mechanism_and_bare_curve():
    acc = RdpAccountant()
    acc.compose(_HiddenStateStep(), count=2)
    acc.compose(GaussianEvent(4.0).rdp(acc.orders))
    np.testing.assert_allclose(acc.rdp_curve().rdp, 3 * GaussianEvent(4.0).rdp(acc.orders).rdp, rtol=1e-14)
    assert isinstance(acc.history[0], SelfComposedEvent) and isinstance(acc.history[0].event, RdpCurveEvent)
    assert acc.history[0].event.label == "toy-hidden-state"
    back = RdpAccountant.from_state_dict(json.loads(json.dumps(acc.state_dict())))
    assert back.get_epsilon(1e-5) == acc.get_epsilon(1e-5)
    with pytest.raises(NotImplementedError):
        acc.to_dp_event()
    with pytest.raises(TypeError):
        acc.compose(object())


def test_curve_on_other_grid_is_refused():
    acc = RdpAccountant()
    with pytest.raises(InvalidParameter) as info:
        acc.compose(GaussianEvent(1.0).rdp(DP_ACCOUNTING_ORDERS))
    assert info.value.option == "orders"


def test_matches_one_shot_conversion():
    acc = _busy_accountant()
    res = rdp_to_epsilon(acc.rdp_curve(), 1e-5)
    assert acc.get_epsilon(1e-5) == res.epsilon
    assert acc.get_epsilon_result(1e-5).order == res.order
