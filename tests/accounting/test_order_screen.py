"""Order screening (accounting.order_screen): the screened epsilon equals the conversion of the
whole curve (same value to rounding, same order, same warnings except
un-evaluated dropped orders), and the lower bounds it relies on
really are below the computed RDP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.conversion import epsilon_per_order, rdp_to_epsilon
from accounting.events import (
    ComposedEvent,
    GaussianEvent,
    RdpCurveEvent,
    ScheduleEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
)
from accounting.order_screen import (
    event_epsilon,
    event_floor,
    kl_floor,
    lower_rdp,
    screenable,
    screened_epsilon,
)
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS
from accounting.rdp import subsampled_gaussian_rdp
from accounting.schedules import SCHEDULES, noise_multipliers
from tests._screen_checks import assert_matches_whole_curve, without_dropped


def _assert_same(full, got) -> None:
    """Equal epsilon to rounding, the same order, edge flag and warnings -- except that the
    screened result never lists orders as dropped that it did not evaluate (they are proven
    non-optimal; module docstring), so only the whole curve's "RDP orders dropped" line may be
    missing (tests/accounting/test_order_screen_random_cases.py checks those orders were never evaluated)."""
    assert_matches_whole_curve(full, got, (full.warnings, without_dropped(full.warnings)))


@st.composite
def _schedule_case(draw):
    kind = draw(st.sampled_from([*SCHEDULES, "random"]))
    steps = draw(st.integers(1, 40))
    sigmas = st.one_of(st.floats(0.3, 3000.0), st.sampled_from([1e-3, 0.02, 0.1, 1e5]))
    base = draw(sigmas)
    if kind == "random":
        z = np.asarray(draw(st.lists(sigmas, min_size=steps, max_size=steps)))
    else:
        z = np.asarray(noise_multipliers(kind, base, steps))
    q = draw(st.sampled_from([1.0, 0.5, 0.1, 0.01, 1e-3, 1e-5]))
    delta = draw(st.sampled_from([1e-12, 1e-8, 1e-5, 1e-3, 0.1, 0.5]))
    grid = draw(st.sampled_from(["dp", "default", "subset", "fractional", "near-one", "tiny"]))
    if grid == "dp":
        orders = DP_ACCOUNTING_ORDERS
    elif grid == "default":
        orders = DEFAULT_ORDERS
    elif grid == "subset":
        idx = draw(st.lists(st.integers(0, DEFAULT_ORDERS.size - 1), min_size=1, max_size=40, unique=True))
        orders = np.sort(DEFAULT_ORDERS[idx])
    elif grid == "fractional":
        orders = np.arange(1.05, 20.0, 0.25)
    elif grid == "near-one":
        orders = np.concatenate([[1.001, 1.005, 1.01, 1.02], DP_ACCOUNTING_ORDERS])
    else:
        orders = np.sort(
            np.asarray(
                draw(
                    st.lists(st.sampled_from([1.5, 2.0, 3.0, 8.5, 64.0]), min_size=1, max_size=3, unique=True)
                )
            )
        )
    method = draw(st.sampled_from(["improved", "improved", "classic"]))
    return q, z, delta, np.asarray(orders, dtype=float), method


@settings(max_examples=40, deadline=None)
@given(_schedule_case())
def test_screened_equals_full_curve(case) -> None:
    q, z, delta, orders, method = case
    event = ScheduleEvent(q, tuple(z.tolist()))
    full = rdp_to_epsilon(event.rdp(orders), delta, method=method)
    got = event_epsilon(event, orders, delta, method=method)
    _assert_same(full, got)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_schedule_case())
def test_screened_equals_full_curve_many(case) -> None:
    """The same property on 400 examples (about 25 s; ``-m slow``)."""
    test_screened_equals_full_curve.hypothesis.inner_test(case)


@settings(max_examples=25, deadline=None)
@given(_schedule_case())
def test_lower_bounds_below_computed_curve(case) -> None:
    """L (from integer orders) and the KL floor are below the computed RDP at every order."""
    q, z, _, _, _ = case
    orders = DEFAULT_ORDERS
    curve = ScheduleEvent(q, tuple(z.tolist())).rdp(orders)
    ok = np.isfinite(curve.rdp)
    ints = ok & (orders == np.floor(orders))
    low = lower_rdp(orders, orders[ints], curve.rdp[ints])
    # at non-point orders L is a lower bound; at the points it is not meant to be meaningful
    other = ok & ~ints
    assert np.all(low[other] <= curve.rdp[other] * (1 + 1e-12) + 1e-300)
    floor = kl_floor(q, z)
    assert np.all(floor <= curve.rdp[ok] * (1 + 1e-12))


def test_inv_k_benchmark_case_same_order() -> None:
    event = ScheduleEvent.from_schedule("inv-k", 30.0, 200, 0.01)
    full = rdp_to_epsilon(event.rdp(DP_ACCOUNTING_ORDERS), 1e-5)
    got = event_epsilon(event, DP_ACCOUNTING_ORDERS, 1e-5)
    assert got.order == full.order
    assert got.epsilon == pytest.approx(full.epsilon, rel=1e-14)


def test_evaluates_few_orders() -> None:
    """The point of the exercise: far fewer orders than the grid are evaluated."""
    event = ScheduleEvent.from_schedule("inv-k", 30.0, 200, 0.01)
    seen: list[int] = []

    def evaluate(o):
        seen.append(o.size)
        return event.rdp(o)

    screened_epsilon(evaluate, DP_ACCOUNTING_ORDERS, 1e-5, floor=event_floor(event))
    assert sum(seen) <= DP_ACCOUNTING_ORDERS.size // 3


def test_edge_of_grid_warning_kept() -> None:
    # huge noise: the optimum is the largest order; the warning must be the full curve's
    event = SelfComposedEvent(SubsampledGaussianEvent(0.01, 500.0), 10)
    full = rdp_to_epsilon(event.rdp(DP_ACCOUNTING_ORDERS), 1e-5)
    got = event_epsilon(event, DP_ACCOUNTING_ORDERS, 1e-5)
    _assert_same(full, got)
    assert got.on_edge


@pytest.mark.parametrize("base", [20.0, 31.7, 50.0, 100.0])
def test_optimum_at_large_first_subset_orders(base) -> None:
    """Optima at 63 ... 1024 (first-subset points the closed-form bound may defer, the largest
    order included): same epsilon, order and edge warning as the whole curve."""
    event = ScheduleEvent.from_schedule("inv-k", base, 50, 0.01)
    full = rdp_to_epsilon(event.rdp(DP_ACCOUNTING_ORDERS), 1e-5)
    got = event_epsilon(event, DP_ACCOUNTING_ORDERS, 1e-5)
    assert full.order >= 63
    _assert_same(full, got)


def test_zero_epsilon_tie_goes_to_first_order() -> None:
    # so much noise that the KL bound gives eps = 0 at many orders: the first one is reported
    event = SubsampledGaussianEvent(1e-5, 1e6)
    full = rdp_to_epsilon(event.rdp(DEFAULT_ORDERS), 0.5)
    got = event_epsilon(event, DEFAULT_ORDERS, 0.5)
    assert full.epsilon == 0.0 and got.epsilon == 0.0
    assert got.order == full.order


def test_grid_bounded_curve_falls_back_exactly() -> None:
    q, z = 0.01, noise_multipliers("inv-k", 30.0, 300)

    def evaluate(o):
        return subsampled_gaussian_rdp(q, z, o, evaluation="grid")

    full = rdp_to_epsilon(evaluate(DP_ACCOUNTING_ORDERS), 1e-5)
    got = screened_epsilon(evaluate, DP_ACCOUNTING_ORDERS, 1e-5)
    assert got == full  # the whole curve was converted: identical, warnings included


def test_dropped_order_falls_back_exactly() -> None:
    # sigma so small that large orders overflow and are dropped
    event = SubsampledGaussianEvent(0.5, 1e-3)
    full = rdp_to_epsilon(event.rdp(DEFAULT_ORDERS), 1e-5)
    got = event_epsilon(event, DEFAULT_ORDERS, 1e-5)
    assert got == full


def test_screenable_types() -> None:
    base = SubsampledGaussianEvent(0.01, 2.0)
    assert screenable(ComposedEvent((base, GaussianEvent(3.0), SelfComposedEvent(base, 5))))
    other = RdpCurveEvent(base.rdp(DEFAULT_ORDERS))
    assert not screenable(other)
    assert not screenable(ComposedEvent((base, other)))
    # not screenable: the whole curve, exactly
    assert event_epsilon(other, DEFAULT_ORDERS, 1e-5) == rdp_to_epsilon(other.rdp(DEFAULT_ORDERS), 1e-5)


def test_composed_event_floor_and_epsilon() -> None:
    event = ComposedEvent(
        (SelfComposedEvent(SubsampledGaussianEvent(0.02, 1.5), 50), GaussianEvent(20.0, sensitivity=2.0))
    )
    curve = event.rdp(DEFAULT_ORDERS)
    assert event_floor(event) <= float(np.min(curve.rdp))
    _assert_same(rdp_to_epsilon(curve, 1e-6), event_epsilon(event, DEFAULT_ORDERS, 1e-6))


def test_conversion_monotone_in_rdp() -> None:
    """Step 4 of the derivation: epsilon at an order is non-decreasing in the RDP value."""
    r = np.geomspace(1e-14, 1e3, 400)
    for a in (1.005, 1.5, 2.0, 33.0, 1024.0):
        for method in ("improved", "classic"):
            e = epsilon_per_order(np.full(r.size, a), r, 1e-5, method)
            assert np.all(e[1:] >= e[:-1])


def test_exact_rdp_function_is_the_same_evaluation() -> None:
    from accounting.rdp import coarse_bounds, exact_rdp_function

    z = noise_multipliers("inv-sqrt-k", 2.0, 120)
    counts = np.arange(1, 121)
    fn = exact_rdp_function(0.02, z, counts=counts)
    assert fn is not None
    for orders in (DEFAULT_ORDERS, np.array([1.5, 7.0, 33.3])):
        want = subsampled_gaussian_rdp(0.02, z, orders, counts=counts)
        got = fn(orders)
        assert np.array_equal(got.rdp, want.rdp) and got.dropped == want.dropped
    # where subsampled_gaussian_rdp would bound steps from a sigma grid: no exact function
    assert exact_rdp_function(0.02, noise_multipliers("inv-k", 30.0, 5000)) is None
    with coarse_bounds():
        assert exact_rdp_function(0.02, z) is None
        assert exact_rdp_function(0.02, z[:10]) is not None


def test_exact_rdp_function_rounds_equal_fresh_evaluations() -> None:
    """Integer orders' per-step log A is kept between calls (the chords of later fractional
    orders reuse it): every round is bit for bit a fresh evaluation of its orders."""
    from accounting.rdp import exact_rdp_function

    z = noise_multipliers("inv-k", 30.0, 300)
    fn = exact_rdp_function(0.01, z)
    assert fn is not None
    for orders in ([9.0], [7.0, 8.0, 10.0], [8.1, 8.2, 9.5, 10.5], [2.0, 3.5, 64.0], DP_ACCOUNTING_ORDERS):
        o = np.array(orders, dtype=float)
        want = subsampled_gaussian_rdp(0.01, z, o)
        got = fn(o)
        assert np.array_equal(got.rdp, want.rdp) and got.dropped == want.dropped


@pytest.mark.parametrize(
    "options",
    [
        {"schedule": "inv-sqrt-k", "steps": 40},
        {"schedule": "inv-k", "steps": 60, "mode": "claimed", "orders": "1.25-11.75:0.5,16,32,64"},
    ],
)
def test_d2p2_exact_schedule_same_report_as_the_whole_curve(monkeypatch, options) -> None:
    """The D2P2 path (epsilon and calibrate) reports what converting the whole curve reports."""
    import accounting.order_screen as screen
    from dptheory import api

    common = dict(algo="d2p2sgd", delta=1e-5, defaults="paper", **options)
    got_eps = api.epsilon(noise_multiplier=2.0, **common).to_json()
    got_cal = api.calibrate(eps=3.0, **common).to_json()
    monkeypatch.setattr(screen, "_MIN_SCREEN_ORDERS", 10**9)  # every grid converted whole
    want_eps = api.epsilon(noise_multiplier=2.0, **common).to_json()
    want_cal = api.calibrate(eps=3.0, **common).to_json()
    for got, want in ((got_eps, want_eps), (got_cal, want_cal)):
        assert got["order"] == want["order"] and got["warnings"] == want["warnings"]
        assert got["epsilon"] == pytest.approx(want["epsilon"], rel=1e-12)
        assert got["noise_multiplier"] == pytest.approx(want["noise_multiplier"], rel=1e-9)


def test_near_integer_orders_convert_the_whole_curve() -> None:
    """An order an ulp above 6 (what 1.2 + 0.2 k gave before --orders snapped stepped ranges):
    its series gives NaN, the chord between orders 6 and 7 takes over (it used to be dropped),
    and the screened path reports what the whole curve reports."""
    orders = np.unique(np.r_[1.2 + 0.2 * np.arange(55), 16.0, 32.0, 64.0])
    assert 6.000000000000001 in orders.tolist()
    event = ScheduleEvent.from_schedule("inv-k", 2.0, 40, 0.0171)
    curve = event.rdp(orders)
    assert curve.dropped == ()
    full = rdp_to_epsilon(curve, 1e-5)
    assert event_epsilon(event, orders, 1e-5) == full


def test_stepped_orders_land_on_the_typed_grid() -> None:
    # 1.2 + 24 * 0.2 is 6.000000000000001 in floating point; the parser snaps it to 6, so the
    # order is evaluated (integer path) instead of being dropped by the fractional series
    from accounting.orders import parse_orders
    from accounting.rdp import subsampled_gaussian_rdp

    orders = parse_orders("1.2-12:0.2")
    assert 6.0 in orders.tolist() and 7.0 in orders.tolist()
    assert np.all(np.abs(orders - np.round(orders, 1)) == 0)
    curve = subsampled_gaussian_rdp(0.5, 3.0, orders, steps=100)  # dropped 6+1ulp before
    assert curve.dropped == ()
    assert all("dropped" not in w for w in rdp_to_epsilon(curve, 1e-5).warnings)


def test_stepped_orders_keep_fine_steps_in_range() -> None:
    # review: snapping to 12 digits merged a fine grid and moved orders outside [lo, hi]
    from accounting.orders import parse_orders

    got = parse_orders("100000.0000001-100000.0000009:0.0000001")
    assert got.size == 9 and got[0] >= 100000.0000001 and got[-1] <= 100000.0000009
    assert parse_orders("1.00000000001-1.00000000002:0.000000000001").size == 11
    tiny = parse_orders("1.0000000000001-1.0000000000005:0.0000000000001")
    assert tiny.size == 5 and np.all(tiny > 1)


def test_kl_floor_is_the_pinsker_bound_within_a_percent_and_below_the_rdp() -> None:
    """``kl_floor`` bounds erf from below by its series for small arguments: never above
    ``2 q^2 erf(1/(2 sqrt 2 z))^2`` per step (math.erf), within 1e-4 of it, and below the
    computed RDP at an order just above 1."""
    z = np.geomspace(0.05, 1e5, 400)
    for q in (1.0, 0.3, 1e-3):
        exact = 2.0 * (q * np.array([math.erf(1.0 / (2.0 * math.sqrt(2.0) * v)) for v in z])) ** 2
        got = np.array([kl_floor(q, v) for v in z])
        assert np.all(got <= exact) and np.all(got >= (1.0 - 1e-4) * exact)
        assert kl_floor(q, z) <= float(np.sum(exact))
        rdp = subsampled_gaussian_rdp(q, z, [1.01]).rdp[0]
        assert kl_floor(q, z) <= rdp
