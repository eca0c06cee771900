"""Noise schedules: closed forms and schedule-file parsing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accounting.errors import InvalidParameter
from accounting.schedules import DEFAULT_RHO, SCHEDULES, noise_multipliers, read_schedule_file


def test_closed_forms():
    s, t = 2.0, 16
    k = np.arange(1, t + 1)
    np.testing.assert_allclose(noise_multipliers("constant", s, t), np.full(t, s))
    np.testing.assert_allclose(noise_multipliers("inv-k", s, t) ** 2, s**2 / k, rtol=1e-14)
    np.testing.assert_allclose(noise_multipliers("inv-sqrt-k", s, t) ** 2, s**2 / np.sqrt(k), rtol=1e-14)
    np.testing.assert_allclose(noise_multipliers("exp", s, t, rho=3.0), s * 3.0 ** (-k / t), rtol=1e-14)
    last = noise_multipliers("exp", s, t)[-1]
    assert last == pytest.approx(s / DEFAULT_RHO)
    assert noise_multipliers("inv-k", s, 4)[3] == pytest.approx(1.0)  # 2/sqrt(4)


def test_all_schedules_shape_and_positive():
    for name in SCHEDULES:
        z = noise_multipliers(name, 1.5, 7)
        assert z.shape == (7,) and np.all(z > 0) and np.all(np.isfinite(z))


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("linear", 1.0, 5), "--schedule"),
        (("constant", 0.0, 5), "--noise-multiplier"),
        (("constant", float("nan"), 5), "--noise-multiplier"),
        (("inv-k", 1.0, 0), "--steps"),
        (("inv-k", 1.0, 2.5), "--steps"),
    ],
)
def test_bad_arguments(args, option):
    with pytest.raises(InvalidParameter, match=option):
        noise_multipliers(*args)


def test_unknown_schedule_lists_choices():
    with pytest.raises(InvalidParameter) as info:
        noise_multipliers("bogus", 1.0, 3)
    assert info.value.option == "--schedule"
    assert all(name in info.value.message for name in SCHEDULES)


def test_exp_bad_rho():
    with pytest.raises(InvalidParameter, match="--rho"):
        noise_multipliers("exp", 1.0, 3, rho=0.0)


def test_read_schedule_file(tmp_path):
    f = tmp_path / "z.txt"
    f.write_text("# noise multipliers\n1.5\n\n  2.0  # second\n3e-1\n")
    np.testing.assert_allclose(read_schedule_file(f), [1.5, 2.0, 0.3])
    np.testing.assert_allclose(read_schedule_file(str(f)), [1.5, 2.0, 0.3])


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("", "no noise multipliers"),
        ("# only a comment\n\n", "no noise multipliers"),
        ("1.0\nabc\n", "line 2"),
        ("1.0\n-2\n", "line 2"),
        ("0\n", "line 1"),
        ("nan\n", "line 1"),
        ("inf\n", "line 1"),
        ("1.0 2.0\n", "line 1"),
    ],
)
def test_read_schedule_file_errors(tmp_path, content, fragment):
    f = tmp_path / "z.txt"
    f.write_text(content)
    with pytest.raises(InvalidParameter, match="--schedule-file") as info:
        read_schedule_file(f)
    assert fragment in info.value.message


def test_unreadable_schedule_file(tmp_path):
    with pytest.raises(InvalidParameter, match="--schedule-file"):
        read_schedule_file(tmp_path / "missing.txt")
    with pytest.raises(InvalidParameter, match="--schedule-file"):
        read_schedule_file(tmp_path)  # a directory
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(InvalidParameter, match="--schedule-file"):
        read_schedule_file(binary)


def test_decreasing_schedules_spend_more_privacy():
    from accounting.conversion import rdp_to_epsilon
    from accounting.rdp import subsampled_gaussian_rdp

    def eps(name):
        z = noise_multipliers(name, 3.0, 200)
        return rdp_to_epsilon(subsampled_gaussian_rdp(0.05, z, [2.0, 4.0, 8.0, 16.0, 32.0]), 1e-5).epsilon

    const, sqrtk, exp_, invk = eps("constant"), eps("inv-sqrt-k"), eps("exp"), eps("inv-k")
    assert const < sqrtk < invk and const < exp_
    assert math.isfinite(invk)


@pytest.mark.parametrize("name", ["inv-k", "inv-sqrt-k", "exp"])
def test_blocked_schedule_rounds_every_step_the_safe_way(name):
    """The soundness half of the test below, which is slow (an exact evaluation of 6000 distinct
    steps): beyond EXACT_STEPS the blocks' noise is rounded down (upper bounds) or up (lower
    bounds) at every single step, and the steps are all counted."""
    from accounting import schedules as sched_mod

    t = 6000
    exact = sched_mod.noise_multipliers(name, 40.0, t)
    down, counts = sched_mod.schedule_blocks(name, 40.0, t, rounding="down", exact_steps=500)
    up, counts_up = sched_mod.schedule_blocks(name, 40.0, t, rounding="up", exact_steps=500)
    assert counts.sum() == t and counts_up.sum() == t and down.size < t / 2
    assert np.all(np.repeat(down, counts) <= exact * (1 + 1e-15))
    assert np.all(np.repeat(up, counts_up) >= exact * (1 - 1e-15))


# slow, every shape: about 8 s a shape for the exact evaluation of 6000 distinct steps. The default run
# keeps the rounding direction of every step (above, all three shapes); the epsilon comparison adds the
# tightness (inv-k has the largest blocked-vs-exact gap of the three, 6.6e-4). Blocks are only used
# beyond EXACT_STEPS = 10^6 steps.
@pytest.mark.slow
@pytest.mark.parametrize("name", ["inv-k", "inv-sqrt-k", "exp"])
def test_blocked_schedule_bounds_the_exact_one(name):
    """Beyond EXACT_STEPS a schedule is cut into blocks with the noise rounded down (upper bounds)
    or up (lower bounds); each rounding is in the safe direction step by step, and the blocked
    epsilon stays within 1e-3 of the exact one."""
    from accounting import schedules as sched_mod
    from accounting.conversion import rdp_to_epsilon
    from accounting.orders import DEFAULT_ORDERS
    from accounting.rdp import subsampled_gaussian_rdp

    t = 6000
    exact = sched_mod.noise_multipliers(name, 40.0, t)
    down, counts = sched_mod.schedule_blocks(name, 40.0, t, rounding="down", exact_steps=500)
    up, counts_up = sched_mod.schedule_blocks(name, 40.0, t, rounding="up", exact_steps=500)
    assert counts.sum() == t and counts_up.sum() == t and down.size < t / 2
    assert np.all(np.repeat(down, counts) <= exact * (1 + 1e-15))
    assert np.all(np.repeat(up, counts_up) >= exact * (1 - 1e-15))
    e_exact = rdp_to_epsilon(
        subsampled_gaussian_rdp(0.01, exact, DEFAULT_ORDERS, evaluation="exact"), 1e-5
    ).epsilon
    e_down = rdp_to_epsilon(
        subsampled_gaussian_rdp(0.01, down, DEFAULT_ORDERS, counts=counts, evaluation="exact"), 1e-5
    ).epsilon
    assert e_exact <= e_down <= e_exact * (1 + 1e-3)


def test_blocked_schedule_is_small_at_a_billion_steps():
    from accounting.schedules import schedule_blocks

    for name in ("inv-k", "inv-sqrt-k", "exp", "constant"):
        values, counts = schedule_blocks(name, 3.0, 10**9)
        assert int(counts.sum()) == 10**9 and values.size < 30_000


def test_constant_schedule_stays_exact_at_any_length():
    """A constant schedule is one (value, count) pair: exact, no grid bound, no warning."""
    from accounting.algorithms import PrivacyParams, get_algorithm

    p = PrivacyParams(algo="dp2sgd", noise_multiplier=3.0, delta=1e-5, sample_rate=0.01, steps=3_000_000)
    r = get_algorithm("dp2sgd").epsilon(p, "claimed")
    assert not any("grid" in w for w in r.warnings)
    from accounting.conversion import rdp_to_epsilon
    from accounting.orders import DEFAULT_ORDERS
    from accounting.rdp import subsampled_gaussian_rdp

    exact = rdp_to_epsilon(subsampled_gaussian_rdp(0.01, 3.0, DEFAULT_ORDERS, steps=3_000_000), 1e-5).epsilon
    assert r.epsilon == pytest.approx(exact, rel=1e-12)
