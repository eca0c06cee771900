"""Regression tests for the review of the GDP fast paths (accounting/gdp_curve.py, gaussian_pld.py,
audit/stats.py): the certified epsilon is >= and the audit epsilon <= an independent mpmath
reference over mu in [1e-12, 1e9] and delta in [1e-300, 0.99]; the reviewer's reproducers; and
the accountant's grid rule (accounting/step_groups.py) against exact evaluation."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from accounting import step_groups
from accounting.accountant import RdpAccountant
from accounting.algorithms.base import pld_event_epsilon
from accounting.audit.clip21 import clip21_epsilon_lower
from accounting.audit.stats import gaussian_epsilon
from accounting.events import ComposedEvent, GaussianEvent, SelfComposedEvent, SubsampledGaussianEvent
from accounting.gaussian_pld import gaussian_mu, gdp_delta, gdp_epsilon
from accounting.gdp_curve import gdp_delta_bounds
from accounting.step_groups import GRID_MAX_LEVEL

MP_DPS = 80  # exact_mu; exact_delta adds the digits the cancellation of its two terms needs


def exact_delta(mu: float, eps: float) -> mp.mpf:
    """Balle & Wang's delta(eps) of mu-GDP in multi-precision arithmetic (independent of scipy).

    The two terms agree to about ``-log10(mu)`` digits when ``mu`` is small: 80 more digits."""
    with mp.workdps(MP_DPS + max(0, int(-math.log10(mu)))):
        m, e = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)


def exact_mu(pairs: list[tuple[int, float, float]]) -> mp.mpf:
    """sqrt(sum count (sens / z)^2) in 80-digit arithmetic."""
    with mp.workdps(MP_DPS):
        return mp.sqrt(mp.fsum(c * (mp.mpf(s) / mp.mpf(z)) ** 2 for c, s, z in pairs))


MUS = [1e-12, 3e-11, 1e-9, 1e-6, 1e-4, 1e-2, 0.3, 1.0, 5.0, 40.0, 1e3, 1e5, 1e7, 1e9]
DELTAS = [1e-300, 1e-200, 1e-100, 1e-30, 1e-10, 1e-5, 0.01, 0.3, 0.7, 0.99]


@pytest.mark.parametrize("mu", MUS)
def test_certified_above_and_audit_below_mpmath_reference(mu: float) -> None:
    for delta in DELTAS:
        up = gdp_epsilon(mu, delta)
        low = gaussian_epsilon(delta, mu)
        assert 0.0 <= low <= up < math.inf, (mu, delta, low, up)
        assert exact_delta(mu, up) <= delta, (mu, delta, up)  # F1's mirror: certified is >= truth
        if low > 0:
            assert exact_delta(mu, low) >= delta, (mu, delta, low)  # F1: the audit is <= truth
        if exact_delta(mu, 0.0) > delta * (1 + 1e-6):  # truth clearly positive: both are tight
            assert low > 0, (mu, delta)
            assert up - low <= 1e-6 * up, (mu, delta, low, up)


def test_bounds_bracket_the_reference_where_the_terms_cancel() -> None:
    # tiny mu and delta: the two terms of delta(eps) agree to ~12 digits (the F1 regime)
    for mu, eps in [(6.324555320336759e-11, 2.2964e-09), (1e-12, 3.6195e-11), (1e-4, 0.0019), (2e8, 2e16)]:
        lo, hi = gdp_delta_bounds(mu, eps)
        ref = exact_delta(mu, eps)
        assert lo <= ref <= hi
        assert hi - lo <= 1e-5 * ref  # width ~ eps relative where the terms cancel


def test_f1_audit_of_clip21_tiny_mu_tiny_delta_is_below_truth() -> None:
    e = clip21_epsilon_lower(1e11, 10, 1e-300)
    assert e > 0 and exact_delta(2 * math.sqrt(10) / 1e11, e) >= 1e-300
    assert e == pytest.approx(2.29641e-09, rel=1e-5, abs=0)


def test_f2_audit_never_negative() -> None:
    for z, rounds in [(1e14, 1), (1e16, 1), (1e100, 3)]:
        assert clip21_epsilon_lower(z, rounds, 1e-300) >= 0.0
    assert gaussian_epsilon(1e-300, 1e-300) >= 0.0


@pytest.mark.parametrize(
    "event", [SelfComposedEvent(GaussianEvent(1e-8, 2.0), 1), SubsampledGaussianEvent(1.0, 1e-8)]
)
def test_f3_huge_mu_has_no_overflow(event) -> None:
    mu = gaussian_mu(event)
    eps = pld_event_epsilon(event, 1e-5).epsilon
    assert math.isfinite(eps) and eps >= mu * mu / 2
    assert gdp_delta(mu, eps, upper=True) <= 1e-5


def test_f4_mu_of_extreme_noise_multipliers() -> None:
    # z = 1e-160: (2/z)^2 overflows a float, mu itself does not
    assert gaussian_mu(GaussianEvent(1e-160, 2.0)) == pytest.approx(2e160, rel=1e-14)
    assert pld_event_epsilon(GaussianEvent(1e-160, 2.0), 1e-5).epsilon == math.inf  # ~2e320
    # z = 1e170: the square underflows to 0, mu must not
    event = SelfComposedEvent(GaussianEvent(1e170, 2.0), 10)
    mu = gaussian_mu(event)
    assert mu >= float(exact_mu([(10, 2.0, 1e170)]))
    eps = pld_event_epsilon(event, 1e-300).epsilon
    assert eps > 0 and exact_delta(mu, eps) <= 1e-300
    # the truth (500-digit bisection) is 1.53331058809e-168; the review's "~2.3e-168" was the
    # loose value of the old rounding guard
    assert eps == pytest.approx(1.53331058809e-168, rel=1e-9, abs=0)
    # a quotient that underflows still gives a positive mu
    assert gaussian_mu(GaussianEvent(1e300, 1e-300)) > 0


def test_f5_mu_is_rounded_up_against_an_exact_sum() -> None:
    pairs = [(1, 1.0, 3.0), (7, 2.0, 0.7), (1000, 1.0, 1.1), (3, 0.1, 1e-3), (1, 1.0, 1e20)]
    event = ComposedEvent(tuple(SelfComposedEvent(GaussianEvent(z, s), c) for c, s, z in pairs))
    mu = gaussian_mu(event)
    ref = exact_mu(pairs)
    assert mu >= ref
    assert mu <= ref * (1 + 1e-14)


# --- F6: the accountant's grid rule --------------------------------------------------------


def _eps(evaluation: str, sigmas: np.ndarray, q: float) -> tuple[float, RdpAccountant]:
    acc = RdpAccountant(evaluation=evaluation)
    for s in sigmas:
        acc.step(noise_multiplier=float(s), sample_rate=q)
    return acc.get_epsilon(1e-5), acc


def test_f6_grid_rule_stays_close_to_exact_on_a_narrow_sigma_range() -> None:
    # the reviewer's worst ordinary case: 504 steps over a 15% sigma range (9 grid points at 1.02)
    sigmas = np.linspace(0.417, 0.364, 504)
    auto, acc = _eps("auto", sigmas, 0.035)
    exact, _ = _eps("exact", sigmas, 0.035)
    assert acc.rdp_curve().bounded  # the grid is in use
    assert exact <= auto <= exact * 1.005  # was +2.3% under one fixed ratio


@pytest.mark.parametrize("written_level, read_level", [(0, GRID_MAX_LEVEL), (GRID_MAX_LEVEL, 0)])
def test_f6_checkpoint_of_another_grid_rule_restores_soundly(monkeypatch, written_level, read_level) -> None:
    """A state written under the one-ratio rule (max level 0) restores under the new rule (its
    total is above the new bound: kept), and one written under a finer rule restores under a
    coarser one (below the bound: accepted by the exact check).  Never below exact."""
    sigmas = np.linspace(0.417, 0.364, 504)
    monkeypatch.setattr(step_groups, "GRID_MAX_LEVEL", written_level)
    written, acc = _eps("auto", sigmas, 0.035)
    state = acc.state_dict()
    monkeypatch.setattr(step_groups, "GRID_MAX_LEVEL", read_level)
    restored = RdpAccountant.from_state_dict(state).get_epsilon(1e-5)
    exact, _ = _eps("exact", sigmas, 0.035)
    fresh, _ = _eps("auto", sigmas, 0.035)
    assert restored >= exact
    assert restored == pytest.approx(max(written, fresh), rel=1e-9)


@pytest.mark.parametrize("mu", [1e-50, 6.3e-170, 1e-300])
def test_far_below_the_domain_both_sides_stay_sound_and_tight(mu: float) -> None:
    for delta in [1e-300, 1e-5, 0.5]:
        up, low = gdp_epsilon(mu, delta), gaussian_epsilon(delta, mu)
        assert 0.0 <= low <= up
        assert exact_delta(mu, up) <= delta
        assert low == 0.0 or exact_delta(mu, low) >= delta
        assert up - low <= 1e-6 * up
