"""Soundness of the privacy numbers at their edges: each case is a bug an adversarial review
found, kept as a test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accounting.conversion import epsilon_per_order


def test_kl_fallback_not_applied_below_order_one():
    """The KL shortcut (eps = 0 once delta >= sqrt(1 - e^-rdp)) needs an order >= 1.

    ``D_alpha`` is non-decreasing in alpha, so below order 1 it is a *lower* bound on KL and the
    shortcut is unsound there; ``epsilon_per_order`` (public) used to return eps = 0 anyway.
    Counterexample: N(0,1) vs N(3,1) has D_alpha = 9 alpha / 2, so D_0.01 = 0.045 and
    sqrt(1 - e^-0.045) = 0.21 < delta = 0.5, yet its exact delta(0) = TV = 2 Phi(1.5) - 1 = 0.866
    > 0.5: the true epsilon at delta = 0.5 is positive, not 0.
    """
    from scipy.stats import norm

    assert 2 * norm.cdf(1.5) - 1 > 0.5  # the mechanism is not (0, 0.5)-DP
    eps = epsilon_per_order(np.array([0.01]), np.array([0.01 * 9 / 2]), 0.5)
    assert not eps[0] == 0.0, eps
    # orders >= 1 keep the KL shortcut (dp-accounting's behaviour)
    assert epsilon_per_order(np.array([1.0, 2.0]), np.array([1e-12, 1e-12]), 1e-5)[0] == 0.0


def test_checkpoint_total_never_below_its_history() -> None:
    """An edited checkpoint whose total is lower than its history (within the 1e-9 check)
    must not lower epsilon."""
    import copy

    import numpy as np

    from accounting.accountant import RdpAccountant

    acc = RdpAccountant()
    acc.step(noise_multiplier=1.1, sample_rate=0.01, count=500)
    honest = acc.get_epsilon(1e-5)
    state = copy.deepcopy(acc.state_dict())
    total = state["total"]
    key = "rdp" if "rdp" in total else next(k for k, v in total.items() if isinstance(v, list) and len(v) > 1)
    total[key] = [v * (1 - 5e-10) if isinstance(v, float) else v for v in total[key]]
    restored = RdpAccountant.from_state_dict(state)
    assert restored.get_epsilon(1e-5) >= honest
    assert np.isfinite(restored.get_epsilon(1e-5))


# -- review of the accounting fast paths (this session) ------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.floats(1e-12, 1e12, allow_nan=False), st.integers(3, 17))
@example(34359738368.765625, 16)  # CI found it: one unit added at 16 digits rounded down again
@example(1.0 - 2.0**-53, 17)
def test_displayed_numbers_round_up(x, digits) -> None:
    """A noise multiplier or epsilon copied from the text table is never below the computed one."""
    from dptheory.cli.params import fmt_up

    assert float(fmt_up(x, digits)) >= x


def test_calibration_keeps_a_margin_below_the_target() -> None:
    """A recomputation that differs at rounding level must still meet the target."""
    from accounting.calibration import calibrate_decreasing

    res = calibrate_decreasing(lambda z: 2.0 / z, 1.0, option="--eps")
    assert res.achieved <= 1.0 * (1 - 1e-12)
    assert res.value == pytest.approx(2.0, rel=1e-6)


@pytest.mark.parametrize("algo", ["d2p2sgd", "d2psgd", "dp2sgd"])
def test_noise_whose_square_underflows_gives_infinite_epsilon_not_a_crash(algo: str) -> None:
    """z = 1e-300: z * z underflows to 0 in the smooth-schedule bound's step sums; epsilon is +inf."""
    import dptheory

    report = dptheory.epsilon(algo=algo, noise_multiplier=1e-300, delta=1e-300, defaults="paper")
    assert report.epsilon == math.inf


@pytest.mark.parametrize(
    "argv",
    [
        "epsilon --algo dicesgd --noise-multiplier 1e160 --delta 1e-5".split(),
        "epsilon --algo dicesgd --noise-multiplier 1e300 --delta 1e-5 --grad-bound 3".split(),
        "epsilon --algo clip21sgd2m --noise-multiplier 1e300 --delta 1e-5".split(),
        "audit --algo dicesgd --noise-multiplier 1e300 --delta 1e-300 --samples 200".split(),
    ],
)
def test_noise_whose_square_overflows_answers_instead_of_raising(argv, capsys) -> None:
    """z above ~1.3e154: a Python float's ``z ** 2`` raises OverflowError where ``z * z`` is +inf;
    every path answers (exit 0) with a finite, non-negative number."""
    from dptheory.cli.main import main

    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out
    assert "Traceback" not in out and out.strip().startswith("{")
