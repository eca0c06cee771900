"""Sandwich for static DP-SGD: optimistic PLD <= our RDP == dp-accounting RDP, and PLD <= RDP.

* dp-accounting's optimistic PLD (privacy loss rounded down) is a lower estimate of the
  true epsilon, so a sound accountant can never be below it;
* the pessimistic PLD is a tight upper bound and RDP a looser one: our RDP epsilon must be at
  least the pessimistic PLD epsilon once the PLD grid is fine compared with epsilon;
* on the orders where dp-accounting's RDP series converges, our RDP epsilon equals its
  epsilon to 1e-9 relative; on its full grid ours can only be smaller (dp-accounting drops
  orders whose series does not converge, we evaluate them).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.conversion import rdp_to_epsilon
from accounting.events import SelfComposedEvent, SubsampledGaussianEvent
from accounting.interop import dp_accounting_rdp_epsilon, pld_epsilon
from accounting.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS


def _dp_accounting_converged_orders(q: float, sigma: float) -> np.ndarray:
    """Orders of dp-accounting's grid where its RDP is finite (it returns inf when its
    fractional-order series fails to converge). Uses a private helper: test-only."""
    from dp_accounting.rdp import rdp_privacy_accountant as rpa

    rdp = rpa._compute_rdp_poisson_subsampled_gaussian(q, sigma, DP_ACCOUNTING_ORDERS)
    return DP_ACCOUNTING_ORDERS[np.isfinite(rdp)]


SANDWICH_CASES = dict(
    q=st.floats(0.001, 0.2),
    sigma=st.floats(0.6, 5.0),
    steps=st.integers(1, 200),
    delta=st.sampled_from([1e-3, 1e-5, 1e-7]),
)


# A few examples in the default run (each costs two dp-accounting PLD compositions, up to a second
# where epsilon is tiny and the PLD grid fine); the full 18 behind slow, below.
@settings(max_examples=5, deadline=None)
@given(**SANDWICH_CASES)
def test_rdp_between_pld_bounds_and_equal_to_dp_accounting(q, sigma, steps, delta):
    _check_sandwich(q, sigma, steps, delta)


@pytest.mark.slow
@settings(max_examples=18, deadline=None)
@given(**SANDWICH_CASES)
def test_rdp_between_pld_bounds_and_equal_to_dp_accounting_more_examples(q, sigma, steps, delta):
    _check_sandwich(q, sigma, steps, delta)


def _check_sandwich(q: float, sigma: float, steps: int, delta: float) -> None:
    event = SelfComposedEvent(SubsampledGaussianEvent(q, sigma), steps)

    grid = _dp_accounting_converged_orders(q, sigma)
    ours_same = rdp_to_epsilon(event.rdp(grid), delta).epsilon
    theirs_same = dp_accounting_rdp_epsilon(event, delta, grid)
    assert abs(ours_same - theirs_same) <= 1e-9 * max(abs(theirs_same), 1e-12)

    theirs = dp_accounting_rdp_epsilon(event, delta)  # dp-accounting's default grid
    ours = rdp_to_epsilon(event.rdp(DEFAULT_ORDERS), delta).epsilon  # superset of it
    assert ours <= theirs * (1 + 1e-9) + 1e-15

    # PLD grid: 1e-3 where epsilon is large (fast), finer where epsilon is tiny, so that the
    # pessimistic rounding error (about steps * interval at worst) stays well below epsilon.
    vdi = float(np.clip(ours / 50, 1e-5, 1e-3))
    optimistic = pld_epsilon(event, delta, value_discretization_interval=vdi, pessimistic=False)
    pessimistic = pld_epsilon(event, delta, value_discretization_interval=vdi)
    assert optimistic <= pessimistic + 1e-12
    assert optimistic <= ours  # soundness: never below a lower estimate of the truth
    assert pessimistic <= ours  # RDP is the looser of the two upper bounds
