"""Soundness at the extremes of the documented envelope (issue: spurious zero RDP at huge noise).

When q / sigma is tiny, A_alpha = 1 + O(q^2 / sigma^2) and a plain log-sum-exp rounds A to 1,
i.e. the RDP to 0 -- for any number of steps.  These tests hold our values against 60-digit
quadrature and our epsilon against a rigorous lower bound (the sum test of
``accounting.audit.sum_test``) across the envelope, corners included.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounting import _log_a_int
from accounting.audit.sum_test import sum_test_epsilon_lower
from accounting.calibration import calibrate_decreasing
from accounting.conversion import rdp_to_epsilon
from accounting.orders import DEFAULT_ORDERS
from accounting.rdp import subsampled_gaussian_rdp

mp = pytest.importorskip("mpmath")


def exact_log_a(q: float, sigma: float, alpha: float) -> float:
    """log A_alpha by 60-digit quadrature of E_N(0,sigma)[((1-q) + q e^((2z-1)/(2 sigma^2)))^alpha] - 1."""
    with mp.workdps(60):
        qq, ss, aa = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)

        def f(z):
            return mp.npdf(z, 0, ss) * (((1 - qq) + qq * mp.exp((2 * z - 1) / (2 * ss * ss))) ** aa - 1)

        pts = [-mp.inf, -20 * ss, -5 * ss, 0, mp.mpf(1) / 2, 1, 5 * ss + 1, 20 * ss + 1, mp.inf]
        return float(mp.log1p(mp.quad(f, pts)))


@pytest.mark.parametrize(
    "q,sigma",
    [
        (0.3, 38745322.0),
        (1e-9, 1.0),
        (1e-9, 1e4),  # the most cancellation: A - 1 ~ (q alpha / sigma)^2 ~ 1e-26
        # slow: between default cases of the same q, on the same log(A - 1) path (A - 1 < 1e-2 at
        # all four orders)
        pytest.param(1e-6, 30.0, marks=pytest.mark.slow),
        pytest.param(0.3, 1e4, marks=pytest.mark.slow),
        (0.999, 1e4),
        (1e-4, 0.5),
    ],
)
def test_integer_orders_have_full_relative_precision(q, sigma):
    orders = np.array([2.0, 3.0, 7.0, 32.0])
    ours = subsampled_gaussian_rdp(q, sigma, orders).rdp * (orders - 1)
    exact = np.array([exact_log_a(q, sigma, a) for a in orders])
    assert np.all(ours > 0)
    np.testing.assert_allclose(ours, exact, rtol=1e-9)
    assert np.all(ours >= exact * (1 - 1e-12))


@pytest.mark.parametrize(
    "q,sigma,alpha",
    [
        (1e-9, 1000.0, 1.1),  # the raw series is negative here
        (1e-9, 30.0, 2.5),
        (1e-6, 1000.0, 2.5),
        (1e-6, 1.0, 2.5),
        (0.3, 1e4, 1.1),
        (0.01, 3.0, 1.1),
        (0.01, 1000.0, 5.5),
        (0.3, 1.0, 1.5),
    ],
)
def test_fractional_orders_never_undercut_quadrature(q, sigma, alpha):
    ours = float(subsampled_gaussian_rdp(q, sigma, [alpha]).rdp[0]) * (alpha - 1)
    exact = exact_log_a(q, sigma, alpha)
    assert ours >= exact * (1 - 1e-12) and ours > 0


def test_fractional_chord_tightens_large_noise():
    # q = 0.3, sigma = 1e4, alpha = 1.1: the absolute-value series gives 1.85e-2; the truth is 4.95e-10.
    rdp = float(subsampled_gaussian_rdp(0.3, 1e4, [1.1]).rdp[0])
    assert 4.9e-10 <= rdp <= 1e-9


def test_issue_reproducer_is_no_longer_zero():
    curve = subsampled_gaussian_rdp(0.3, 38745322.0, DEFAULT_ORDERS, steps=10**9)
    eps = rdp_to_epsilon(curve, 1e-100).epsilon
    lower = sum_test_epsilon_lower(0.3, 38745322.0, 10**9, 1e-100)
    assert lower > 0.005 and eps >= lower


def test_calibration_at_the_extreme_meets_the_target_by_the_lower_bound():
    q, steps, delta, target = 0.3, 10**9, 1e-100, 0.2

    def eps(z: float) -> float:
        return rdp_to_epsilon(subsampled_gaussian_rdp(q, z, DEFAULT_ORDERS, steps=steps), delta).epsilon

    z = calibrate_decreasing(eps, target, option="--eps").value
    assert eps(z) <= target
    assert sum_test_epsilon_lower(q, z, steps, delta) <= target


def test_sum_test_is_a_lower_bound_where_exact_pld_is_known():
    from accounting.audit.pld import subsampled_gaussian_epsilon_lower

    for q, z, t in [(0.02, 1.0, 150), (1.0, 2.0, 1), (0.1, 0.8, 40)]:
        pld = subsampled_gaussian_epsilon_lower(q, np.full(t, z), 1e-5)
        assert sum_test_epsilon_lower(q, z, t, 1e-5) <= pld + 1e-9


_ENVELOPE = dict(
    log_q=st.one_of(st.sampled_from([-9.0, 0.0]), st.floats(-9.0, 0.0)),
    log_sigma=st.one_of(st.sampled_from([-1.0, 4.0, 7.6]), st.floats(-1.0, 7.6)),
    log_t=st.one_of(st.sampled_from([0.0, 9.0]), st.floats(0.0, 9.0)),
    log_delta=st.one_of(st.sampled_from([-100.0, -1.0]), st.floats(-100.0, -1.0)),
)


def _check_envelope_case(log_q, log_sigma, log_t, log_delta):
    q, sigma = 10.0**log_q, 10.0**log_sigma
    steps, delta = max(1, int(round(10.0**log_t))), 10.0**log_delta
    eps = rdp_to_epsilon(subsampled_gaussian_rdp(q, sigma, DEFAULT_ORDERS, steps=steps), delta).epsilon
    lower = sum_test_epsilon_lower(q, sigma, steps, delta, thresholds=120)
    assert eps >= lower, (q, sigma, steps, delta, eps, lower)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_ENVELOPE)
def test_envelope_epsilon_never_below_the_sum_test(log_q, log_sigma, log_t, log_delta):
    _check_envelope_case(log_q, log_sigma, log_t, log_delta)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_ENVELOPE)
def test_envelope_epsilon_never_below_the_sum_test_long(log_q, log_sigma, log_t, log_delta):
    _check_envelope_case(log_q, log_sigma, log_t, log_delta)


def test_no_spurious_zero_anywhere_on_a_grid():
    """Every per-step RDP is > 0 for q > 0 (a Renyi divergence between distinct distributions)."""
    for q in (1e-9, 1e-5, 0.3, 1.0):
        for sigma in (0.1, 1.0, 1e4, 1e8):
            r = subsampled_gaussian_rdp(q, sigma, DEFAULT_ORDERS).rdp
            assert np.all(r > 0), (q, sigma)
            assert not math.isnan(float(r.sum()))


def test_precise_path_threshold_is_continuous(monkeypatch):
    """Rows just above and below the recompute threshold agree (the two sums are the same A)."""
    orders = np.array([2.0, 40.0, 300.0])
    plain = subsampled_gaussian_rdp(0.05, 3.0, orders).rdp
    monkeypatch.setattr(_log_a_int, "_PRECISE_BELOW", math.inf)
    precise = subsampled_gaussian_rdp(0.05, 3.0, orders).rdp
    np.testing.assert_allclose(plain, precise, rtol=1e-12)
