"""Closed-form PLD of plain-Gaussian compositions (accounting/gaussian_pld.py): it is sandwiched by
dp-accounting's optimistic and pessimistic PLDs, satisfies its own delta, and the clip21sgd2m
``--accountant pld`` path uses it and is fast."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from accounting.events import ComposedEvent, GaussianEvent, SelfComposedEvent, SubsampledGaussianEvent
from accounting.gaussian_pld import gaussian_mu, gdp_delta, gdp_epsilon
from accounting.gdp_curve import gdp_delta_lower
from accounting.interop import PLD_DELTA_SLACK, pld_epsilon

pytest.importorskip("dp_accounting")


@settings(max_examples=20, deadline=None)
@given(
    z=st.floats(0.5, 20.0),
    sens=st.sampled_from([1.0, 2.0]),
    count=st.integers(1, 400),
    log_delta=st.floats(-12.0, -2.0),
)
def test_closed_form_between_optimistic_and_pessimistic_pld(z, sens, count, log_delta) -> None:
    """dp-accounting's pessimistic PLD bounds the true epsilon from above, the optimistic one from
    below (up to truncation); the exact value lies between."""
    delta = 10.0**log_delta
    event = SelfComposedEvent(GaussianEvent(z, sens), count)
    mu = gaussian_mu(event)
    assert mu == pytest.approx(sens * math.sqrt(count) / z, rel=1e-12)
    assume(mu <= 8.0)  # dp-accounting's grid holds ~mu^2 / vdi points: keep each example < 1 s
    exact = gdp_epsilon(mu, delta)
    vdi = 1e-2
    hi = pld_epsilon(event, delta, value_discretization_interval=vdi)
    lo = pld_epsilon(event, delta, value_discretization_interval=vdi, pessimistic=False)
    assert lo - 1e-9 <= exact <= hi + 1e-9
    # and it is the limit the PLD converges to (read at delta - PLD_DELTA_SLACK, as pld_epsilon is)
    assert hi - gdp_epsilon(mu, delta - PLD_DELTA_SLACK) <= 2 * vdi + 1e-6 * hi


@settings(max_examples=60, deadline=None)
@given(log_mu=st.floats(-12.0, 9.0), log_delta=st.floats(-300.0, math.log10(0.99)))
@example(log_mu=-6.0, log_delta=-10.0)  # the two terms nearly cancel: the rounding guard shows
@example(log_mu=math.log10(2e8), log_delta=-5.0)  # F3 of the review: exp overflow in the guard
@example(log_mu=math.log10(6.32e-11), log_delta=-300.0)  # F1: tiny mu and delta
def test_epsilon_satisfies_delta_and_is_tight(log_mu, log_delta) -> None:
    """The upper estimate of delta holds at eps, and the certified *lower* estimate exceeds delta
    just below it, so the true epsilon is within 1e-6 relative
    (tests/accounting/test_gdp_against_mpmath.py checks both estimates against an independent mpmath
    reference)."""
    mu, delta = 10.0**log_mu, 10.0**log_delta
    eps = gdp_epsilon(mu, delta)
    assert 0 <= eps < math.inf
    assert gdp_delta(mu, eps, upper=True) <= delta
    if eps > 0:
        assert gdp_delta_lower(mu, eps * (1 - 1e-6)) > delta


def test_known_values() -> None:
    # 1-GDP at delta = Phi(-eps + 1/2) - e^eps Phi(-eps - 1/2); eps = 0 gives 2 Phi(1/2) - 1
    assert gdp_delta(1.0, 0.0) == pytest.approx(math.erf(0.5 / math.sqrt(2)), rel=1e-14)
    assert gdp_epsilon(1.0, gdp_delta(1.0, 0.0) * 1.0001) == 0.0
    # monotone in mu and in delta
    assert gdp_epsilon(2.0, 1e-5) > gdp_epsilon(1.0, 1e-5) > gdp_epsilon(1.0, 1e-3)
    assert gdp_epsilon(math.inf, 1e-5) == math.inf


def test_mu_of_compositions() -> None:
    ev = ComposedEvent(
        (SelfComposedEvent(GaussianEvent(2.0), 3), SubsampledGaussianEvent(1.0, 4.0), GaussianEvent(1.0, 2.0))
    )
    assert gaussian_mu(ev) == pytest.approx(math.sqrt(3 / 4 + 1 / 16 + 4), rel=1e-13)
    assert gaussian_mu(SubsampledGaussianEvent(0.5, 4.0)) is None  # subsampled: no closed form
    assert gaussian_mu(ComposedEvent((GaussianEvent(1.0), SubsampledGaussianEvent(0.5, 4.0)))) is None


def test_clip21_pld_fast_and_below_rdp() -> None:
    """Issue 11: clip21sgd2m --accountant pld took 57 s at the defaults (z = 3, T = 1000)."""
    from dptheory import api

    kw = dict(algo="clip21sgd2m", noise_multiplier=3.0, delta=1e-5, rounds=1000)
    t0 = time.process_time()
    pld = api.epsilon(accountant="pld", **kw)
    cpu = time.process_time() - t0
    rdp = api.epsilon(**kw)
    assert cpu < 2.0
    assert pld.epsilon <= rdp.epsilon
    # dp-accounting's pessimistic PLD (grid 1e-2, cheap here) bounds it from above
    hi = pld_epsilon(
        SelfComposedEvent(GaussianEvent(3.0, 2.0), 1000), 1e-5, value_discretization_interval=1e-2
    )
    assert pld.epsilon <= hi
    assert any("closed form" in a for a in pld.assumptions)
