"""Closed-form lower bounds on the subsampled-Gaussian RDP (accounting.rdp_lower): never above
the exact value (computed upper bounds and a 40-digit quadrature), exact at small integer
orders, and order screening with them gives the whole curve's epsilon and order."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.conversion import rdp_to_epsilon
from accounting.events import ComposedEvent, GaussianEvent, ScheduleEvent, SelfComposedEvent
from accounting.order_screen import event_epsilon, event_floor, screened_epsilon
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS
from accounting.rdp import exact_rdp_function, subsampled_gaussian_rdp
from accounting.rdp_lower import event_lower_rdp, lower_rdp_steps, step_lower_function
from tests._screen_checks import assert_matches_whole_curve, without_dropped

_RATES = [1.0, 0.99, 0.5, 0.1, 0.01, 1e-3, 1e-6]


@st.composite
def _steps(draw):
    n = draw(st.integers(1, 12))
    z = np.asarray(draw(st.lists(st.floats(0.05, 1e4), min_size=n, max_size=n)))
    q = draw(st.sampled_from(_RATES))
    orders = np.unique(
        np.asarray(
            draw(
                st.lists(
                    st.one_of(
                        st.floats(1.01, 40.0), st.integers(2, 300).map(float), st.sampled_from([1024.0])
                    ),
                    min_size=1,
                    max_size=12,
                )
            )
        )
    )
    return q, z, orders


@settings(max_examples=60, deadline=None)
@given(_steps())
def test_never_above_the_computed_rdp(case) -> None:
    """The computed RDP is an upper bound on the truth (accounting.rdp), so a lower bound above
    it would be a bug; the bound is also non-negative and finite."""
    q, z, orders = case
    low = lower_rdp_steps(q, z, orders)
    exact = subsampled_gaussian_rdp(q, z, orders, evaluation="exact")
    assert np.all(np.isfinite(low)) and np.all(low >= 0.0)
    keep = np.isin(orders, exact.orders)
    assert np.all(low[keep] <= exact.rdp)


def _reference_log_a(q: float, sigma: float, alpha: float) -> mp.mpf:
    """``log E_{N(0, sigma^2)}[(1 - q + q exp((2x - 1)/(2 sigma^2)))^alpha]`` by 40-digit quadrature."""
    with mp.workdps(40):
        q_, s_, a_ = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)

        def f(x):
            dens = mp.exp(-(x * x) / (2 * s_ * s_)) / (s_ * mp.sqrt(2 * mp.pi))
            return dens * (1 - q_ + q_ * mp.exp((2 * x - 1) / (2 * s_ * s_))) ** a_

        z0 = s_ * s_ * mp.log(1 / q_ - 1) + mp.mpf(1) / 2
        pts = sorted({-mp.inf, -10 * s_, mp.mpf(0), z0, a_ * s_ * s_, 10 * s_ + a_ * s_ * s_, mp.inf})
        return mp.log(mp.quad(f, pts))


@pytest.mark.parametrize(
    ("q", "sigma", "alpha"),
    [
        (0.01, 0.95, 8.2),  # the knee of the inv-k benchmark's last steps
        (0.01, 0.95, 8.9),
        (0.01, 3.0, 2.5),
        (0.1, 1.5, 5.3),
        (0.5, 0.8, 3.7),
        (1e-3, 30.0, 1.1),
        (0.01, 0.6, 20.5),
    ],
)
def test_below_a_quadrature_reference_and_close_to_it(q: float, sigma: float, alpha: float) -> None:
    ref = float(_reference_log_a(q, sigma, alpha)) / (alpha - 1.0)
    low = float(lower_rdp_steps(q, sigma, [alpha])[0])
    assert low <= ref
    assert low >= 0.5 * ref  # a bound that says nothing would pass the first check alone


def test_exact_binomial_sum_at_small_integer_orders() -> None:
    """At integer orders up to the term cap the bound is the binomial sum itself: it meets the
    (rigorous, slightly padded) computed RDP to 1e-6 relative plus 1e-10 (its rounding
    allowance is absolute in ``log A``, ~1e-11 a step)."""
    z = np.array([0.7, 1.0, 2.0, 5.0, 30.0])
    orders = np.arange(2.0, 25.0)
    for q in (0.5, 0.01, 1e-4):
        low = lower_rdp_steps(q, z, orders)
        exact = subsampled_gaussian_rdp(q, z, orders, evaluation="exact").rdp
        assert np.all(low <= exact)
        assert np.all(exact - low <= 1e-6 * exact + 1e-10)


def test_plain_gaussian_and_compositions() -> None:
    """q = 1 gives alpha/(2 sigma^2) (rounded down); self-composition multiplies, composition
    adds; the other events give no bound (zeros)."""
    orders = np.array([1.5, 2.0, 7.25, 64.0])
    g = event_lower_rdp(GaussianEvent(2.0), orders)
    assert np.all(g <= orders / 8.0) and np.allclose(g, orders / 8.0, rtol=1e-12)
    ev = ScheduleEvent.from_schedule("inv-k", 10.0, 20, 0.05)
    one = event_lower_rdp(ev, orders)
    assert np.allclose(event_lower_rdp(SelfComposedEvent(ev, 3), orders), 3 * one, rtol=1e-12)
    both = event_lower_rdp(ComposedEvent([ev, GaussianEvent(2.0)]), orders)
    assert np.allclose(both, one + g, rtol=1e-12)
    assert np.all(both <= ComposedEvent([ev, GaussianEvent(2.0)]).rdp(orders).rdp)


@st.composite
def _schedules(draw):
    kind = draw(st.sampled_from(["inv-k", "inv-sqrt-k", "random"]))
    steps = draw(st.integers(1, 60))
    base = draw(st.floats(0.5, 100.0))
    if kind == "random":
        z = np.asarray(draw(st.lists(st.floats(0.5, 100.0), min_size=steps, max_size=steps)))
        ev = ScheduleEvent(draw(st.sampled_from([0.5, 0.1, 0.01, 1e-3])), z)
    else:
        ev = ScheduleEvent.from_schedule(kind, base, steps, draw(st.sampled_from([0.5, 0.1, 0.01, 1e-3])))
    delta = draw(st.sampled_from([1e-10, 1e-5, 1e-2]))
    grid = draw(st.sampled_from(["dp", "default", "fractional"]))
    orders = {"dp": DP_ACCOUNTING_ORDERS, "default": DEFAULT_ORDERS}.get(grid, np.arange(1.05, 30.0, 0.2))
    method = draw(st.sampled_from(["improved", "classic"]))
    return ev, delta, np.asarray(orders, dtype=float), method


@settings(max_examples=30, deadline=None)
@given(_schedules())
def test_screening_with_the_bound_matches_the_whole_curve(case) -> None:
    """Screening that uses the closed-form bound returns the whole curve's epsilon (to rounding),
    order, edge flag and warnings."""
    ev, delta, orders, method = case
    full = rdp_to_epsilon(ev.rdp(orders), delta, method=method)
    got = screened_epsilon(
        ev.rdp,
        orders,
        delta,
        method=method,
        floor=event_floor(ev),
        lower=lambda sub: event_lower_rdp(ev, sub),
    )
    assert_matches_whole_curve(full, got, (full.warnings, without_dropped(full.warnings)))


def test_benchmark_case_evaluates_two_fractional_orders_and_keeps_epsilon() -> None:
    """inv-k, T = 1000, q = 0.01, base sigma 30, delta 1e-5, dp-accounting's grid (the speed
    benchmark): the bound leaves two fractional orders to evaluate (eleven without it), the
    first round starts at the bound's best integer order (8) with its neighbours, and the
    epsilon is bit-equal to the whole curve's."""
    ev = ScheduleEvent.from_schedule("inv-k", 30.0, 1000, 0.01)
    f = exact_rdp_function(*ev.step_arrays)
    seen: list[float] = []

    def evaluate(sub):
        seen.extend(float(a) for a in sub)
        return f(sub)

    got = screened_epsilon(
        evaluate, DP_ACCOUNTING_ORDERS, 1e-5, floor=event_floor(ev), lower=lambda s: event_lower_rdp(ev, s)
    )
    full = rdp_to_epsilon(f(DP_ACCOUNTING_ORDERS), 1e-5)
    assert got.epsilon == full.epsilon and got.order == full.order == 8.2
    assert sorted(a for a in seen if a != int(a)) == [8.1, 8.2]
    assert sorted(a for a in seen if a == int(a)) == [7.0, 8.0, 9.0]
    assert event_epsilon(ev, DP_ACCOUNTING_ORDERS, 1e-5).epsilon == full.epsilon


