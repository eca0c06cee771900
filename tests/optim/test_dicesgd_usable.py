"""DiceSGD made usable (issue 10): N inference, --c2 auto within C1 <= C2, the flush guarantee's N."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from accounting.algorithms.base import PrivacyParams
from accounting.algorithms.dicesgd import auto_c2_flush
from accounting.algorithms.registry import get_algorithm
from accounting.hidden_state import dicesgd_flush_epsilon, flush_failure_probability
from accounting.orders import DEFAULT_ORDERS
from dptheory import api

DICE = get_algorithm("dicesgd")


# -- N inferred from B and q -------------------------------------------------------------------


@pytest.mark.parametrize(
    "q,b,expected",
    [
        (0.02, 1000.0, 50_000),  # qN = B exactly (B/q has a rounding error of one ulp)
        (0.03, 1000.0, 33_334),  # B/q = 33333.33: round() gave 33333, whose qN < B
        (0.3, 2.0, 7),  # B/q = 6.67: round() gave 7 as well
        (0.07, 10.0, 143),  # B/q = 142.857: round() gave 143
        (0.011, 10.0, 910),  # B/q = 909.09: round() gave 909
    ],
)
def test_inferred_dataset_size_is_the_smallest_n_with_qn_at_least_b(q, b, expected):
    p, assumed, _ = DICE.resolve(
        PrivacyParams(algo="dicesgd", delta=1e-5, noise_multiplier=2.0, sample_rate=q, batch_size=b, steps=10)
    )
    assert p.dataset_size == expected
    assert q * p.dataset_size >= b * (1 - 1e-9)
    assert q * (p.dataset_size - 1) < b
    assert any("inferred as ceil(B / q)" in a for a in assumed)


def test_inferred_n_never_gives_a_smaller_flush_failure_than_the_true_n():
    """P(E^c) is non-decreasing in N, so the inferred N must be >= every N with qN = B (rounding)."""
    q, b = 0.03, 1000.0
    p, _, _ = DICE.resolve(
        PrivacyParams(
            algo="dicesgd",
            delta=1e-5,
            noise_multiplier=2.0,
            sample_rate=q,
            batch_size=b,
            steps=50,
            residual_clip=0.9,
        )
    )
    kw = dict(rho=0.9, c2=1.0, batch_size=b, sample_rate=q, steps=50)
    inferred = flush_failure_probability(population=p.dataset_size, **kw)["p_fail"]
    rounded = flush_failure_probability(population=round(b / q), **kw)["p_fail"]
    assert inferred >= rounded > 0


@pytest.mark.parametrize("n", [100, 1000, 50_000])
def test_flush_failure_covers_both_neighbours(n):
    """Add: the others are the N examples of D; remove: N - 1. Population N bounds both tails."""
    q, b, c2, rho, t = 0.05, 0.05 * n, 1.6, 0.8, 5  # k_max = 2 q n - 2
    fail = flush_failure_probability(rho=rho, c2=c2, batch_size=b, population=n, sample_rate=q, steps=t)
    k = fail["k_max"]
    for others in (n, n - 1):
        exact_union = min(1.0, t * float(stats.binom.sf(k, others, q)))
        assert fail["p_fail"] >= exact_union
    # and a bigger dataset than N is *not* covered (the bound would be too small for it)
    bigger = min(1.0, t * float(stats.binom.sf(k, 2 * n, q)))
    assert bigger > fail["p_fail"]


def test_flush_failure_is_monotone_in_population():
    kw = dict(rho=0.6, c2=1.0, batch_size=1000.0, sample_rate=0.02, steps=150)
    vals = [flush_failure_probability(population=n, **kw)["p_fail"] for n in (49_000, 50_000, 51_000, 60_000)]
    assert all(a <= b for a, b in zip(vals, vals[1:], strict=False))


def test_assumptions_state_the_dataset_size_the_flush_guarantee_covers():
    rep = api.epsilon(defaults="paper", noise_multiplier=1.6, delta=1e-5, algo="dicesgd", grad_bound=1.5)
    assert any("N = 50000" in a and "datasets of at most N examples" in a for a in rep.assumptions)
    rep = api.epsilon(defaults="paper", noise_multiplier=1e5, delta=1e-5, algo="dicesgd")
    assert not any("datasets of at most" in a for a in rep.assumptions)


# -- --c2 auto keeps C1 <= C2 ------------------------------------------------------------------


@pytest.mark.parametrize("extra", [dict(residual_clip=0.5), dict(grad_bound=1.5), dict(residual_clip=0.05)])
def test_c2_auto_keeps_c2_at_least_c1_at_no_cost(extra):
    z = 1.6
    rep = api.epsilon(defaults="paper", noise_multiplier=z, delta=1e-5, algo="dicesgd", c2="auto", **extra)
    c2 = rep.parameters["c2"]
    c1 = rep.parameters["c1"]
    assert c2 >= c1  # Theorem 3.7's C1 <= C2
    assert rep.details["regime"] == "flush" and rep.details["p_fail"] <= 1e-7
    assert any("max(C1," in a and "kept >= C1" in a for a in rep.defaults_assumed)
    p, _, _ = DICE.resolve(api.build_params(algo="dicesgd", delta=1e-5, noise_multiplier=z, **extra))
    flush = auto_c2_flush(p)
    assert flush["c2"] == max(c1, flush["c2_min"])
    # the flush bound at the chosen C2 is no larger than at the minimal C2 and equal to any larger C2's
    kw = dict(
        delta=1e-5,
        sample_rate=p.sample_rate,
        noise_multiplier=z,
        steps=p.steps,
        c1=p.c1,
        batch_size=p.batch_size,
        population=p.dataset_size,
        rho=flush["rho"],
        orders=DEFAULT_ORDERS,
    )
    chosen = dicesgd_flush_epsilon(**kw, c2=c2)["epsilon"]
    assert chosen == pytest.approx(rep.epsilon, rel=1e-12)
    assert chosen <= dicesgd_flush_epsilon(**kw, c2=flush["c2_min"])["epsilon"]
    for c2_other in (2 * c2, 10 * c2):
        assert dicesgd_flush_epsilon(**kw, c2=c2_other)["epsilon"] == pytest.approx(chosen, rel=1e-9)


def test_c2_auto_above_c1_when_the_minimum_is_larger():
    """R = 2 C1: the minimal C2 (about 1.2 R) is above C1 and is returned unchanged."""
    p, _, _ = DICE.resolve(
        api.build_params(algo="dicesgd", delta=1e-5, noise_multiplier=1.0, residual_clip=2.0)
    )
    flush = auto_c2_flush(p)
    assert flush["c2"] == flush["c2_min"] > 2.0 > p.c1


def test_c2_at_the_minimum_gives_p_fail_at_most_delta_over_100():
    p, _, _ = DICE.resolve(
        api.build_params(algo="dicesgd", delta=1e-5, noise_multiplier=1.0, residual_clip=0.5)
    )
    flush = auto_c2_flush(p)
    base = dict(
        delta=1e-5,
        sample_rate=p.sample_rate,
        noise_multiplier=1.5,
        steps=p.steps,
        c1=p.c1,
        batch_size=p.batch_size,
    )
    at_min = dicesgd_flush_epsilon(
        **base, c2=flush["c2_min"], population=p.dataset_size, rho=0.5, orders=DEFAULT_ORDERS
    )
    assert at_min["p_fail"] <= 1e-7
    below = dicesgd_flush_epsilon(
        **base, c2=flush["c2_min"] * (1 - 2e-3), population=p.dataset_size, rho=0.5, orders=DEFAULT_ORDERS
    )
    assert below["p_fail"] > 1e-7
    assert math.isfinite(at_min["epsilon"])


# -- figures: the trade-off's premise and the grid -----------------------------------------------


@pytest.mark.parametrize("c1,r", [(1.0, 0.5), (0.5, 0.25)])
def test_residual_clipped_dicesgd_stops_where_dpsgd_at_c1_plus_r_does(c1, r):
    """At a fixed point v = 0 and e is constant, so mean clip(g, C1 + R) = 0: DPSGD-GC's root at C1 + R.

    Measured by noise-free full-batch runs on dicesgd-b1 (C' = 2), against the exact root.
    """
    pytest.importorskip("torch")
    from dptheory.figures_dicesgd import _bias
    from dptheory.problems import get_problem

    prob = get_problem("dicesgd-b1", c=1.0)
    root = abs(float(prob.clipped_fixed_point("dpsgd", c1=c1 + r).point[0]))
    dice = _bias("dicesgd", "dicesgd-b1", {"c": 1.0}, 0.5, 150, c1=c1, c2=max(c1, 1.2 * r), residual_clip=r)
    assert dice == pytest.approx(root, abs=1e-6)
    # and without the residual clip DiceSGD removes the bias (C2 large enough for a fixed point)
    assert _bias("dicesgd", "dicesgd-b1", {"c": 1.0}, 0.5, 150, c1=c1, c2=1.0) < 1e-6 < root


def test_grid_cell_certified_is_above_the_audit():
    from dptheory.figures_dicesgd import certified_vs_audit_grid

    (row,) = certified_vs_audit_grid((1.5,), (1.0,), samples=5_000)
    assert row["regime"] == "flush"
    assert row["eps_certified"] <= 2.0 + 1e-9
    assert 0 < row["eps_lower"] <= row["eps_certified"]
    assert row["ratio"] >= 1.0
    # the row reports the best of the audits (neither storage audit applies here)
    audits = ("eps_lower_lattice", "eps_lower_storage", "eps_lower_orthogonal")
    assert row["eps_lower"] == max(row[k] for k in audits)
    assert row["audit"] == "lattice" and row["eps_lower_storage"] == row["eps_lower_orthogonal"] == 0.0


def test_figures_only_rejects_unknown_names(tmp_path, capsys):
    from dptheory.cli.main import main

    rc = main(["figures", "--out", str(tmp_path), "--only", "nope.png"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--only" in err[0] and "dicesgd_tradeoff.png" in err[0]
    assert list(tmp_path.iterdir()) == []
