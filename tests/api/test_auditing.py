"""One-run canary audits (dptheory.auditing): against the truth, the papers' formulas, power."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from accounting.audit.stats import gaussian_epsilon
from accounting.errors import InvalidParameter
from dptheory.auditing import (
    Bonferroni,
    CanaryScoreAuditor,
    FixedRule,
    GaussianDP,
    GuessGrid,
    SubsampledGaussian,
    one_run,
)

# Certified eps = 2 at delta = 1e-5 (RDP, dptheory.api.calibrate) for the digits demo schedule.
Q, T, Z = 64 / 1797, 113, 1.2239


def _gdp_scores(mu: float, m: int, seed: int) -> CanaryScoreAuditor:
    rng = np.random.default_rng(seed)
    s = rng.random(m) < 0.5
    x = rng.normal(size=m) + mu * s
    return CanaryScoreAuditor(x[s], x[~s])


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_estimates_between_zero_and_true_gdp_epsilon(mu):
    truth = gaussian_epsilon(1e-5, mu)
    for seed in range(3):
        a = _gdp_scores(mu, 2000, seed)
        for one_sided in (True, False):
            e1 = a.epsilon_one_run(0.05, 1e-5, one_sided)
            e2 = a.epsilon_one_run_fdp(0.05, 1e-5, one_sided)
            assert 0 < e1 < truth and 0 < e2 < truth, (mu, seed, e1, e2, truth)


@pytest.mark.parametrize("m", [1000, 5000])
def test_fdp_at_least_steinke_on_same_scores(m):
    for seed in range(6):
        a = _gdp_scores(0.5, m, seed)
        assert a.epsilon_one_run_fdp(0.05, 1e-5, False) >= a.epsilon_one_run(0.05, 1e-5, False), (m, seed)


def test_power_1000_canaries_better_estimate():
    best = [
        max(a.epsilon_one_run(0.05, 1e-5, False), a.epsilon_one_run_fdp(0.05, 1e-5, False))
        for a in (_gdp_scores(0.5, 1000, seed) for seed in range(6))
    ]
    assert np.mean(best) >= 0.5, best


def test_power_5000_canaries_fdp_against_exact_curve():
    """The default rule grid (GuessGrid), no rule chosen by hand: for mu-GDP scores the exact curve
    is the GDP one.  Median over 9 seeds >= 1.0, half the true 2; the former 66-rule grid gave 0.98."""
    est = [
        _gdp_scores(0.5, 5000, seed).epsilon_one_run_fdp(0.05, 1e-5, False, curve=GaussianDP())
        for seed in range(9)
    ]
    assert np.median(est) >= 1.0, est
    wide = [
        _gdp_scores(0.5, 5000, seed).epsilon_one_run_fdp(0.05, 1e-5, False, threshold_strategy=Bonferroni())
        for seed in range(9)
    ]
    assert np.median(est) > np.median(wide), (est, wide)


def _steinke_direct(m, r, v, eps, delta):
    """Theorem 5.2 of Steinke et al. written out term by term."""
    q = math.exp(eps) / (1 + math.exp(eps))
    tail = lambda k: sum(math.comb(r, j) * q**j * (1 - q) ** (r - j) for j in range(max(k, 0), r + 1))  # noqa: E731
    beta = tail(v)
    alpha = max((tail(v - i) - beta) / i for i in range(1, v + 1))
    return min(1.0, beta + 2 * m * delta * alpha)


@pytest.mark.parametrize(
    "m,r,v,eps,delta", [(100, 20, 18, 1.0, 1e-3), (1000, 50, 45, 2.0, 1e-5), (60, 10, 10, 0.5, 0.0)]
)
def test_steinke_p_value_matches_theorem(m, r, v, eps, delta):
    assert one_run.steinke_p_value(m, r, v, eps, delta) == pytest.approx(
        _steinke_direct(m, r, v, eps, delta), rel=1e-9
    )


def _fdp_direct(m, k, v, mu, tau):
    """Mahloujifar et al.'s recursion, every step taken (no early exit), GDP blow-up inverse.

    Phi(Phi^-1(y) - mu) with scipy.special's ndtr/ndtri, the functions stats.norm.cdf/ppf evaluate
    (the same values; without stats' per-call argument handling, ~30x faster in this scalar loop)."""
    g_inv = lambda y: float(special.ndtr(special.ndtri(y) - mu)) if 0 < y < 1 else float(y >= 1)  # noqa: E731
    r, h = tau * v / m, tau * (k - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(h, g_inv(r))
        r = min(r + i / (k - i) * (h_new - h), 1.0)
        h = h_new
    return r + h > k / m


def test_fdp_recursion_matches_direct_formula():
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(50):
        m = int(rng.integers(50, 3000))
        k = int(rng.integers(1, m))
        v = int(rng.integers(0, k + 1))
        mu, tau = float(rng.uniform(0.1, 4)), float(rng.choice([0.05, 0.01, 0.001]))
        got = one_run.fdp_rejects(m, k, v, GaussianDP().g_inv(mu), tau)
        want = _fdp_direct(m, k, v, mu, tau)
        if got != want:  # only a claim on the knife edge may differ (g_inv is rounded down by 1e-12)
            assert not got and _fdp_direct(m, k, v, mu * (1 - 1e-6), tau) is False
        checked += got == want
    assert checked >= 49


def _dpsgd_canaries(seed: int, m: int = 1000, scale: float = 1.0) -> CanaryScoreAuditor:
    """The law of `dptheory audit-run`'s white-box scores: its canary block is never read by the loss,
    so each step moves a canary's coordinate by b + N(0, (scale Z)^2), b ~ Bern(Q) when in; the score
    is the per-step likelihood ratio of the claimed mechanism, summed."""
    rng = np.random.default_rng(seed)
    inc = rng.random(m) < 0.5
    x = rng.normal(scale=Z * scale, size=(T, m)) + (rng.random((T, m)) < Q) * inc
    score = np.logaddexp(np.log1p(-Q), np.log(Q) + (2 * x - 1) / (2 * Z * Z)).sum(axis=0)
    return CanaryScoreAuditor(score[inc], score[~inc], seed=seed)


def _allowed_failures(runs: int, rate: float = 0.05) -> int:
    """Failures that `runs` independent audits at error rate `rate` exceed with probability < 0.001."""
    return int(stats.binom.ppf(0.999, runs, rate))


def test_one_run_sound_on_dpsgd_mechanism_over_seeds():
    """40 runs of DP-SGD at certified eps = 2 (1000 white-box canaries, default two-sided grid): the
    Steinke bound exceeds 2 in no more runs than a 5% error rate allows (binomial, 99.9%).  The f-DP
    bound against the exact curve is checked over seeds in the slow suite
    (tests/cli/test_cli_audit_run.py::test_correct_dpsgd_runs_sound_over_seeds and below)."""
    runs = 40
    est = [_dpsgd_canaries(seed).epsilon_one_run(0.05, 1e-5, False) for seed in range(runs)]
    assert sum(e > 2.0 for e in est) <= _allowed_failures(runs)
    assert np.median(est) > 0.1  # the audit has power here: a bound stuck at 0 would pass vacuously


@pytest.mark.parametrize("strategy", [GuessGrid(), FixedRule(500)])
def test_error_rate_at_the_truth_randomized_response(strategy):
    """Randomized response at eps = 2 (pure DP) is the case where the one-run test is exact: among
    canaries that answer "1", the in-fraction is e^eps / (1 + e^eps), so v is binomial and the
    claim eps = 2 (the truth) is rejected at close to the nominal rate.  Over 300 runs the
    estimate exceeds 2 no more often than 5% allows (binomial, 99.9%)."""
    runs, m, eps = 300, 1000, 2.0
    fails = 0
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        inc = rng.random(m) < 0.5
        flip = rng.random(m) < 1 / (1 + math.exp(eps))
        out = (inc ^ flip).astype(float)
        a = CanaryScoreAuditor(out[inc], out[~inc], seed=seed)
        fails += a.epsilon_one_run(0.05, 0.0, threshold_strategy=strategy) > eps
    assert fails <= _allowed_failures(runs)


@pytest.mark.slow
def test_exact_curve_fdp_sound_and_catches_less_noise():
    rng = np.random.default_rng(3)
    m = 1000
    inc = rng.random(m) < 0.5
    fam = SubsampledGaussian(Q, T)
    out = {}
    for scale in (1.0, 0.25):
        x = rng.normal(scale=Z * scale, size=(T, m)) + (rng.random((T, m)) < Q) * inc
        score = np.logaddexp(np.log1p(-Q), np.log(Q) + (2 * x - 1) / (2 * Z * Z)).sum(axis=0)
        out[scale] = CanaryScoreAuditor(score[inc], score[~inc]).epsilon_one_run_fdp(
            0.05, 1e-5, False, curve=fam
        )
    assert 0 <= out[1.0] < 2.0 < out[0.25]


def test_tpr_at_fpr_and_clopper_pearson():
    a = CanaryScoreAuditor(np.arange(100) + 9.5, np.arange(100))
    assert a.tpr_at_given_fpr(0.0) == pytest.approx(0.10)  # ten in-scores above every out-score
    assert a.tpr_at_given_fpr(0.01) == pytest.approx(0.11)  # jax_privacy's documented example
    assert a.tpr_at_given_fpr(1.0) == 1.0
    # many-run CP bound on mu-GDP scores: below the truth, positive with enough runs
    b = _gdp_scores(3.0, 4000, 1)
    e = b.epsilon_clopper_pearson(0.05, 1e-5)
    assert 0 < e < gaussian_epsilon(1e-5, 3.0)
    assert special.expit(0) == 0.5


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: CanaryScoreAuditor([], [1.0]), "in_canary_scores"),
        (lambda: CanaryScoreAuditor([1.0], [math.nan]), "out_canary_scores"),
        (lambda: CanaryScoreAuditor([1.0], [0.0]).epsilon_one_run(0.7, 1e-5), "significance"),
        (lambda: CanaryScoreAuditor([1.0], [0.0]).epsilon_one_run_fdp(0.05, 0.0), "delta"),
        (lambda: CanaryScoreAuditor([1.0], [0.0]).epsilon_one_run_fdp(0.05, 1e-5, curve="x"), "curve"),
        (lambda: CanaryScoreAuditor([1.0], [0.0]).tpr_at_given_fpr(2.0), "fpr"),
        (
            lambda: CanaryScoreAuditor([1.0], [0.0]).epsilon_one_run(
                0.05, 1e-5, threshold_strategy=GuessGrid((0.5, 0.0))
            ),
            "fractions",
        ),
    ],
)
def test_bad_input_names_parameter(call, name):
    with pytest.raises(InvalidParameter, match=name):
        call()


@pytest.mark.slow
def test_exact_curve_fdp_sound_on_dpsgd_mechanism_over_seeds():
    """As the Steinke test above, for the f-DP bound against the run's exact (subsampled-Gaussian)
    curve, the bound `dptheory audit-run` lets decide for DP-SGD: 20 runs (about 1 s each)."""
    runs, fam = 20, SubsampledGaussian(Q, T)
    est = [_dpsgd_canaries(seed).epsilon_one_run_fdp(0.05, 1e-5, False, curve=fam) for seed in range(runs)]
    assert sum(e > 2.0 for e in est) <= _allowed_failures(runs)
    assert np.median(est) > 0.1
