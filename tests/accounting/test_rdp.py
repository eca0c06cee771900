"""RDP of the (subsampled) Gaussian: agreement with dp-accounting, closed forms, dropped orders."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting import _frac_chord, _log_a_frac, _rdp_evaluate
from accounting.errors import InvalidParameter
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS, parse_orders
from accounting.rdp import RdpCurve, gaussian_rdp, subsampled_gaussian_rdp, subsampled_gaussian_rdp_steps

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.rdp import rdp_privacy_accountant as dp_rdp  # noqa: E402

ORDER_POOL = [1.1, 1.5, 1.9, 2.0, 2.5, 3.0, 4.5, 7.3, 10.9, 12.0, 32.0, 63.0, 128.0, 256.0]


def dp_reference(q: float, sigmas: list[float], orders: list[float]) -> np.ndarray:
    """dp-accounting's RdpAccountant on the equivalent ComposedDpEvent."""
    acc = dp_rdp.RdpAccountant(list(orders))
    acc.compose(dpa.ComposedDpEvent([dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(s)) for s in sigmas]))
    return acc._rdp


def assert_matches(ours: np.ndarray, ref: np.ndarray, steps: int, orders) -> None:
    """Integer orders: equal to 1e-9 relative.  Fractional orders: never looser than dp-accounting
    by more than our rounding allowance (``_FRAC_ROUNDING`` in log A), possibly tighter (the
    order chord, see ``frac_with_chord``; its soundness is tested against quadrature)."""
    fin = np.isfinite(ref)
    o = np.broadcast_to(np.asarray(orders, dtype=float), ref.shape)
    integer = fin & (o == np.floor(o))
    # 1e-9 relative; the absolute floor covers log-space rounding of log(A) ~ 0 (a few ulp of 1
    # per step, divided by alpha - 1 >= 0.1) that dp-accounting incurs for tiny RDP.
    np.testing.assert_allclose(ours[integer], ref[integer], rtol=1e-9, atol=2e-14 * steps)
    frac = fin & ~integer
    allowance = (_log_a_frac.frac_rounding(o[frac]) / (o[frac] - 1.0) + 2e-14) * steps
    assert np.all(ours[frac] <= ref[frac] * (1 + 1e-9) + allowance)


@settings(max_examples=40, deadline=None)
@given(
    q=st.one_of(st.floats(1e-3, 0.5), st.floats(0.5, 0.99), st.just(1.0)),
    sigma=st.floats(0.4, 20.0),
    decay=st.lists(st.floats(0.3, 1.0), min_size=1, max_size=4),
    orders=st.lists(st.sampled_from(ORDER_POOL), min_size=1, max_size=4, unique=True),
)
def test_agrees_with_dp_accounting(q, sigma, decay, orders):
    sigmas = [sigma * d for d in decay]
    ours = subsampled_gaussian_rdp(q, np.array(sigmas), orders)
    ref = dp_reference(q, sigmas, orders)
    assert_matches(ours.rdp, ref, len(sigmas), orders)
    # where dp-accounting converged we must not have dropped the order
    assert not any(o in {d for d, _ in ours.dropped} for o in np.asarray(orders)[np.isfinite(ref)])


def test_agrees_with_dp_accounting_default_grid_regimes():
    # fast path (tiny sigma), dense path and fractional series in one schedule
    sigmas = [5.0, 2.0, 1.0, 0.7, 0.3, 0.1, 0.05]
    ours = subsampled_gaussian_rdp(0.02, np.array(sigmas), DP_ACCOUNTING_ORDERS)
    ref = dp_reference(0.02, sigmas, list(DP_ACCOUNTING_ORDERS))
    assert_matches(ours.rdp, ref, len(sigmas), DP_ACCOUNTING_ORDERS)


def test_pruned_block_path_equals_dense_path():
    """The two integer-order routes of accounting's RDP code give the same log A on the same steps."""
    from accounting._log_a_int import log_a_int_dense, log_a_int_precise, log_s_of_sigma

    z = 3.0 / np.sqrt(np.arange(1, 41))
    alphas = (2, 17, 64, 512, 2048)
    lq, l1q = np.full(z.size, math.log(0.05)), np.full(z.size, math.log1p(-0.05))
    s, log_s = 1.0 / (2.0 * z**2), log_s_of_sigma(z)
    dense = log_a_int_dense(lq, l1q, s, log_s, alphas)
    rows = np.arange(z.size)
    blocks = np.column_stack([log_a_int_precise(lq, l1q, s, log_s, rows, a) for a in alphas])
    np.testing.assert_allclose(blocks, dense, rtol=1e-12, atol=1e-15)
    # and the evaluation through the public function is one of them, per order
    steps = subsampled_gaussian_rdp_steps(0.05, z, np.array(alphas, dtype=float))
    np.testing.assert_allclose(steps, dense / (np.array(alphas) - 1.0), rtol=1e-12, atol=1e-15)


