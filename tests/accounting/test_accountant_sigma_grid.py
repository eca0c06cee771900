"""The accountant's lazy sigma-grid path: never below the exact history, checkpoints verified.

The grid threshold is lowered (``GRID_MIN_ROWS``) and the order grid kept small so that short
random histories exercise the grid path in milliseconds; the rule itself is unchanged.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import accounting.step_groups as step_groups
from accounting.accountant import RdpAccountant
from accounting.conversion import rdp_to_epsilon
from accounting.errors import InvalidParameter
from accounting.events import GaussianEvent, SelfComposedEvent, SubsampledGaussianEvent
from accounting.rdp import RdpCurve, subsampled_gaussian_rdp

ORDERS = np.array([1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.5, 8.0, 12.0, 16.0, 32.0, 64.0])
DELTAS = (1e-3, 1e-5, 1e-8)
#: room for summation order: the accountant and the reference add the same terms differently
RTOL = 1e-12


@pytest.fixture
def low_grid_threshold(monkeypatch):
    monkeypatch.setattr(step_groups, "GRID_MIN_ROWS", 8)


def exact_reference(steps: dict[tuple[float, float], int], other: RdpCurve) -> RdpCurve:
    """Every distinct step evaluated exactly in one call, plus the non-step events."""
    keys = sorted(steps)
    q = np.array([k[0] for k in keys])
    s = np.array([k[1] for k in keys])
    c = np.array([steps[k] for k in keys], dtype=float)
    return other + subsampled_gaussian_rdp(q, s, ORDERS, counts=c, evaluation="exact")


def decaying(n: int, z0: float = 4.0) -> np.ndarray:
    """A slowly decaying schedule: ``n`` distinct noise values within a factor 1.5."""
    return z0 / (1.0 + 0.5 * np.arange(n) / n)


def assert_not_below(acc: RdpAccountant, ref: RdpCurve) -> None:
    got = acc.rdp_curve().rdp
    assert np.all(got >= ref.rdp * (1 - RTOL)), np.min(got / ref.rdp)
    for d in DELTAS:
        assert acc.get_epsilon(d) >= rdp_to_epsilon(ref, d).epsilon * (1 - RTOL)


history = st.lists(
    st.tuples(
        st.sampled_from([0.003, 0.01, 0.1, 1.0]),  # sample rate
        st.floats(0.6, 6.0),  # noise multiplier at the start of the run
        st.floats(1.0, 1.6),  # decay factor over the run
        st.integers(1, 60),  # distinct noise values in the run
        st.integers(1, 3),  # count of each
        st.booleans(),  # ask for epsilon after the run (a flush)
        st.booleans(),  # compose as events instead of step() calls
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=history, gaussians=st.integers(0, 2))
def test_epsilon_never_below_the_exact_history(low_grid_threshold, runs, gaussians) -> None:
    """Random histories (mixed rates, noise, counts, flush points, events): the curve, epsilon at
    several deltas, and the same after a JSON checkpoint round trip, are >= the exact values."""
    acc = RdpAccountant(ORDERS)
    steps: dict[tuple[float, float], int] = {}
    other = RdpCurve.zeros(ORDERS)
    for q, z0, decay, n, count, flush, as_event in runs:
        for z in np.linspace(z0, z0 / decay, n):
            z = float(z)
            if as_event:
                acc.compose(SelfComposedEvent(SubsampledGaussianEvent(q, z), count))
            else:
                acc.step(noise_multiplier=z, sample_rate=q, count=count)
            steps[(q, z)] = steps.get((q, z), 0) + count
        if flush:
            acc.get_epsilon(1e-5)
    for _ in range(gaussians):
        acc.compose(GaussianEvent(20.0))
        other = other + GaussianEvent(20.0).rdp(ORDERS)
    ref = exact_reference(steps, other)
    event("sigma grid used" if acc.rdp_curve().bounded else "all exact")
    assert_not_below(acc, ref)
    back = RdpAccountant.from_state_dict(json.loads(json.dumps(acc.state_dict(), allow_nan=False)))
    assert_not_below(back, ref)
    for d in DELTAS:
        assert back.get_epsilon(d) == pytest.approx(acc.get_epsilon(d), rel=1e-12)


def _grid_accountant() -> tuple[RdpAccountant, dict[tuple[float, float], int]]:
    acc = RdpAccountant(ORDERS)
    steps = {}
    for i, z in enumerate(decaying(400)):
        acc.step(noise_multiplier=float(z), sample_rate=0.01)
        steps[(0.01, float(z))] = 1
        if i % 50 == 49:
            acc.get_epsilon(1e-5)
    return acc, steps


def test_long_decaying_schedule_uses_the_grid_and_stays_close() -> None:
    """400 distinct steps (default threshold): a certified grid bound, reported in
    ``.bounded``, within 1% of the exact epsilon; ``evaluation="exact"`` matches exactly."""
    acc, steps = _grid_accountant()
    ref = exact_reference(steps, RdpCurve.zeros(ORDERS))
    assert acc.rdp_curve().bounded  # says that a bound was used
    assert_not_below(acc, ref)
    eps, exact_eps = acc.get_epsilon(1e-5), rdp_to_epsilon(ref, 1e-5).epsilon
    assert eps <= exact_eps * 1.01
    exact_acc = RdpAccountant(ORDERS, evaluation="exact")
    for (q, z), n in steps.items():
        exact_acc.step(noise_multiplier=z, sample_rate=q, count=n)
    assert not exact_acc.rdp_curve().bounded
    np.testing.assert_allclose(exact_acc.rdp_curve().rdp, ref.rdp, rtol=1e-12)
    back = RdpAccountant.from_state_dict(exact_acc.state_dict())
    assert back.evaluation == "exact" and back.get_epsilon(1e-5) == exact_acc.get_epsilon(1e-5)


def test_checkpoint_of_a_grid_history_is_verified() -> None:
    acc, steps = _grid_accountant()
    honest = acc.get_epsilon(1e-5)
    sd = acc.state_dict()
    exact4 = exact_reference(steps, RdpCurve.zeros(ORDERS)).rdp[4]
    assert sd["version"] == 2 and sd["evaluation"] == "auto"
    # lowered at one order below the exact history: refused
    bad = copy.deepcopy(sd)
    bad["total"]["rdp"][4] *= 0.99
    with pytest.raises(ValueError, match="inconsistent"):
        RdpAccountant.from_state_dict(bad)
    # lowered below the grid bound but not below the exact history: consistent, and restored
    # at the recomputed bound (never below it)
    between = copy.deepcopy(sd)
    assert between["total"]["rdp"][4] > exact4 * (1 + 1e-8)  # the grid's excess at this order
    between["total"]["rdp"][4] = 0.5 * (between["total"]["rdp"][4] + exact4)
    assert RdpAccountant.from_state_dict(between).get_epsilon(1e-5) == pytest.approx(honest, rel=1e-12)
    # lowered within the rounding tolerance: accepted, but never below the recomputed bound
    slight = copy.deepcopy(sd)
    slight["total"]["rdp"] = [v * (1 - 5e-10) for v in slight["total"]["rdp"]]
    assert RdpAccountant.from_state_dict(slight).get_epsilon(1e-5) >= honest * (1 - 1e-15)
    # raised: kept (it can only raise epsilon), also after further steps
    high = copy.deepcopy(sd)
    high["total"]["rdp"] = [2 * v for v in high["total"]["rdp"]]
    raised = RdpAccountant.from_state_dict(high)
    assert raised.get_epsilon(1e-5) > honest
    np.testing.assert_array_equal(raised.rdp_curve().rdp, np.array(high["total"]["rdp"]))
    before = raised.get_epsilon(1e-5)
    raised.step(noise_multiplier=1.0, sample_rate=0.01)
    assert raised.get_epsilon(1e-5) > before


def test_version_1_checkpoint_with_exact_total_is_read() -> None:
    """A version-1 state (exact total, no rule) of a long history lies below the grid bound; it is
    checked against the exact history, accepted, and restored at max(stored, bound)."""
    acc, steps = _grid_accountant()
    ref = exact_reference(steps, RdpCurve.zeros(ORDERS))
    v1 = acc.state_dict()
    v1["version"] = 1
    del v1["evaluation"]
    v1["total"] = {**v1["total"], "rdp": ref.rdp.tolist(), "bounded": []}
    back = RdpAccountant.from_state_dict(v1)
    assert back.get_epsilon(1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)
    assert back.get_epsilon(1e-5) >= rdp_to_epsilon(ref, 1e-5).epsilon
    tampered = copy.deepcopy(v1)
    tampered["total"]["rdp"][3] *= 0.999
    with pytest.raises(ValueError, match="inconsistent"):
        RdpAccountant.from_state_dict(tampered)


def test_evaluation_is_validated() -> None:
    with pytest.raises(InvalidParameter) as info:
        RdpAccountant(evaluation="grid")
    assert info.value.option == "evaluation"
    sd = RdpAccountant().state_dict()
    with pytest.raises(ValueError, match="evaluation"):
        RdpAccountant.from_state_dict(dict(sd, evaluation="fast"))


def test_epsilon_every_step_uses_an_exact_tail_then_consolidates() -> None:
    """A trainer asking for epsilon after every step of a grid group: the new steps go to an
    exact tail (no re-bounding per step), still never below the exact history; a checkpoint
    folds the tail into the grid bound, and the restore reproduces it."""
    acc, steps = _grid_accountant()
    with_tail = 0
    for z in decaying(40, z0=2.6):
        acc.step(noise_multiplier=float(z), sample_rate=0.01)
        steps[(0.01, float(z))] = steps.get((0.01, float(z)), 0) + 1
        acc.get_epsilon(1e-5)
        with_tail += bool(acc._steps._tails)
        assert_not_below(acc, exact_reference(steps, RdpCurve.zeros(ORDERS)))
    assert with_tail == 40  # the path under test
    sd = acc.state_dict()
    assert not acc._steps._tails
    ref = exact_reference(steps, RdpCurve.zeros(ORDERS))
    assert_not_below(acc, ref)
    back = RdpAccountant.from_state_dict(sd)
    assert back.get_epsilon(1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)
    assert back._carry is None or np.all(back._carry <= 1e-12 * back.rdp_curve().rdp)
