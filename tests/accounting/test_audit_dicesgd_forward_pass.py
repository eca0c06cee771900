"""The DiceSGD audit's few-state forward pass equals the general one bit for bit.

``verify`` reports audit lower bounds computed from these likelihood ratios; the faster pass must
not move any of them, so equality is exact (``array_equal``), not approximate.
"""

from __future__ import annotations

import numpy as np
import pytest

from accounting.audit.dicesgd import (
    _llr_few_states,
    _llr_general,
    _simulate,
    dice_instance,
    log_likelihood_ratio,
)


@pytest.mark.parametrize("seed", range(4))
def test_few_state_pass_is_bit_identical_to_general(seed):
    rng = np.random.default_rng(seed)
    used = 0
    for k in range(40):
        grad_bound = [None, 0.5, 1.5, 3.0, 7.3, 50.0][k % 6]
        inst = dice_instance(
            sample_rate=float(rng.uniform(0.01, 0.99)),
            steps=int(rng.integers(1, 40)),
            c1=1.0,
            c2=float(rng.uniform(0.5, 3.0)),
            batch_size=float(rng.integers(1, 5)),
            noise_multiplier=float(rng.uniform(0.3, 3.0)),
            grad_bound=grad_bound,
        )
        y = _simulate(inst, "D'" if k % 2 else "D", 25, rng)
        used += _llr_few_states(inst, y) is not None
        assert np.array_equal(log_likelihood_ratio(inst, y), _llr_general(inst, y))
    assert used > 0  # the fast pass was exercised, not only the fallback


@pytest.mark.parametrize(
    "kw",
    [
        dict(sample_rate=0.01, steps=300, c1=1.0, c2=1.0, batch_size=100.0, grad_bound=3.0),  # a <= C2
        dict(sample_rate=0.01, steps=300, c1=1.0, c2=1.0, batch_size=10.0, grad_bound=1e4),  # K ~ T
        dict(sample_rate=0.02, steps=120, c1=1.0, c2=1.0, batch_size=1000.0, grad_bound=None),
    ],
)
def test_verify_instances_take_the_fast_pass_and_match(kw):
    inst = dice_instance(noise_multiplier=4.0, **kw)
    rng = np.random.default_rng(11)
    for world in ("D", "D'"):
        y = _simulate(inst, world, 200, rng)
        assert _llr_few_states(inst, y) is not None
        assert np.array_equal(log_likelihood_ratio(inst, y), _llr_general(inst, y))


def test_non_finite_rows_fall_back_to_general_pass():
    # q = 1: log P(b = 0) = -inf, so groups of b = 0 terms only are all -inf (NaN in the fast pass).
    inst = dice_instance(
        sample_rate=1.0, steps=12, c1=1.0, c2=1.0, batch_size=2.0, noise_multiplier=1.0, grad_bound=2.5
    )
    y = _simulate(inst, "D'", 10, np.random.default_rng(2))
    out = log_likelihood_ratio(inst, y)
    assert not np.isnan(out).any()
    assert np.array_equal(out, _llr_general(inst, y))
