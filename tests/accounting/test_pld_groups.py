"""Soundness of the grouped PLD on schedules (``--accountant pld`` for d2p2sgd / d2psgd / dp2sgd).

What is provable, and tested here on small random schedules:

1. Full batch (q = 1) the schedule is a composition of plain Gaussians whose exact epsilon has
   a closed form (:mod:`accounting.gaussian_pld`): the grouped PLD is >= that exact value.
2. Subsampled (q < 1) no closed form exists, but dp-accounting's *optimistic* PLD of the
   un-grouped schedule is a lower bound on its true epsilon (up to truncated tail mass), so the
   grouped PLD (an upper bound) is >= it.  Also >= the un-grouped pessimistic PLD at a fine grid
   minus that grid's own bracket width (pessimistic - optimistic): the truth is in the bracket.
3. The classes rounded *up* give a mechanism the schedule dominates; their optimistic PLD is a
   lower bound too, and the grouped PLD (rounded down, pessimistic) is >= it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("dp_accounting")

from accounting.algorithms.d2p2 import _grouped_pld_epsilon  # noqa: E402
from accounting.events import ComposedEvent, ScheduleEvent, SelfComposedEvent, SubsampledGaussianEvent  # noqa: E402
from accounting.gaussian_pld import gdp_epsilon  # noqa: E402
from accounting.interop import pld_epsilon  # noqa: E402
from accounting.schedules import noise_classes  # noqa: E402

DELTA = 1e-5

schedules = st.lists(st.floats(1.0, 12.0), min_size=2, max_size=24).map(np.array)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(z=schedules, max_classes=st.integers(1, 6), log_delta=st.floats(-10.0, -3.0))
def test_full_batch_grouped_pld_above_exact(z, max_classes, log_delta) -> None:
    delta = 10.0**log_delta
    counts = np.ones(z.size, dtype=np.int64)
    grouped = _grouped_pld_epsilon(1.0, z, counts, delta, max_classes=max_classes).epsilon
    exact = gdp_epsilon(math.sqrt(float(np.sum(z**-2.0))), delta)
    assert grouped >= exact


BRACKET_CASES = dict(
    z=st.lists(st.floats(0.8, 6.0), min_size=2, max_size=10).map(np.array),
    q=st.floats(0.005, 0.6),
    max_classes=st.integers(1, 4),
)


# Each example costs three dp-accounting PLD compositions of up to 10 distinct steps (about half a
# second): 3 in the default run, the full 6 behind slow.
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**BRACKET_CASES)
def test_subsampled_grouped_pld_above_ungrouped_bracket(z, q, max_classes) -> None:
    _check_grouped_above_ungrouped_bracket(z, q, max_classes)


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**BRACKET_CASES)
def test_subsampled_grouped_pld_above_ungrouped_bracket_more_examples(z, q, max_classes) -> None:
    _check_grouped_above_ungrouped_bracket(z, q, max_classes)


def _check_grouped_above_ungrouped_bracket(z: np.ndarray, q: float, max_classes: int) -> None:
    counts = np.ones(z.size, dtype=np.int64)
    grouped = _grouped_pld_epsilon(q, z, counts, DELTA, max_classes=max_classes).epsilon
    event = ScheduleEvent(q, tuple(z.tolist()))
    vdi = 1e-3
    optimistic = pld_epsilon(event, DELTA, value_discretization_interval=vdi, pessimistic=False)
    pessimistic = pld_epsilon(event, DELTA, value_discretization_interval=vdi)
    assert optimistic <= pessimistic
    assert grouped >= optimistic
    assert grouped >= pessimistic - (pessimistic - optimistic)  # the bracket's lower end, stated


# slow (0.1-6 s an example: two PLD compositions of the classes, costly at small noise and many
# steps): the default run keeps the same assertion, grouped PLD >= the optimistic PLD of the classes
# rounded up, on the real D2P2 defaults in test_d2p2_defaults_pld_between_lower_bound_and_rdp.
@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.sampled_from(["inv-sqrt-k", "inv-k", "constant"]),
    base=st.floats(1.5, 8.0),
    steps=st.integers(20, 120),
    q=st.floats(0.005, 0.5),
)
def test_grouped_pld_above_classes_rounded_up(shape, base, steps, q) -> None:
    from accounting.schedules import noise_multipliers

    z = np.asarray(noise_multipliers(shape, base, steps), dtype=float)
    counts = np.ones(z.size, dtype=np.int64)
    grouped = _grouped_pld_epsilon(q, z, counts, DELTA).epsilon
    up, cnt, _ = noise_classes(z, counts, rounding="up")
    down, cnt_down, _ = noise_classes(z, counts)
    assert np.array_equal(cnt, cnt_down) and np.all(up >= down)
    lower = _rounded_up_lower_bound(q, z, counts, 3e-3)
    assert grouped >= lower


def test_noise_classes_rounding() -> None:
    z = np.array([1.0, 1.01, 2.0, 2.1, 4.0])
    c = np.array([1, 2, 3, 4, 5])
    down, cd, r = noise_classes(z, c, max_classes=2)
    up, cu, _ = noise_classes(z, c, max_classes=2, rounding="up")
    assert r == pytest.approx(2.0) and cd.sum() == c.sum() and np.array_equal(cd, cu)
    assert down.tolist() == [1.0, 2.0] and up.tolist() == [1.01, 4.0]
    with pytest.raises(ValueError):
        noise_classes(z, c, rounding="nearest")


def _rounded_up_lower_bound(q: float, z: np.ndarray, counts: np.ndarray, vdi: float) -> float:
    """Optimistic PLD of the classes rounded up: a lower bound on the schedule's true epsilon."""
    up, cnt, _ = noise_classes(z, counts, rounding="up")
    event = ComposedEvent(
        tuple(
            SelfComposedEvent(SubsampledGaussianEvent(q, float(v)), int(c))
            for v, c in zip(up, cnt, strict=True)
        )
    )
    return pld_epsilon(event, DELTA, value_discretization_interval=vdi, pessimistic=False)


def test_d2p2_defaults_pld_between_lower_bound_and_rdp() -> None:
    """Issue 11 target: ``--accountant pld`` on the D2P2 defaults in < 10 s, with epsilon between an
    optimistic PLD (a lower bound on the truth) and the exact RDP value."""
    import time

    from accounting.algorithms.registry import get_algorithm
    from dptheory import api

    kw = dict(algo="d2psgd", noise_multiplier=3.0, delta=DELTA, defaults="paper")
    t0 = time.process_time()
    pld = api.epsilon(accountant="pld", **kw)
    cpu = time.process_time() - t0
    rdp = api.epsilon(**kw)
    alg = get_algorithm("d2psgd")
    p, _, _ = alg.resolve(api.build_params(algo="d2psgd", delta=DELTA, noise_multiplier=3.0))
    z, counts = alg.multiplier_blocks(p)
    lower = _rounded_up_lower_bound(p.sample_rate, z, counts, 1e-3)
    assert lower <= pld.epsilon <= rdp.epsilon
    assert cpu < 10.0
    assert any("value discretization" in a and "rounded down" in a for a in pld.assumptions)
