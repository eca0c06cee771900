"""DiceSGD verdicts that depend on the reading (review fixes): Thm 2.3's quantifier order, the remark
after Thm 3.7 at fixed B, Lemma A.5's deciding argument."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verification.claim import Verdict


@pytest.mark.parametrize("n,b,t,c", [(10, 10, 1, 1.0), (1000, 10, 500, 0.3), (10**6, 1000, 10**5, 5.0)])
def test_thm23_literal_witness_is_private(n: int, b: int, t: int, c: float) -> None:
    """(u, v) = (N^2/(B^2 T), 16 N^2): build sigma1 from the statement, compose T Gaussian steps of
    replace-one sensitivity 2C on the sum, and compare the exact delta(eps) with the target."""
    from verification.properties import gaussian_delta_exact

    u, v = n * n / (b * b * t), 16.0 * n * n
    for eps in (1e-3, 0.3, 0.999):
        assert eps < u * b * b * t / (n * n)
        for delta in (1e-300, 1e-12, 1e-5, 0.1, 0.5, math.exp(-1 / 8)):
            sigma1 = math.sqrt(v * c * c * t * math.log(1 / delta) / (n * n * eps * eps))
            mu = math.sqrt(t) * 2 * c / sigma1
            assert gaussian_delta_exact(eps, mu, 1.0, precise=True) <= delta * (1 + 1e-9)


def test_thm23_literal_witness_fails_only_near_delta_one() -> None:
    from verification.claims.dicesgd.thm23 import thm23_literal_witness_log_ratio as f

    assert f(np.array([1.0]), np.array([0.999]))[0] > 0  # the open edge: delta -> 1
    assert f(np.array([1.0]), np.array([math.exp(-1 / 8)]))[0] < 0


def test_thm23_refuted_under_every_reading_flagged_at_the_delta_edge(quick_run) -> None:
    r = quick_run("dicesgd.thm2.3")
    per = {x["reading"]: x["verdict"] for x in r.readings_json()}
    assert set(per.values()) == {"refuted"} and len(per) == 3
    assert not r.reading_split and r.verdict is Verdict.REFUTED
    # the literal reading fails only as delta -> 1: the claim's refutation carries that edge
    edge_check = next(c for c in r.checks if c.name == "literal-order-delta-edge")
    assert edge_check.verdict is Verdict.REFUTED and edge_check.edge
    assert r.edge == edge_check.edge and "delta -> 1" in r.edge
    assert r.to_json()["edge"] == r.edge


def test_thm23_delta_edge_replays_the_reviewers_example() -> None:
    """N = B = 10, T = 1, v = 16 N^2, eps = 0.5, delta = 1 - 1e-6: mu = 125 and delta(eps) > delta;
    1 - delta(eps) is checked against an independent mpmath evaluation of the Balle-Wang formula."""
    import mpmath

    from verification.claims.dicesgd.thm23 import thm23_delta_edge

    r = thm23_delta_edge(1.0, 1600.0)
    assert r["eps"] == 0.5 and math.isclose(r["ln(1/delta)"], 1e-6, rel_tol=1e-12)
    assert math.isclose(r["mu"], 125.0, rel_tol=1e-12) and r["violated"]
    mpmath.mp.dps = 50
    mu, eps = mpmath.mpf(125), mpmath.mpf("0.5")
    one_minus = mpmath.ncdf(eps / mu - mu / 2) + mpmath.e**eps * mpmath.ncdf(-eps / mu - mu / 2)
    assert math.isclose(float(mpmath.log10(one_minus)), r["log10(1-delta_exact(eps))"], rel_tol=1e-9)
    # smaller delta (farther from 1) is not a counterexample for the same (u, v): the failure is the edge
    assert not thm23_delta_edge(1.0, 1600.0, mu=0.5)["violated"]


def test_remark_fixed_b_pinned_pairs_are_verified_and_match_a_fresh_search() -> None:
    """Each pinned z_fail has a sum-test lower bound above eps, each z_dp certifies eps; a fresh
    bisection on the smallest row finds the same ratio (within its 2% step)."""
    from verification.claims.dicesgd.remark_fixed_b import FIXED_B_PINNED, fixed_b_row

    for n, t, zf, zd in FIXED_B_PINNED:
        row = fixed_b_row(n, t, replay=True)
        assert row["dicesgd_eps_lower"] > 2.0 and row["dpsgd_certified_eps"] <= 2.0
        assert row["ratio_lower_bound"] == pytest.approx(zf / zd, rel=1e-5)
    fresh = fixed_b_row(100, 50, replay=False)
    pinned = fixed_b_row(100, 50, replay=True)
    assert fresh["ratio_lower_bound"] == pytest.approx(pinned["ratio_lower_bound"], rel=0.03)


def test_remark_fixed_b_decides_and_flush_is_informative(quick_run) -> None:
    r = quick_run("dicesgd.remark-constant-factor", premises={"dicesgd.thm3.7": Verdict.REFUTED})
    by = {c.name: c for c in r.checks}
    assert by["noise-ratio-fixed-B"].deciding and by["noise-ratio-fixed-B"].verdict is Verdict.REFUTED
    assert not by["noise-ratio-family"].deciding  # N grows with B there: informative only
    flush = by["flush-regime-certified"]
    assert not flush.deciding and flush.verdict is Verdict.INCONCLUSIVE
    assert flush.summary.startswith("our result, not the paper's")
    ratios = [x["ratio_lower_bound"] for x in by["noise-ratio-fixed-B"].evidence.details["rows"]]
    assert ratios[0] < ratios[1] < ratios[2] and ratios[2] > 1000  # N = 1e2, 1e3, 1e4 at 5 epochs


def test_lemma_a5_proof_margin_is_tight_and_detects_a_smaller_offset() -> None:
    import sympy as sp

    from verification.claims.dicesgd.rdp_lemmas import lemma_a5_proof_margin as f

    margin, (a, L) = f()
    assert margin == 0
    low, _ = f("log(1/delta)/alpha")
    assert sp.simplify(low + L / (a + 1) ** 2) == 0  # negative: the argument fails for that offset
    high, _ = f("log(1/delta)/(alpha - 1) + 1")
    assert high.is_positive


def test_lemma_a5_decided_by_the_proof_search_supporting(quick_run) -> None:
    r = quick_run("dicesgd.lemma-a5")
    by = {c.name: c for c in r.checks}
    assert by["mironov-prop3-proof"].deciding and by["mironov-prop3-proof"].verdict is Verdict.CONFIRMED
    search = by["adversarial-search-exact-profiles"]
    assert not search.deciding and "three families only" in search.evidence.method
    assert r.verdict is Verdict.CONFIRMED


def test_lemma_a8_mixture_reading_found_in_quick_mode(quick_run) -> None:
    from verification import registry
    from verification.claims.dicesgd.rdp_lemmas import LEMMA_A8_MIXTURE_WITNESS, _a8_mixture_replay

    bad, rep = _a8_mixture_replay(LEMMA_A8_MIXTURE_WITNESS)  # 50-digit binomial expansion
    assert bad and rep["lhs_50_digits"] > rep["rhs_50_digits"]
    claim = registry.CLAIMS["dicesgd.lemma-a8"]
    r = quick_run(claim.id, premises={p: Verdict.CONFIRMED for p in claim.depends_on})
    mix = next(c for c in r.checks if c.name == "applied-to-a-mixture")
    assert mix.verdict is Verdict.REFUTED and not mix.deciding  # outside the lemma's stated domain
    assert r.verdict is Verdict.CONFIRMED  # the statement itself (three Gaussians) holds
