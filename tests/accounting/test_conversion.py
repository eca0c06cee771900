"""RDP -> (eps, delta): agreement with dp-accounting, closed forms, monotonicity, edge warnings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.conversion import EpsilonResult, epsilon_per_order, rdp_to_delta, rdp_to_epsilon
from accounting.errors import InvalidParameter
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS
from accounting.rdp import RdpCurve, subsampled_gaussian_rdp

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.rdp import rdp_privacy_accountant as dp_rdp  # noqa: E402


@settings(max_examples=50, deadline=None)
@given(
    # r >= 1e-6: below that dp-accounting's 0.5*log1p(-exp(-r)) loses digits (ours uses expm1;
    # see test_kl_delta_accurate_for_tiny_rdp)
    rdp=st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 50.0)), min_size=3, max_size=3),
    orders=st.lists(st.floats(1.0, 300.0), min_size=3, max_size=3, unique=True),
    delta=st.floats(1e-12, 0.5),
)
def test_matches_dp_accounting_compute_epsilon_and_delta(rdp, orders, delta):
    curve = RdpCurve(np.array(orders), np.array(rdp))
    ref_eps, ref_order = dp_rdp.compute_epsilon(orders, rdp, delta)
    ours = rdp_to_epsilon(curve, delta)
    if math.isinf(ref_eps):
        assert math.isinf(ours.epsilon)
        return
    assert ours.epsilon == pytest.approx(ref_eps, rel=1e-9, abs=1e-15)
    eps = float(ours.epsilon) + 0.1
    ref_delta, _ = dp_rdp.compute_delta(orders, rdp, eps)
    assert rdp_to_delta(curve, eps) == pytest.approx(ref_delta, rel=1e-9, abs=1e-300)


def test_matches_dp_accounting_get_epsilon_on_mechanism():
    for q, z, steps, delta in [(0.01, 1.0, 1000, 1e-5), (0.02, 0.8, 150, 1e-5), (0.001, 20.0, 100, 1e-6)]:
        acc = dp_rdp.RdpAccountant(list(DP_ACCOUNTING_ORDERS))
        acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps))
        ref, ref_order = acc.get_epsilon_and_optimal_order(delta)
        res = rdp_to_epsilon(subsampled_gaussian_rdp(q, z, DP_ACCOUNTING_ORDERS, steps=steps), delta)
        assert res.epsilon == pytest.approx(ref, rel=1e-9)
        assert res.order == ref_order
        assert res.method == "improved" and res.delta == delta


def test_classic_formula_closed_form():
    orders = np.array([2.0, 8.0, 32.0])
    rdp = np.array([0.1, 0.5, 3.0])
    delta = 1e-5
    expected = rdp + math.log(1 / delta) / (orders - 1)
    res = rdp_to_epsilon(RdpCurve(orders, rdp), delta, method="classic")
    assert res.epsilon == pytest.approx(expected.min(), rel=1e-15)
    assert res.order == orders[np.argmin(expected)]
    np.testing.assert_allclose(epsilon_per_order(orders, rdp, delta, "classic"), expected)
    # classic is never tighter than improved
    assert rdp_to_epsilon(RdpCurve(orders, rdp), delta).epsilon <= res.epsilon
    assert rdp_to_delta(RdpCurve(orders, rdp), 5.0, method="classic") == pytest.approx(
        np.exp((orders - 1) * (rdp - 5.0)).min()
    )


def test_improved_formula_closed_form():
    a, r, d = 10.0, 0.7, 1e-6
    expected = r + math.log1p(-1 / a) - (math.log(d) + math.log(a)) / (a - 1)
    assert rdp_to_epsilon(RdpCurve([a], [r]), d).epsilon == pytest.approx(expected, rel=1e-15)


def test_kl_fallback_and_order_one():
    # order 1 (KL) is usable only through the KL bound: delta >= sqrt(1 - exp(-KL)) -> eps 0
    kl = 0.01
    assert rdp_to_epsilon(RdpCurve([1.0], [kl]), 0.2).epsilon == 0.0
    assert math.isinf(rdp_to_epsilon(RdpCurve([1.0], [kl]), 0.01).epsilon)
    assert rdp_to_delta(RdpCurve([1.0], [kl]), 3.0) == pytest.approx(math.sqrt(1 - math.exp(-kl)))


def test_kl_delta_accurate_for_tiny_rdp():
    # delta <= sqrt(1 - exp(-KL)) computed without cancellation (dp-accounting rounds this down)
    for r in [1e-12, 1e-9, 1e-6]:
        assert rdp_to_delta(RdpCurve([1.0], [r]), 0.5) == pytest.approx(math.sqrt(-math.expm1(-r)), rel=1e-12)


def test_edge_warning():
    # tiny epsilon regime: optimum wants orders beyond the grid -> largest order, warned
    curve = subsampled_gaussian_rdp(0.001, 50.0, DP_ACCOUNTING_ORDERS, steps=10)
    res = rdp_to_epsilon(curve, 1e-5)
    assert res.on_edge and res.order == DP_ACCOUNTING_ORDERS.max()
    assert any("largest" in w for w in res.warnings)
    # usual regime: interior optimum, no warning
    ok = rdp_to_epsilon(subsampled_gaussian_rdp(0.01, 1.0, DEFAULT_ORDERS, steps=1000), 1e-5)
    assert not ok.on_edge and ok.warnings == ()
    assert isinstance(ok, EpsilonResult)


def test_dropped_orders_ignored_and_reported():
    curve = RdpCurve(np.array([2.0, 4.0, 8.0]), np.array([0.1, np.inf, 0.5]), ((4.0, "overflow"),))
    res = rdp_to_epsilon(curve, 1e-5)
    assert math.isfinite(res.epsilon) and res.order != 4.0
    assert any("dropped" in w for w in res.warnings)
    none = RdpCurve(np.array([2.0]), np.array([np.inf]), ((2.0, "overflow"),))
    bad = rdp_to_epsilon(none, 1e-5)
    assert math.isinf(bad.epsilon) and bad.warnings


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, float("nan"), 2.0])
def test_bad_delta(delta):
    with pytest.raises(InvalidParameter, match="--delta"):
        rdp_to_epsilon(RdpCurve([2.0], [0.1]), delta)


def test_bad_method():
    with pytest.raises(InvalidParameter):
        rdp_to_epsilon(RdpCurve([2.0], [0.1]), 1e-5, method="nope")


def _eps(q: float, z: float, steps: int) -> float:
    return rdp_to_epsilon(subsampled_gaussian_rdp(q, z, DEFAULT_ORDERS, steps=steps), 1e-5).epsilon


@settings(max_examples=25, deadline=None)
@given(
    q=st.floats(1e-3, 0.5),
    z=st.floats(0.5, 10.0),
    steps=st.integers(1, 5000),
    bump=st.floats(1.01, 2.0),
)
def test_epsilon_monotone(q, z, steps, bump):
    e = _eps(q, z, steps)
    assert _eps(q, z * bump, steps) <= e  # more noise, less epsilon
    assert _eps(min(1.0, q * bump), z, steps) >= e  # higher rate, more epsilon
    assert _eps(q, z, steps + 1 + int(steps * (bump - 1))) >= e  # more steps, more epsilon
