"""What a user's suite looks like: property tests of one's own DP code with dptheory.testing.

Run: ``python -m pytest examples/user_suite --dptheory-profile quick``
(add ``-p dptheory.testing.plugin`` if dptheory's pytest11 entry point is not installed).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dptheory.claims import Domain, Param
from dptheory.testing import (
    assert_bound_holds,
    assert_epsilon_at_most,
    assert_not_refuted_by_audit,
    dp_params,
    gradient_sets,
    mechanism_events,
    noise_multipliers,
    sample_rates,
)
from dptheory.testing.plugin import known_counterexample


def my_clip(g: np.ndarray, c: float) -> np.ndarray:
    """The user's per-example clipping (the code under test)."""
    norms = np.linalg.norm(g, axis=1, keepdims=True)
    return g * np.minimum(1.0, c / np.maximum(norms, 1e-300))


@given(gradient_sets(norm_bound=2.0))
def test_clipping_leaves_bounded_gradients_alone(g: np.ndarray) -> None:
    assert np.array_equal(my_clip(g, 2.0), g) or np.allclose(my_clip(g, 2.0), g, rtol=1e-15, atol=0)


@given(dp_params(max_steps=10_000))
def test_more_steps_never_cost_less(p) -> None:
    """Twice the steps: our certified eps of T steps is at most that of 2T steps."""
    from dptheory.testing import certified_epsilon_of

    ev = p.event()
    doubled = type(ev)(ev.event, 2 * ev.count)
    assert_epsilon_at_most(ev, certified_epsilon_of(doubled, p.delta), p.delta)


@given(mechanism_events(max_leaves=3, max_count=1000))
def test_composition_with_a_second_copy_only_adds(mechanism) -> None:
    from accounting.events import ComposedEvent
    from dptheory.testing import certified_epsilon_of

    twice = ComposedEvent((mechanism, mechanism))
    assert_epsilon_at_most(mechanism, certified_epsilon_of(twice, 1e-6) * (1 + 1e-12), 1e-6)


@given(q=sample_rates(hi=0.1), sigma=noise_multipliers(hi=100.0), eta=st.floats(1.01, 64.0))
@known_counterexample("d2p2.lemma5")  # q=1e-9, sigma=0.45, eta=2: where 7 q^2 eta/sigma^2 fails
def test_subsampling_never_hurts(q: float, sigma: float, eta: float) -> None:
    """The subsampled Gaussian's RDP is at most the full-batch Gaussian's eta/(2 sigma^2)."""
    from accounting.rdp import subsampled_gaussian_rdp

    rdp = float(subsampled_gaussian_rdp(q, sigma, np.array([eta])).rdp[0])
    assert rdp <= eta / (2 * sigma**2) * (1 + 1e-9)


def gaussian_delta(eps, delta):
    """Exact delta(eps) (Balle & Wang 2018) at the classical sigma = sqrt(2 ln(1.25/delta))/eps
    (vectorised: eps and delta are arrays)."""
    from scipy.special import ndtr

    s = np.sqrt(2 * np.log(1.25 / delta)) / eps
    return ndtr(1 / (2 * s) - eps * s) - np.exp(eps) * ndtr(-1 / (2 * s) - eps * s)


def claimed_delta(eps, delta):
    return delta


def test_classical_gaussian_holds_below_eps_one(dptheory_profile: str) -> None:
    domain = Domain(params=(Param("eps", "(0, 1)", 1e-3, 0.999), Param("delta", "(0, 1)", 1e-12, 0.5)))
    n = 256 if dptheory_profile == "quick" else 4096
    assert_bound_holds(gaussian_delta, claimed_delta, domain, vectorized=True, samples=n, maxiter=10)


def test_my_noise_is_not_refuted_by_the_audit() -> None:
    """DP-SGD at noise 1, q = 0.01, 100 steps, claimed eps = 1.3 (our certified number is 1.21)."""
    assert_not_refuted_by_audit(
        algo="dpsgd", noise_multiplier=1.0, delta=1e-5, eps=1.3, sample_rate=0.01, steps=100
    )


def test_counterexamples_are_available(dptheory_counterexamples: dict) -> None:
    assert {"d2p2.lemma5", "dicesgd.thm3.6", "dicesgd.thm3.7", "clip21.cor1"} <= set(dptheory_counterexamples)


def test_the_profile_option_sets_hypothesis(dptheory_profile: str) -> None:
    from hypothesis import settings

    from dptheory.testing.plugin import PROFILES

    assert settings.default.max_examples == PROFILES[dptheory_profile]


def test_seeded_problem_is_reproducible(dptheory_problem) -> None:
    """The plugin's seeded toy problem: the same seed gives the same data and optimum."""
    a = dptheory_problem("stochastic-quadratic", d=3)
    b = dptheory_problem("stochastic-quadratic", d=3)
    assert a.x_star.shape == (3,) and np.array_equal(a.x_star, b.x_star)
    assert a.constants["L"] > 0
