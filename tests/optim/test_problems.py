"""The toy problems' exact answers: optima, fixed points of the clipped methods, constants."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from accounting.errors import InvalidParameter
from dptheory.problems import PROBLEM_NAMES, get_problem


@pytest.fixture(scope="module")
def problems():
    return {name: get_problem(name) for name in PROBLEM_NAMES}


def test_every_problem_has_zero_gradient_at_its_optimum(problems):
    for name, p in problems.items():
        assert np.linalg.norm(p.grad(p.x_star)) < 1e-10, name
        assert p.loss(p.x_star) == pytest.approx(p.f_star, abs=1e-12)
        rng = np.random.default_rng(0)
        for _ in range(5):  # x* is (at least locally) a minimum
            x = p.x_star + 1e-2 * rng.standard_normal(p.dim)
            assert p.loss(x) >= p.f_star - 1e-12, name


def test_problems_expose_constants(problems):
    for name, p in problems.items():
        for key in ("d", "N", "L", "G", "sigma"):
            assert key in p.constants, (name, key)
        assert p.constants["d"] == p.dim


def test_unknown_problem_is_invalid_parameter():
    with pytest.raises(InvalidParameter, match="--problem"):
        get_problem("nope")


# -- dicesgd-b1 ------------------------------------------------------------------------------
@pytest.mark.parametrize("c", [0.3, 1.0, 2.0, 2.5, 7.0])
def test_dicesgd_b1_instance(c):
    p = get_problem("dicesgd-b1", c=c)
    cp = math.ceil(c) + 1
    xi = p.data["xi"].numpy()
    assert p.size == cp + 1 and np.sum(xi == -1) == cp and np.sum(xi == cp) == 1
    # the per-sample gradient is -C', x - xi, C' on the three pieces; |grad| <= G = C'
    grid = np.linspace(-3 * cp, 3 * cp, 301)
    for x in grid:
        g = p.per_sample_grads(np.array([x]))[:, 0]
        np.testing.assert_allclose(g, np.clip(x - xi, -cp, cp), atol=1e-12)
        assert np.all(np.abs(g) <= p.constants["G"] + 1e-12)
    assert p.x_star[0] == 0.0


@pytest.mark.parametrize("c", [0.3, 1.0, 2.0, 2.5, 7.0])
def test_dicesgd_b1_clipped_fixed_point_is_exact_root(c):
    """Root of sum clip(grad f(x, xi_i), C): equals C/C' - 1, not the paper's C'/(C'+C)."""
    p = get_problem("dicesgd-b1", c=c)
    fp = p.clipped_fixed_point("dpsgd", c1=c)
    cp = math.ceil(c) + 1
    assert fp is not None and fp.lo[0] == pytest.approx(fp.hi[0], abs=1e-12)
    x = fp.point[0]
    g = p.per_sample_grads(np.array([x]))[:, 0]
    assert abs(np.sum(np.clip(g, -c, c))) < 1e-12
    assert x == pytest.approx(c / cp - 1, abs=1e-12)
    assert p.notes["paper_claimed_fixed_point"] == pytest.approx(cp / (cp + c))
    assert abs(x - p.notes["paper_claimed_fixed_point"]) > 0.5  # the paper's value is not a root


def test_dicesgd_b1_dicesgd_fixed_point_needs_large_enough_c2():
    p = get_problem("dicesgd-b1", c=1.0)  # C' = 2: mean clip(g_i(0), 1) = (2*1 - 1)/3
    assert p.clipped_fixed_point("dicesgd", c1=1.0, c2=1.0).point[0] == 0.0
    assert p.clipped_fixed_point("dicesgd", c1=1.0, c2=0.3) is None
    assert p.clipped_fixed_point("dicesgd", c1=1.0, c2=1 / 3 + 1e-9) is not None


# -- clip21-example1 -------------------------------------------------------------------------
@pytest.mark.parametrize("tau", [0.5, 1.0, 2.9])
def test_clip21_example1_fixed_point_interval(tau):
    p = get_problem("clip21-example1")  # a = 3, L = 1
    fp = p.clipped_fixed_point("clipsgd", tau=tau)
    half = 3.0 - tau
    assert fp.lo[0] == pytest.approx(-half, abs=1e-9) and fp.hi[0] == pytest.approx(half, abs=1e-9)
    assert fp.distance(np.array([half / 2])) == 0.0
    assert fp.distance(np.array([half + 1.0])) == pytest.approx(1.0, abs=1e-9)


def test_clip21_example1_large_tau_has_point_fixed_point():
    p = get_problem("clip21-example1", a=1.0)
    fp = p.clipped_fixed_point("clipsgd", tau=5.0)
    assert fp.point[0] == pytest.approx(0.0, abs=1e-12) and fp.lo[0] == fp.hi[0]


# -- quadratic ------------------------------------------------------------------------------
def test_quadratic_constants_are_computed():
    p = get_problem("quadratic", d=5, n_samples=40, mu=0.3, L=2.0)
    from torch.func import hessian

    h = hessian(lambda x: p.loss_fn({"x": x}, {"z": p.data["z"][0]}))(torch.zeros(5, dtype=torch.float64))
    eig = np.linalg.eigvalsh(h.numpy())
    assert eig.max() == pytest.approx(p.constants["L"]) and eig.min() == pytest.approx(p.constants["mu"])
    g = p.per_sample_grads(np.random.default_rng(1).standard_normal(5))
    var = np.mean(np.sum((g - g.mean(axis=0)) ** 2, axis=1))
    assert math.sqrt(var) == pytest.approx(p.constants["sigma"], rel=1e-10)
    # G bounds per-sample gradients on the ball of radius R around x*
    rng = np.random.default_rng(2)
    for _ in range(20):
        u = rng.standard_normal(5)
        x = p.x_star + p.constants["G_radius"] * u / np.linalg.norm(u)
        assert np.linalg.norm(p.per_sample_grads(x), axis=1).max() <= p.constants["G"] + 1e-12


def test_convex_quadratic_distance_is_to_the_solution_set():
    p = get_problem("quadratic", d=4, mu=0.0, L=1.0)
    x = p.x_star.copy()
    x[0] += 5.0  # along ker H (eigenvalue 0 first): still optimal
    assert p.dist_to_opt(x) == 0.0 and p.loss(x) == pytest.approx(p.f_star)


def test_quadratic_dpsgd_fixed_point_is_a_root():
    p = get_problem("quadratic", d=4, n_samples=20)
    fp = p.clipped_fixed_point("dpsgd", c1=0.5)
    g = p.per_sample_grads(fp.point)
    n = np.linalg.norm(g, axis=1, keepdims=True)
    assert np.linalg.norm((g * np.minimum(1, 0.5 / n)).mean(axis=0)) < 1e-10
    assert np.linalg.norm(fp.point - p.x_star) > 1e-3  # clipping really moves the fixed point here


# -- stochastic-quadratic -------------------------------------------------------------------
def test_stochastic_quadratic_noise_is_bounded_and_centred():
    p = get_problem("stochastic-quadratic", d=3, clients=2, sigma=0.7)
    x = np.zeros(3)
    g = p.per_sample_grads(x)
    for idx in p.clients:
        gi = g[idx]
        noise = gi - gi.mean(axis=0)
        np.testing.assert_allclose(np.linalg.norm(noise, axis=1), 0.7, atol=1e-12)
        np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=1e-12)
    assert p.default_sample_rate == pytest.approx(1 / 6)


# -- logreg-nonconvex -----------------------------------------------------------------------
@pytest.mark.parametrize("dataset", ["synthetic", "breast-cancer"])
def test_logreg_stationary_point_and_smoothness_bound(dataset):
    p = get_problem("logreg-nonconvex", dataset=dataset, clients=3)
    assert np.linalg.norm(p.grad(p.x_star)) < 1e-10
    assert sum(len(c) for c in p.clients) == p.size
    # heterogeneous: label proportions differ across clients
    y = p.data["y"].numpy()
    shares = [np.mean(y[c] > 0) for c in p.clients]
    assert max(shares) - min(shares) > 0.5
    from torch.func import hessian

    rng = np.random.default_rng(0)
    for j in rng.choice(p.size, 5, replace=False):
        s = {k: v[j] for k, v in p.data.items()}
        x = torch.tensor(rng.standard_normal(p.dim), dtype=torch.float64)
        h = hessian(lambda v, s=s: p.loss_fn({"x": v}, s))(x).numpy()
        assert np.abs(np.linalg.eigvalsh(h)).max() <= p.constants["L"] + 1e-12
        assert np.linalg.norm(p.per_sample_grads(x.numpy())[j]) <= p.constants["G"] + 1e-12


def test_bad_problem_options():
    with pytest.raises(InvalidParameter, match="--dataset"):
        get_problem("logreg-nonconvex", dataset="mnist")
    with pytest.raises(InvalidParameter, match="--c1"):
        get_problem("dicesgd-b1", c=-1.0)
