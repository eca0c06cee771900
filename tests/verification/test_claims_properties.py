"""Property tests (hypothesis) for the lemmas and closed forms behind the claims."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verification import properties as P

fl = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
vec = st.lists(fl, min_size=3, max_size=3).map(np.array)


@given(vec, vec, st.floats(1e-3, 20))
@settings(max_examples=50, deadline=None)
def test_clip_residual_is_nonexpansive(x, y, c) -> None:  # DiceSGD Lemma A.1, second part
    assert P.nonexpansive_gap(x, y, c) <= 1e-9


@given(st.lists(vec, min_size=2, max_size=5), st.floats(1e-3, 20), st.data())
@settings(max_examples=40, deadline=None)
def test_variance_does_not_grow_under_nonexpansive_maps(points, c, data) -> None:  # Lemma A.1, first part
    w = np.array([data.draw(st.floats(0.01, 1.0)) for _ in points])
    pts = np.array(points)
    for fn in (lambda v: P.clip_residual(v, c), lambda v: P.clip(v, c)):
        assert P.variance_gap(pts, w, fn) <= 1e-8 * (1 + float(np.abs(pts).max()) ** 2)


@given(st.floats(1.05, 30), st.floats(-5, 5), st.floats(-5, 5), st.floats(0.3, 4))
@settings(max_examples=8, deadline=None)
def test_renyi_gaussian_closed_form_matches_quadrature(alpha, a, b, s) -> None:  # Lemma A.7
    exact = P.renyi_gaussian_quadrature(alpha, a, b, s, dps=25)
    assert math.isclose(exact, P.renyi_gaussian_closed(alpha, a, b, s), rel_tol=1e-9, abs_tol=1e-12)


def test_gaussian_delta_known_value_and_precise_path() -> None:
    # Balle & Wang: sigma = 1, eps = 1, Delta = 1 -> delta = Phi(-1/2) - e Phi(-3/2)
    assert math.isclose(P.gaussian_delta_exact(1.0, 1.0, 1.0), 0.12693673750664397, rel_tol=1e-10)
    assert math.isclose(
        P.gaussian_delta_exact(1.0, 1.0, 1.0, precise=True), 0.12693673750664397, rel_tol=1e-12
    )


@given(st.floats(0.05, 20), st.floats(0.2, 5))
@settings(max_examples=40, deadline=None)
def test_gdp_epsilon_inverts_delta(eps, mu) -> None:
    delta = P.gdp_delta(eps, mu)
    if 1e-12 < delta < 0.9:
        assert math.isclose(P.gdp_epsilon(delta, mu), eps, rel_tol=1e-6)


@given(st.floats(1e-4, 0.9), st.floats(0.3, 20), st.integers(2, 200))
@settings(max_examples=40, deadline=None)
def test_integer_sgm_rdp_agrees_with_accounting(q, z, alpha) -> None:
    rdp = pytest.importorskip("accounting.rdp")
    ours = P.sgm_rdp_integer(q, z, alpha)
    theirs = float(np.asarray(rdp.subsampled_gaussian_rdp(q, z, np.array([float(alpha)])).rdp)[0])
    assert math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-15)


@given(st.sampled_from(["gaussian"]), st.floats(0.2, 10), st.floats(0.01, 20), st.floats(1.001, 300))
@settings(max_examples=50, deadline=None)
def test_lemma4_if_direction(_, sigma, eps, eta) -> None:  # D2P2 Lemma 4, sufficiency (Mironov Prop. 3)
    cond = (eta - 1) * (eta / (2 * sigma * sigma) - eps)
    if cond <= 0:
        assert P.gaussian_delta_exact(eps, 1.0, sigma) <= math.exp(cond) * (1 + 1e-9) + 1e-300


def test_lemma4_only_if_direction_fails_for_the_gaussian() -> None:  # counterexample used by d2p2.lemma4
    exact = P.gaussian_delta_exact(1.0, 1.0, 1.0)
    best, _ = P.gaussian_lemma4_min_delta(1.0, 1.0)
    assert best > 5 * exact


@given(st.floats(1e-4, 0.0999), st.floats(1.0, 20), st.data())
@settings(max_examples=40, deadline=None)
def test_lemma5_bound_under_the_source_conditions_integer_orders(q, sigma, data) -> None:  # D2P2 Lemma 5
    # Under the conditions of the result the proof cites (Abadi et al. 2016 Lemma 3: sigma >= 1,
    # q < 1/(16 sigma)) the bound holds. As stated (no bound on sigma) it does not: see
    # tests/verification/test_counterexamples.py (sigma = 0.45, q = 1e-9, eta = 2).
    if q >= 1 / (16 * sigma):
        return
    emax = 0.5 * sigma * sigma * math.log(1 / q)
    if emax < 2:
        return
    eta = data.draw(st.integers(2, int(min(emax, 2000))))
    assert P.lemma5_domain(q, sigma, eta)
    assert P.sgm_rdp_integer(q, sigma, eta) <= P.lemma5_bound(q, sigma, eta)


@given(st.floats(0.01, 60))
@settings(max_examples=50, deadline=None)
def test_b1_clipped_fixed_point_closed_form(c) -> None:  # DiceSGD App. B.1: x~* = C/C' - 1
    cp, _ = P.b1_instance(c)
    assert math.isclose(P.b1_clipped_fixed_point(c), c / cp - 1, abs_tol=1e-9)
    assert abs(P.b1_optimum(c)) < 1e-9


def test_b1_agrees_with_problem_module() -> None:
    prob = pytest.importorskip("dptheory.problems")
    for c in (0.5, 1.0, 3.3):
        p = prob.get_problem("dicesgd-b1", c=c)
        assert math.isclose(p.notes["exact_clipped_fp_formula"], P.b1_clipped_fixed_point(c), abs_tol=1e-9)


@given(st.lists(vec, min_size=2, max_size=5), st.floats(0.01, 10), st.floats(1.0, 5.0))
@settings(max_examples=40, deadline=None)
def test_dicesgd_fixed_point_construction(points, c1, ratio) -> None:  # §3.1 with C2 >= C1
    from verification.claims.dicesgd import ef_fixed_point_residuals

    grads = np.array(points) - np.mean(points, axis=0)
    r1, r2 = ef_fixed_point_residuals(grads, c1, c1 * ratio)
    assert max(r1, r2) <= 1e-9


@given(st.floats(0.001, 0.2), st.floats(4.01, 40), st.integers(2, 500))
@settings(max_examples=50, deadline=None)
def test_lemma_a10_mtz_form_domain_implies_bound(p, sigma, alpha) -> None:  # MTZ 2019 Thm 11
    if P.mtz_domain(p, sigma, alpha, reading="mtz"):
        assert P.sgm_rdp_integer(p, sigma, alpha) <= 2 * p * p * alpha / sigma**2


def test_dimension_checker_flags_mixed_units() -> None:
    import sympy as sp

    from verification.symbolic import inhomogeneous_terms

    a, b = sp.symbols("a b", positive=True)
    _, probs = inhomogeneous_terms(a**2 + b, {a: {"L": 1}, b: {"L": 1}})
    assert probs
    _, probs = inhomogeneous_terms(a**2 + b**2, {a: {"L": 1}, b: {"L": 1}})
    assert not probs