def test_fractional_orders_upper_bound_the_exact_integral():
    """The fractional series (absolute values, as dp-accounting) never undercuts the true A_alpha."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    for q, s, a in [(0.01, 1.0, 1.5), (0.1, 2.0, 3.5), (0.3, 0.8, 2.2)]:
        qq, ss, aa = mp.mpf(q), mp.mpf(s), mp.mpf(a)

        def integrand(z, qq=qq, ss=ss, aa=aa):
            return mp.npdf(z, 0, ss) * ((1 - qq) + qq * mp.exp((2 * z - 1) / (2 * ss * ss))) ** aa

        exact = float(mp.log(mp.quad(integrand, [-mp.inf, -10 * ss, 0, 1, 10 * ss + 1, mp.inf])) / (aa - 1))
        ours = subsampled_gaussian_rdp(q, s, [a]).rdp[0]
        assert ours >= exact * (1 - 1e-12)
        # and integer orders are exact
        ai = float(math.ceil(a))
        exact_i = float(
            mp.log(
                mp.quad(
                    lambda z, qq=qq, ss=ss, ai=ai: (
                        mp.npdf(z, 0, ss) * ((1 - qq) + qq * mp.exp((2 * z - 1) / (2 * ss * ss))) ** ai
                    ),
                    [-mp.inf, -10 * ss, 0, 1, 10 * ss + 1, mp.inf],
                )
            )
            / (ai - 1)
        )
        assert subsampled_gaussian_rdp(q, s, [ai]).rdp[0] == pytest.approx(exact_i, rel=1e-10)


def test_gaussian_closed_form_and_q_one():
    orders = np.array([1.5, 2.0, 10.0, 100.0])
    np.testing.assert_allclose(gaussian_rdp(2.0, orders), orders / 8.0)
    np.testing.assert_allclose(gaussian_rdp(np.array([1.0, 2.0]), orders)[1], orders / 8.0)
    curve = subsampled_gaussian_rdp(1.0, 2.0, orders, steps=3)
    np.testing.assert_allclose(curve.rdp, 3 * orders / 8.0, rtol=3e-15)
    assert np.all(curve.rdp >= 3 * orders / 8.0)  # exact in binary here: the value is an upper bound
    assert curve.dropped == ()


def test_tiny_sigma_dominant_term_closed_form():
    # for tiny sigma, log A = alpha log q + (alpha^2 - alpha)/(2 sigma^2) up to e^-60
    q, s = 0.01, 0.01
    orders = np.array([2.0, 5.0, 1.5, 33.0])
    expected = (orders * math.log(q) + (orders**2 - orders) / (2 * s * s)) / (orders - 1)
    np.testing.assert_allclose(subsampled_gaussian_rdp(q, s, orders).rdp, expected, rtol=1e-14)


def test_constant_schedule_grouping_and_steps_api():
    orders = np.array([2.0, 3.5, 16.0])
    a = subsampled_gaussian_rdp(0.03, np.full(50, 1.3), orders)
    b = subsampled_gaussian_rdp(0.03, 1.3, orders, steps=50)
    np.testing.assert_allclose(a.rdp, b.rdp, rtol=1e-13)
    z = np.array([1.0, 2.0, 1.0, 0.5])
    per_step = subsampled_gaussian_rdp_steps(0.03, z, orders)
    assert per_step.shape == (4, 3)
    np.testing.assert_array_equal(per_step[0], per_step[2])
    np.testing.assert_allclose(per_step.sum(axis=0), subsampled_gaussian_rdp(0.03, z, orders).rdp, rtol=1e-13)


def test_rdp_increases_with_q_and_decreases_with_sigma():
    orders = DEFAULT_ORDERS
    lo_q = subsampled_gaussian_rdp(0.01, 1.0, orders).rdp
    hi_q = subsampled_gaussian_rdp(0.02, 1.0, orders).rdp
    more_noise = subsampled_gaussian_rdp(0.01, 1.2, orders).rdp
    fin = np.isfinite(lo_q) & np.isfinite(hi_q) & np.isfinite(more_noise)
    assert np.all(hi_q[fin] > lo_q[fin])
    assert np.all(more_noise[fin] < lo_q[fin])


def test_overflow_is_dropped_with_reason():
    curve = subsampled_gaussian_rdp(0.1, 1e-160, [2.0, 3.5])
    assert {o for o, _ in curve.dropped} == {2.0, 3.5}
    assert all("overflow" in why for _, why in curve.dropped)
    assert np.all(np.isinf(curve.rdp))


def test_nonconverging_series_falls_back_to_the_order_chord(monkeypatch):
    # log A is convex in alpha and 0 at alpha = 1: for alpha in (1, 2), D_alpha <= D_2.
    monkeypatch.setattr(_rdp_evaluate, "_FRAC_MAX_TERMS", 8)
    curve = subsampled_gaussian_rdp(0.5, 1.0, [1.1, 2.0])
    assert curve.dropped == ()
    assert curve.rdp[0] == pytest.approx(curve.rdp[1], rel=1e-15)
    # and when the chord is unusable too (its integer order overflows), the order is dropped
    # every caller reaches it through _frac_chord (cached_log_a_int reads it there)
    monkeypatch.setattr(_frac_chord, "log_a_int_precise", lambda *a, **k: np.full(a[4].size, np.inf))
    curve = subsampled_gaussian_rdp(0.5, 1.0, [1.1])
    assert 1.1 in dict(curve.dropped) and "did not converge" in dict(curve.dropped)[1.1]
    assert math.isinf(curve.rdp[0])


def test_rdp_curve_composition():
    o = np.array([2.0, 4.0])
    a = RdpCurve(o, [1.0, 2.0])
    b = RdpCurve(o, [0.5, np.inf], ((4.0, "overflow"),))
    c = a + b
    np.testing.assert_array_equal(c.rdp, [1.5, np.inf])
    assert c.dropped == ((4.0, "overflow"),)
    np.testing.assert_array_equal(a.scaled(3).rdp, [3.0, 6.0])
    np.testing.assert_array_equal(RdpCurve.zeros(o).rdp, [0.0, 0.0])
    with pytest.raises(ValueError):
        a + RdpCurve(np.array([2.0, 5.0]), [1.0, 1.0])
    # a non-finite value is never silent: it is listed as dropped
    d = RdpCurve(o, [np.nan, 1.0])
    assert d.dropped and d.dropped[0][0] == 2.0 and np.isinf(d.rdp[0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sample_rate": 0.0, "noise_multiplier": 1.0},
        {"sample_rate": 1.5, "noise_multiplier": 1.0},
        {"sample_rate": 0.1, "noise_multiplier": -1.0},
        {"sample_rate": 0.1, "noise_multiplier": float("nan")},
        {"sample_rate": np.array([0.1, 0.2]), "noise_multiplier": np.array([1.0, 1.0, 1.0])},
    ],
)
def test_bad_input(kwargs):
    with pytest.raises(InvalidParameter):
        subsampled_gaussian_rdp(orders=[2.0], **kwargs)


def test_bad_orders_and_steps():
    with pytest.raises(InvalidParameter, match="--orders"):
        subsampled_gaussian_rdp(0.1, 1.0, [1.0])
    with pytest.raises(InvalidParameter, match="--steps"):
        subsampled_gaussian_rdp(0.1, np.array([1.0, 2.0]), [2.0], steps=3)


def test_default_orders_superset_and_parse():
    assert set(DP_ACCOUNTING_ORDERS.tolist()) <= set(DEFAULT_ORDERS.tolist())
    assert set(dp_rdp.DEFAULT_RDP_ORDERS) <= set(DEFAULT_ORDERS.tolist())
    np.testing.assert_array_equal(parse_orders("1.5,2,4-6"), [1.5, 2, 4, 5, 6])
    np.testing.assert_allclose(parse_orders("2-3:0.5"), [2.0, 2.5, 3.0])
    assert parse_orders("default,4096").size == DEFAULT_ORDERS.size + 1
    for bad in ["", "abc", "1", "0.5,2", "5-3", "1.5-3", "2,,3", "nan", "2-3:0"]:
        with pytest.raises(InvalidParameter, match="--orders"):
            parse_orders(bad)


@pytest.mark.slow
def test_long_inv_k_schedule_fast():
    import time

    z = 1.0 / np.sqrt(np.arange(1, 100_001))
    t = time.perf_counter()
    curve = subsampled_gaussian_rdp(0.01, z, DEFAULT_ORDERS)
    assert time.perf_counter() - t < 5.0
    assert np.isfinite(curve.rdp).any()
