"""Mechanism event objects: composition algebra, validation, export to dp-accounting."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from accounting.conversion import rdp_to_epsilon
from accounting.errors import InvalidParameter
from accounting.events import (
    ComposedEvent,
    GaussianEvent,
    RdpCurveEvent,
    ScheduleEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
    event_from_dict,
    event_to_dict,
)
from accounting.interop import dp_accounting_rdp_epsilon
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS

ORDERS = DEFAULT_ORDERS


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def test_gaussian_closed_form_and_sensitivity():
    """RDP of the Gaussian is alpha s^2 / (2 z^2); it equals a subsampled Gaussian with q = 1."""
    c = GaussianEvent(2.0, sensitivity=2.0).rdp(ORDERS)
    np.testing.assert_allclose(c.rdp, ORDERS * 4.0 / (2 * 4.0), rtol=1e-14)
    full = SubsampledGaussianEvent(1.0, 1.3).rdp(ORDERS)
    np.testing.assert_allclose(GaussianEvent(1.3).rdp(ORDERS).rdp, full.rdp, rtol=1e-10)


def test_self_composed_is_count_times_single():
    single = SubsampledGaussianEvent(0.01, 1.1)
    np.testing.assert_allclose(
        SelfComposedEvent(single, 37).rdp(ORDERS).rdp, 37 * single.rdp(ORDERS).rdp, rtol=1e-14
    )


def test_composed_is_sum():
    parts = (
        SubsampledGaussianEvent(0.02, 0.9),
        GaussianEvent(5.0),
        SelfComposedEvent(SubsampledGaussianEvent(0.1, 2), 3),
    )
    total = ComposedEvent(parts).rdp(ORDERS)
    expect = sum(p.rdp(ORDERS).rdp for p in parts)
    np.testing.assert_allclose(total.rdp, expect, rtol=1e-14)
    assert np.all(ComposedEvent(()).rdp(ORDERS).rdp == 0)


@pytest.mark.parametrize("per_step_rate", [False, True])
def test_schedule_is_sum_of_steps(per_step_rate):
    z = np.array([0.8, 1.0, 1.7, 1.0, 3.5])
    q = (0.01, 0.05, 0.2, 0.05, 1.0) if per_step_rate else 0.03
    ev = ScheduleEvent(q, tuple(z))
    qs = q if per_step_rate else (q,) * z.size
    expect = sum(SubsampledGaussianEvent(qk, zk).rdp(ORDERS).rdp for qk, zk in zip(qs, z, strict=True))
    np.testing.assert_allclose(ev.rdp(ORDERS).rdp, expect, rtol=1e-12)
    assert ev.steps == 5


def test_schedule_is_one_vectorised_call(monkeypatch):
    """T distinct steps cost one call of accounting.rdp, with the whole per-step arrays."""
    import accounting.events as events_mod

    calls = []
    real = events_mod.subsampled_gaussian_rdp

    def spy(q, z, orders, **kw):
        calls.append((np.shape(q), np.shape(z)))
        return real(q, z, orders, **kw)

    monkeypatch.setattr(events_mod, "subsampled_gaussian_rdp", spy)
    ScheduleEvent(0.01, tuple(np.linspace(1.0, 3.0, 500))).rdp(ORDERS)
    assert calls == [((), (500,))]


def test_schedule_runs_merge_identical_steps():
    ev = ScheduleEvent(0.1, (1.0, 1.0, 2.0, 2.0, 2.0, 1.0))
    assert ev.runs() == [(0.1, 1.0, 2), (0.1, 2.0, 3), (0.1, 1.0, 1)]


def test_schedule_from_named_schedule():
    ev = ScheduleEvent.from_schedule("inv-k", 2.0, 4, 0.1)
    np.testing.assert_allclose(ev.noise_multipliers, 2.0 / np.sqrt([1, 2, 3, 4]), rtol=1e-12)


def test_events_are_immutable_and_hashable():
    ev = SubsampledGaussianEvent(0.1, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.noise_multiplier = 2.0  # type: ignore[misc]
    s = ScheduleEvent(0.1, [1.0, 2.0])
    assert s == ScheduleEvent(0.1, (1.0, 2.0)) and hash(s) == hash(ScheduleEvent(0.1, (1.0, 2.0)))
    assert len({ev, SubsampledGaussianEvent(0.1, 1.0), SubsampledGaussianEvent(0.1, 1.5)}) == 2


@pytest.mark.parametrize(
    "make, option",
    [
        (lambda: GaussianEvent(0.0), "--noise-multiplier"),
        (lambda: GaussianEvent(float("nan")), "--noise-multiplier"),
        (lambda: SubsampledGaussianEvent(0.0, 1.0), "--sample-rate"),
        (lambda: SubsampledGaussianEvent(1.5, 1.0), "--sample-rate"),
        (lambda: SubsampledGaussianEvent(0.1, -1.0), "--noise-multiplier"),
        (lambda: ScheduleEvent(0.1, ()), "--steps"),
        (lambda: ScheduleEvent(0.1, (1.0, float("inf"))), "--noise-multiplier"),
        (lambda: ScheduleEvent((0.1, 0.2, 0.3), (1.0, 1.0)), "--sample-rate"),
        (lambda: ScheduleEvent((0.1, 0.0), (1.0, 1.0)), "--sample-rate"),
        (lambda: SelfComposedEvent(GaussianEvent(1.0), 0), "--steps"),
        (lambda: SelfComposedEvent(GaussianEvent(1.0), 2.5), "--steps"),
    ],
)
def test_bad_parameters_name_the_option(make, option):
    with pytest.raises(InvalidParameter) as info:
        make()
    assert info.value.option == option


def test_non_mechanisms_are_type_errors():
    with pytest.raises(TypeError):
        ComposedEvent((GaussianEvent(1.0), "not an event"))
    with pytest.raises(TypeError):
        SelfComposedEvent(3.0, 2)
    with pytest.raises(TypeError):
        RdpCurveEvent(np.zeros(3))


def test_schedule_error_names_the_step():
    with pytest.raises(InvalidParameter, match="step 3"):
        ScheduleEvent(0.1, (1.0, 1.0, -2.0))


EVENTS = [
    GaussianEvent(1.7),
    GaussianEvent(3.0, sensitivity=2.0),
    SubsampledGaussianEvent(0.01, 1.1),
    SelfComposedEvent(SubsampledGaussianEvent(0.02, 0.8), 150),
    ScheduleEvent.from_schedule("inv-sqrt-k", 3.0, 20, 0.05),
    ScheduleEvent((0.01, 0.02, 0.02, 0.05), (1.0, 1.5, 1.5, 2.0)),
    ComposedEvent((SelfComposedEvent(SubsampledGaussianEvent(0.05, 1.2), 40), GaussianEvent(8.0))),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_to_dp_event_round_trip_matches_dp_accounting(event):
    """dp-accounting's RdpAccountant on the exported event gives our epsilon (same grid)."""
    ours = rdp_to_epsilon(event.rdp(DP_ACCOUNTING_ORDERS), 1e-5).epsilon
    theirs = dp_accounting_rdp_epsilon(event, 1e-5, DP_ACCOUNTING_ORDERS)
    assert _rel(ours, theirs) <= 1e-9


def test_rdp_curve_event_is_grid_bound_and_not_exportable():
    curve = SubsampledGaussianEvent(0.1, 1.0).rdp(ORDERS)
    ev = RdpCurveEvent(curve, "hidden-state")
    assert ev.rdp(ORDERS) is curve
    with pytest.raises(InvalidParameter) as info:
        ev.rdp(ORDERS[:10])
    assert info.value.option == "--orders"
    with pytest.raises(NotImplementedError, match="hidden-state"):
        ev.to_dp_event()
    with pytest.raises(NotImplementedError):
        ComposedEvent((GaussianEvent(1.0), ev)).to_dp_event()


@pytest.mark.parametrize("event", [*EVENTS, RdpCurveEvent(GaussianEvent(1.0).rdp(ORDERS), "x")], ids=repr)
def test_dict_round_trip_through_json(event):
    d = json.loads(json.dumps(event_to_dict(event), allow_nan=False))
    back = event_from_dict(d)
    assert back == event
    np.testing.assert_array_equal(back.rdp(ORDERS).rdp, event.rdp(ORDERS).rdp)
