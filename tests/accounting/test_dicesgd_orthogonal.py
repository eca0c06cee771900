"""The orthogonal storage audit of DiceSGD: its D'-law against an enumeration of the real per-example
2-D recursion, its confidence bounds, its place below the certified epsilon, and input checks."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special

from accounting.audit.dicesgd_orthogonal import (
    OrthogonalPlan,
    bernstein_mean_bounds,
    dicesgd_orthogonal_epsilon_lower,
    orthogonal_epsilon_lower,
    orthogonal_plan,
    pilot_test,
    release_means,
)
from accounting.errors import InvalidParameter

# a tiny instance: B = 1, C1 = 0.2, G = 0.7 (a = 0.5), two others
_C1, _B, _G = 0.2, 1.0, 0.7
_TINY = OrthogonalPlan(
    sample_rate=0.4,
    sigma=0.3,
    c2=0.6,
    residual=(_G - _C1) / _B,
    clip_step=_C1 / _B,
    others=((2, 0.5), (2, 0.45), (2, -0.5), (0, 0.0)),
    xi_steps=(True, True, False, True),
    weights=(0.3, 0.5, 1.0, 0.8),
)


def _clip(x: np.ndarray, c: float) -> np.ndarray:
    n = float(np.linalg.norm(x))
    return x if n <= c else x * (c / n)


def _exact_e1_means(plan: OrthogonalPlan, with_xi: bool) -> list[tuple[float, float]]:
    """(probability, sum_t w_t * e1 coordinate of release t's mean) for every assignment of every
    example's Poisson bit: DiceSGD's per-example update written out (gradients, clip at C1, error
    state with clip at C2), nothing of the module's recursion reused."""
    q, steps = plan.sample_rate, plan.steps
    n_o = max(n for n, _ in plan.others)
    out = []
    for bits in itertools.product((0, 1), repeat=steps * (n_o + 1)):
        bits_t = np.array(bits).reshape(steps, n_o + 1)
        if not with_xi and bits_t[:, 0].any():
            continue
        prob = math.prod(q if b else 1 - q for b in (bits_t.ravel() if with_xi else bits_t[:, 1:].ravel()))
        e = np.zeros(2)
        total = 0.0
        for t in range(steps):
            n_t, j_t = plan.others[t]
            grads = []
            if with_xi and plan.xi_steps[t] and bits_t[t, 0]:
                grads.append(np.array([_G, 0.0]))
            for i in range(n_o):
                if i < n_t and bits_t[t, 1 + i] and j_t:
                    grads.append(np.array([0.0, math.copysign(_C1 + _B * abs(j_t), j_t)]))
            v = sum((_clip(g, _C1) for g in grads), np.zeros(2)) / _B + _clip(e, plan.c2)
            e = e + sum(grads, np.zeros(2)) / _B - v
            total += plan.weights[t] * v[0]
        out.append((prob, total))
    return out


def test_d_prime_law_matches_enumeration_of_the_real_recursion():
    s = _TINY.sigma * math.sqrt(sum(w * w for w in _TINY.weights))
    us = np.linspace(-0.5, 1.5, 9)
    exact = _exact_e1_means(_TINY, with_xi=True)
    assert abs(sum(p for p, _ in exact) - 1.0) < 1e-12
    sf_exact = np.array([sum(p * special.ndtr((m - u) / s) for p, m in exact) for u in us])
    means = np.array([m for _, m in exact])
    assert means.max() > 0.3  # xi' is visible along e1
    n = 200_000
    m = release_means(_TINY, np.random.default_rng(1), n)
    sf_mc = special.ndtr((m[:, None] - us[None, :]) / s).mean(0)
    assert np.all(np.abs(sf_mc - sf_exact) < 5 * 0.5 / math.sqrt(n))
    # under D nothing ever reaches e1: the statistic is N(0, s^2) exactly (Step 2)
    assert all(abs(mm) < 1e-15 for _, mm in _exact_e1_means(_TINY, with_xi=False))


def test_bernstein_bounds_bracket_the_mean_at_their_level():
    rng = np.random.default_rng(3)
    misses_lo = misses_hi = 0
    for _ in range(400):
        x = special.ndtr(rng.normal(-2.0, 1.0, size=300))  # [0, 1] variables, mean known below
        lo, hi = bernstein_mean_bounds(x, 0.05)
        assert lo <= x.mean() <= hi
        true = float(special.ndtr(-2.0 / math.sqrt(2.0)))  # E Phi(N(-2, 1)) = Phi(-2 / sqrt 2)
        misses_lo += lo > true
        misses_hi += hi < true
    assert misses_lo <= 20 + 12 and misses_hi <= 20 + 12  # at most 5% in expectation (+ 3 sd)


def test_bound_with_confidence_below_its_point_estimate():
    plan = orthogonal_plan(
        sample_rate=0.05, noise_multiplier=8.0, steps=60, c1=1.0, c2=0.5, batch_size=100.0,
        grad_bound=4.0, dataset_size=2000, lam=20.0, store=30, drain=8, weights="matched",
    )  # fmt: skip
    assert plan is not None
    rng = np.random.default_rng(5)
    est, direction, u = pilot_test(plan, 1e-5, release_means(plan, rng, 5000), 20_000, 0.01)
    assert est > 0.05
    m = release_means(plan, rng, 20_000)
    eps, point = orthogonal_epsilon_lower(plan, 1e-5, direction, u, m, 0.01)
    assert 0 < eps < point
    looser, _ = orthogonal_epsilon_lower(plan, 1e-5, direction, u, m, 1e-6)
    assert looser < eps


def _cert(z, q, steps, n, b, c2, g):
    from dptheory import api

    rep = api.epsilon(
        algo="dicesgd",
        noise_multiplier=z,
        delta=1e-5,
        sample_rate=q,
        steps=steps,
        dataset_size=n,
        batch_size=b,
        c1=1.0,
        c2=c2,
        grad_bound=g,
    )
    return float(rep.epsilon)


def test_never_above_the_certified_epsilon_on_random_instances():
    rng = np.random.default_rng(22)
    positive = 0
    for _ in range(4):
        n = int(rng.integers(1000, 3000))
        q = float(rng.uniform(0.03, 0.1))
        b, steps = q * n, int(rng.integers(40, 70))
        g = float(rng.uniform(2.0, 12.0))
        c2 = float(rng.uniform(0.1, 0.5)) * (g - 1.0) / b * q * n  # inside the attack's range
        z = float(np.exp(rng.uniform(math.log(3.0), math.log(60.0))))
        low, det = dicesgd_orthogonal_epsilon_lower(
            sample_rate=q, noise_multiplier=z, steps=steps, delta=1e-5, c1=1.0, c2=c2, batch_size=b,
            grad_bound=g, dataset_size=n, samples=20_000, pilot_samples=2000, seed=int(rng.integers(99)),
            designs=((10.0, 15, 6), (20.0, 25, 10)),
        )  # fmt: skip
        assert det["applicable"]
        cert = _cert(z, q, steps, n, b, c2, g)
        assert low <= cert, (n, q, steps, g, c2, z, low, cert)
        positive += low > 0.02
    assert positive >= 2  # the comparison bites


def test_deterministic_and_inapplicable_at_the_boundary():
    kw = dict(
        sample_rate=0.05, noise_multiplier=10.0, steps=40, delta=1e-5, c1=1.0, batch_size=100.0,
        samples=5000, pilot_samples=1000, designs=((10.0, 15, 6),),
    )  # fmt: skip
    one = dicesgd_orthogonal_epsilon_lower(c2=0.5, grad_bound=3.0, dataset_size=2000, **kw)
    two = dicesgd_orthogonal_epsilon_lower(c2=0.5, grad_bound=3.0, dataset_size=2000, **kw)
    assert one == two and one[0] > 0
    # G - C1 = C2 with B = qN: the others refill at most (N - 1)/N C2 per step, never more than C2
    eps, det = dicesgd_orthogonal_epsilon_lower(c2=2.0, grad_bound=3.0, dataset_size=2000, **kw)
    assert eps == 0.0 and det["applicable"] is False


@pytest.mark.parametrize(
    "name, value",
    [("sample_rate", 1.5), ("noise_multiplier", -1.0), ("delta", 0.0), ("grad_bound", math.nan)],
)
def test_bad_input_names_the_parameter(name, value):
    kw = dict(
        sample_rate=0.05, noise_multiplier=20.0, steps=20, delta=1e-5, c1=1.0, c2=0.5, batch_size=100.0,
        grad_bound=3.0, dataset_size=2000,
    )  # fmt: skip
    kw[name] = value
    with pytest.raises(InvalidParameter, match=name):
        dicesgd_orthogonal_epsilon_lower(**kw)


@pytest.mark.slow
def test_grid_cell_above_the_1d_storage_audit_and_below_the_certified():
    """At G = 11 C1, C2 = C1 and the certified z = 79.72 for eps = 2 the 1-D stored-residual audit
    gives 0.240; storing orthogonally to the others' refill gives more, and stays below 2."""
    low, det = dicesgd_orthogonal_epsilon_lower(
        sample_rate=0.02, noise_multiplier=79.72, steps=150, delta=1e-5, c1=1.0, c2=1.0,
        batch_size=1000.0, grad_bound=11.0, dataset_size=50_000,
    )  # fmt: skip
    assert 0.3 < low < det["point_estimate"] < 2.0