def test_prepared_steps_give_the_same_bound_on_any_order_subset() -> None:
    """``step_lower_function`` prepares the steps once: asking about order subsets one at a time,
    in any order, gives what one call about all of them gives, to rounding (matrix products
    may sum in another order for another number of columns), also with enough steps to split
    the rows into chunks."""
    rng = np.random.default_rng(5)
    orders = np.concatenate([np.arange(1.5, 12.0, 0.5), np.arange(12.0, 31.0)])
    for n in (2000, 30_000):
        z = rng.uniform(0.7, 40.0, n)
        q = rng.choice([0.01, 0.3, 1.0], n)
        f = step_lower_function(q, z)
        whole = f(orders)
        parts = np.empty_like(whole)
        for idx in (np.arange(orders.size)[::-1][:7], np.arange(orders.size)[:-7]):
            parts[idx] = f(orders[idx])
        assert np.allclose(parts, whole, rtol=1e-13, atol=0.0)
        assert np.all(whole > 0.0)
        # below the computed RDP (the bound's contract), at a few orders
        some = orders[::9]
        assert np.all(f(some) <= subsampled_gaussian_rdp(q, z, some).rdp)


def test_tiny_rates_with_small_noise_stay_below_the_computed_rdp() -> None:
    """Tiny q with small noise: the moments an order uses lie hundreds of e-folds below the
    largest of the 25 (g_i grows like i^2 s), where a shared shift left them subnormal and the
    bound came out up to 2669x above the RDP (q = 4.86e-5, sigma = 0.532, alpha = 1.5; and
    9e-9 relative above at q = 1e-6, sigma = 0.5, alpha = 10).  Over that regime the bound
    stays below the computed RDP, and at integer orders up to 24 it is still the binomial sum
    (within 1e-8 where the RDP is at least 1e-3)."""
    orders = np.array([1.1, 1.5, 2.0, 2.5, 3.0, 4.5, 6.0, 8.0, 10.0, 10.5, 12.0, 16.0, 20.0, 23.5, 24.0, 30])
    worst = 1.0
    for q in np.logspace(-10.0, -1.0, 10):
        for z in (0.3, 0.45, 0.5, 0.532, 0.6, 1.0):
            low = lower_rdp_steps(q, z, orders)
            exact = subsampled_gaussian_rdp(q, z, orders, evaluation="exact")
            keep = np.isin(orders, exact.orders)
            assert np.all(low[keep] <= exact.rdp), (q, z)
            tight = (orders[keep] == np.floor(orders[keep])) & (orders[keep] <= 24) & (exact.rdp >= 1e-3)
            worst = min(worst, float(np.min(low[keep][tight] / exact.rdp[tight], initial=1.0)))
    assert worst >= 1.0 - 1e-8
    assert float(lower_rdp_steps(1e-6, 0.5, [10.0])[0]) <= 4.6494327136307533  # 50-digit value


@pytest.mark.parametrize(
    ("q", "sigma", "alpha"),
    [
        (5.1876086855608726e-09, 0.41667689122016544, 16.011437530247385),
        (0.9999999999716869, 0.5326103029669392, 16.014164246828166),
        (1.60962151603306e-05, 0.43406288183650066, 16.08648952865889),
        (0.9999992622376578, 0.2546395410955754, 21.938705444367848),
    ],
)
def test_fractional_orders_whose_p_b_moments_are_subnormal(q, sigma, alpha) -> None:
    """Small noise at a fractional order: P_A's terms (i <= n + 2) lie within 600 e-folds of the
    shift while P_B's (i <= n and the top moment) are subnormal, so P_B must be tested on its
    own range (it came out up to 1.7e-3 above the RDP when tested on P_A's)."""
    low = float(lower_rdp_steps(q, sigma, [alpha])[0])
    assert low <= float(subsampled_gaussian_rdp(q, sigma, [alpha], evaluation="exact").rdp[0])
