"""dp-accounting interop: PLD epsilon (pessimistic/optimistic), RDP cross-check, errors."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from scipy import optimize, stats

from accounting.conversion import rdp_to_epsilon
from accounting.errors import InvalidParameter
from accounting.events import (
    ComposedEvent,
    GaussianEvent,
    RdpCurveEvent,
    ScheduleEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
)
from accounting.interop import dp_accounting_rdp_epsilon, pld_epsilon, to_dp_event
from accounting.orders import DEFAULT_ORDERS


def _exact_gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon of the Gaussian mechanism with sensitivity/std = mu (Balle & Wang 2018)."""

    def gap(eps: float) -> float:
        return stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu) - delta

    return optimize.brentq(gap, 0.0, 100.0, xtol=1e-12)


@pytest.mark.parametrize("z, count", [(1.0, 1), (2.0, 4), (5.0, 1)])
def test_pld_brackets_exact_gaussian_epsilon(z, count):
    """Pessimistic PLD >= exact >= optimistic PLD, and both are close to the exact value."""
    delta = 1e-5
    ev = SelfComposedEvent(GaussianEvent(z), count) if count > 1 else GaussianEvent(z)
    exact = _exact_gaussian_epsilon(math.sqrt(count) / z, delta)
    hi = pld_epsilon(ev, delta)
    lo = pld_epsilon(ev, delta, pessimistic=False)
    assert lo <= exact + 1e-9 <= hi + 2e-9
    assert hi - lo < 1e-2
    # RDP is an upper bound on the exact epsilon too
    assert rdp_to_epsilon(ev.rdp(DEFAULT_ORDERS), delta).epsilon >= exact


def test_pld_pessimistic_upper_bounds_optimistic_for_schedule():
    ev = ScheduleEvent((0.05, 0.05, 0.1), (1.0, 1.5, 2.0))
    hi = pld_epsilon(ev, 1e-5, value_discretization_interval=1e-3)
    lo = pld_epsilon(ev, 1e-5, value_discretization_interval=1e-3, pessimistic=False)
    assert lo <= hi
    assert hi <= rdp_to_epsilon(ev.rdp(DEFAULT_ORDERS), 1e-5).epsilon


def test_to_dp_event_structure():
    import dp_accounting

    e = to_dp_event(
        ComposedEvent((SelfComposedEvent(SubsampledGaussianEvent(0.1, 1.0), 3), GaussianEvent(2.0, 2.0)))
    )
    assert isinstance(e, dp_accounting.ComposedDpEvent)
    sc, g = e.events
    assert sc == dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.0)), 3
    )
    assert g == dp_accounting.GaussianDpEvent(1.0)
    with pytest.raises(NotImplementedError):
        to_dp_event(object())


def test_unsupported_mechanism_is_a_clear_accountant_error():
    ev = RdpCurveEvent(GaussianEvent(1.0).rdp(DEFAULT_ORDERS), "hidden-state")
    with pytest.raises(InvalidParameter) as info:
        pld_epsilon(ev, 1e-5)
    assert info.value.option == "--accountant" and "hidden-state" in info.value.message
    with pytest.raises(InvalidParameter) as info:
        dp_accounting_rdp_epsilon(ev, 1e-5)
    assert info.value.option == "--accountant"


def test_bad_delta():
    with pytest.raises(InvalidParameter) as info:
        pld_epsilon(GaussianEvent(1.0), 0.0)
    assert info.value.option == "--delta"


def test_missing_dp_accounting_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "dp_accounting", None)  # makes `import dp_accounting` fail
    with pytest.raises(InvalidParameter) as info:
        pld_epsilon(GaussianEvent(1.0), 1e-5)
    assert info.value.option == "--accountant" and "dp-accounting" in info.value.message


def test_rdp_cross_check_default_grid():
    ev = SelfComposedEvent(SubsampledGaussianEvent(0.01, 1.0), 1000)
    theirs = dp_accounting_rdp_epsilon(ev, 1e-5)
    ours = rdp_to_epsilon(ev.rdp(DEFAULT_ORDERS), 1e-5).epsilon
    # our default grid is a superset of dp-accounting's, so we can only be tighter (or equal)
    assert ours <= theirs * (1 + 1e-9)
    assert np.isfinite(ours)
