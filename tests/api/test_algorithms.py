"""Per-algorithm privacy: closed forms, agreement with dp-accounting, claimed vs certified."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from accounting.algorithms import ALGO_NAMES, PrivacyParams, get_algorithm
from accounting.algorithms.clip21 import claimed_epsilon as clip21_claimed
from accounting.algorithms.d2p2 import FASHIONMNIST_CNN_PARAMS, lemma45_epsilon
from accounting.algorithms.dicesgd import theorem37_epsilon, theorem37_gtilde, theorem37_noise_multiplier
from accounting.errors import InvalidParameter
from accounting.orders import DP_ACCOUNTING_ORDERS
from accounting.projection import (
    epsilon_with_failure,
    fixed_gaussian_factor,
    fixed_matrix_factor,
    fresh_gaussian_factor,
)

DELTA = 1e-5
#: A noise multiplier per algorithm at which the default experiment is in a sensible regime.
Z = {"dpsgd": 1.0, "dicesgd": 5.0, "d2p2sgd": 3.0, "d2psgd": 3.0, "dp2sgd": 3.0, "clip21sgd2m": 50.0}


def _params(algo: str, **kw) -> PrivacyParams:
    return PrivacyParams(algo=algo, noise_multiplier=kw.pop("z", Z[algo]), delta=kw.pop("delta", DELTA), **kw)


#: Decaying schedules: also on a shorter run (the full default has 2344 distinct steps).
_SLOW_DEFAULTS = {"d2p2sgd", "d2psgd"}


@pytest.mark.parametrize(
    "algo,extra",
    [(a, {}) for a in ALGO_NAMES] + [(a, {"epochs": 2}) for a in sorted(_SLOW_DEFAULTS)],
)
def test_every_mode_finite_positive_on_defaults(algo, extra):
    alg = get_algorithm(algo)
    assert set(alg.available_modes()) == {"claimed", "certified"}
    for mode in alg.available_modes():
        r = alg.epsilon(_params(algo, **extra), mode)
        assert math.isfinite(r.epsilon) and r.epsilon > 0, (algo, mode, r.epsilon)
        assert r.mode == mode and r.algo == algo
        assert r.defaults_assumed, "defaults must be reported"
        js = r.to_json()
        for key in (
            "algo",
            "mode",
            "accountant",
            "epsilon",
            "delta",
            "noise_multiplier",
            "noise_std",
            "order",
            "sample_rate",
            "steps",
            "assumptions",
            "warnings",
        ):
            assert key in js
        assert isinstance(js["assumptions"], list) and js["assumptions"]


@pytest.mark.parametrize("algo", ALGO_NAMES)
def test_epsilon_decreases_with_noise(algo):
    alg = get_algorithm(algo)
    extra = {"epochs": 2} if algo in _SLOW_DEFAULTS else {}
    for mode in ("claimed", "certified"):
        e1 = alg.epsilon(_params(algo, **extra), mode).epsilon
        e2 = alg.epsilon(_params(algo, z=Z[algo] * 1.5, **extra), mode).epsilon
        assert e2 < e1, (algo, mode)


def test_dpsgd_certified_matches_dp_accounting():
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    orders = tuple(DP_ACCOUNTING_ORDERS.tolist())
    for q, z, t in [(0.02, 1.0, 150), (0.01, 0.8, 1000), (0.1, 2.5, 37), (1.0, 3.0, 5)]:
        r = get_algorithm("dpsgd").epsilon(
            PrivacyParams(
                algo="dpsgd", noise_multiplier=z, delta=DELTA, sample_rate=q, steps=t, orders=orders
            ),
            "certified",
        )
        acc = RdpAccountant(list(orders))
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), t)
        ref = acc.get_epsilon(DELTA)
        assert r.epsilon == pytest.approx(ref, rel=1e-9), (q, z, t)


def test_dpsgd_claimed_is_moments_accountant_and_not_below_certified():
    alg = get_algorithm("dpsgd")
    p = _params("dpsgd")
    claimed = alg.epsilon(p, "claimed")
    certified = alg.epsilon(p, "certified")
    assert claimed.epsilon >= certified.epsilon
    assert claimed.order == int(claimed.order)  # integer orders only
    assert "moments accountant" in claimed.accountant


def test_dpsgd_pld_close_to_rdp_and_below():
    alg = get_algorithm("dpsgd")
    p = _params("dpsgd")
    rdp = alg.epsilon(p, "certified", "rdp").epsilon
    pld = alg.epsilon(p, "certified", "pld").epsilon
    assert 0.6 * rdp < pld <= rdp * 1.01


def test_noise_std_conventions():
    r = get_algorithm("dpsgd").epsilon(_params("dpsgd", z=2.0, c1=0.5), "certified")
    assert r.noise_std == pytest.approx(2.0 * 0.5 / 1000)
    r = get_algorithm("dicesgd").epsilon(_params("dicesgd", z=5.0), "claimed")
    assert r.noise_std == pytest.approx(5.0 * 1.0 / 1000)  # sigma1 = z C1 / B
    r = get_algorithm("clip21sgd2m").epsilon(_params("clip21sgd2m", z=4.0, tau=0.3), "certified")
    assert r.noise_std == pytest.approx(1.2)  # sigma_omega = z tau
    r = get_algorithm("d2p2sgd").epsilon(_params("d2p2sgd", z=3.0, epochs=1), "certified")
    assert r.noise_std == pytest.approx(3.0 / 1024)


# ---------------------------------------------------------------- Clip21-SGD2M


@pytest.mark.parametrize("z,t,tau", [(10.0, 100, 1.0), (3.0, 7, 0.25), (50.0, 1000, 2.0)])
def test_clip21_certified_rdp_closed_form(z, t, tau):
    alg = get_algorithm("clip21sgd2m")
    p, _, _ = alg.resolve(_params("clip21sgd2m", z=z, rounds=t, tau=tau))
    curve = alg.certified_curve(p)
    sigma_omega = z * tau
    closed = t * curve.orders * (2 * tau) ** 2 / (2 * sigma_omega**2)
    np.testing.assert_allclose(curve.rdp, closed, rtol=1e-12)
    # and the reported epsilon is the conversion of exactly this curve
    a = curve.orders
    eps_grid = closed + np.log1p(-1 / a) - (math.log(DELTA) + np.log(a)) / (a - 1)
    r = alg.epsilon(p, "certified")
    assert r.epsilon <= np.min(eps_grid) + 1e-9
    assert r.epsilon >= np.min(eps_grid) - 1e-6 * max(1.0, r.epsilon)


def test_clip21_claimed_formula_by_hand():
    z, t, delta = 40.0, 500, 1e-5
    d1 = delta / (2 * t)
    e1 = math.sqrt(2 * math.log(1.25 / d1)) / z
    expected = math.sqrt(2 * t * math.log(2 / delta)) * e1 + t * e1 * math.expm1(e1)
    eps, eps_round = clip21_claimed(z, delta, t)
    assert eps_round == pytest.approx(e1)
    assert eps == pytest.approx(expected, rel=1e-12)
    r = get_algorithm("clip21sgd2m").epsilon(_params("clip21sgd2m", z=z, rounds=t, delta=delta), "claimed")
    assert r.epsilon == pytest.approx(expected, rel=1e-12)
    # The 2-tau reading is strictly larger.
    assert clip21_claimed(z, delta, t, sensitivity=2.0)[0] > eps


def test_clip21_claimed_warns_outside_thm322():
    r = get_algorithm("clip21sgd2m").epsilon(_params("clip21sgd2m", z=2.0, rounds=10), "claimed")
    assert any("Thm 3.22" in w for w in r.warnings)


def test_clip21_pld_below_rdp():
    alg = get_algorithm("clip21sgd2m")
    p = _params("clip21sgd2m", z=30.0, rounds=50)
    rdp = alg.epsilon(p, "certified", "rdp").epsilon
    pld = alg.epsilon(p, "certified", "pld").epsilon
    assert pld <= rdp * 1.001 and pld > 0.5 * rdp


def test_clip21_rounds_steps_conflict():
    with pytest.raises(InvalidParameter) as e:
        get_algorithm("clip21sgd2m").epsilon(_params("clip21sgd2m", rounds=10, steps=11), "certified")
    assert e.value.option == "--rounds"


# ---------------------------------------------------------------- DiceSGD claimed


def test_theorem37_formula_and_inversion():
    kw = dict(delta=1e-5, steps=150, dataset_size=50_000, batch_size=1000.0, c1=1.0, c2=1.0)
    g = theorem37_gtilde(1.0, 1.0)
    assert g == pytest.approx(3.0)
    z = 4.0
    sigma1 = z * 1.0 / 1000
    expected = math.sqrt(32 * 150 * 3.0 * math.log(1e5)) / (50_000 * sigma1)
    assert theorem37_epsilon(noise_multiplier=z, **kw) == pytest.approx(expected, rel=1e-12)
    zz = theorem37_noise_multiplier(eps=2.0, **kw)
    assert theorem37_epsilon(noise_multiplier=zz, **kw) == pytest.approx(2.0, rel=1e-12)
    # proof reading: G~ = C1^2 + 2 min(B^2 C2^2, G'^2); with a gradient bound both readings agree
    assert theorem37_gtilde(1.0, 1.0, batch_size=1000.0, reading="proof") == pytest.approx(1 + 2e6)
    assert theorem37_gtilde(1.0, 1.0, grad_bound=1.5) == pytest.approx(1 + 2 * 0.25)
    assert theorem37_gtilde(1.0, 1.0, grad_bound=1.5, batch_size=1000.0, reading="proof") == pytest.approx(
        1.5
    )


def test_dicesgd_claimed_checks_conditions():
    alg = get_algorithm("dicesgd")
    r = alg.epsilon(_params("dicesgd", z=3.0, c1=2.0, c2=1.0, sample_rate=0.3), "claimed")
    text = " ".join(r.warnings)
    assert "C1 <= C2" in text and "1/5" in text and "z > 8" in text
    r = alg.epsilon(_params("dicesgd", z=10.0), "claimed")
    assert not r.warnings
    assert any("alternative reading" in a for a in r.assumptions)


def test_dicesgd_certified_is_default_and_refuses_pld():
    alg = get_algorithm("dicesgd")
    r = alg.epsilon(_params("dicesgd", z=2000.0))
    assert r.mode == "certified" and r.label == "certified"
    with pytest.raises(InvalidParameter) as e:
        alg.epsilon(_params("dicesgd"), "certified", "pld")
    assert e.value.option == "--accountant" and "dicesgd" in e.value.message


def test_dicesgd_certified_reduces_to_dpsgd_when_gradients_bounded_by_c1():
    p = dict(z=2.0, grad_bound=0.9)
    dice = get_algorithm("dicesgd").epsilon(_params("dicesgd", **p), "certified").epsilon
    dp = get_algorithm("dpsgd").epsilon(_params("dpsgd", z=2.0), "certified").epsilon
    assert dice == pytest.approx(dp, rel=1e-9)


# ---------------------------------------------------------------- D2P2 family


def test_projection_factors_closed_forms():
    assert fixed_matrix_factor(sigma_max=30.0, p=100) == pytest.approx(3.0)
    a = np.diag([3.0, 1.0, 2.0])
    assert fixed_matrix_factor(a, p=3) == pytest.approx(3.0 / math.sqrt(3))
    t = math.sqrt(2 * math.log(1 / 1e-6))
    assert fixed_gaussian_factor(400, 100, 1e-6) == pytest.approx((20 + 10 + t) / 10)
    x = math.log(1e6)
    assert fresh_gaussian_factor(50, 1e-6) == pytest.approx(math.sqrt(1 + 2 * math.sqrt(x / 50) + 2 * x / 50))


@pytest.mark.parametrize("p", [1, 5, 50, 1000, 26148])
@pytest.mark.parametrize("beta", [1e-2, 1e-6, 1e-12])
def test_fresh_factor_is_a_valid_chi_square_tail_bound(p, beta):
    s = fresh_gaussian_factor(p, beta)
    assert stats.chi2.sf(p * s * s, df=p) <= beta


def test_fixed_gaussian_factor_holds_empirically():
    rng = np.random.default_rng(0)
    d, p, beta = 60, 20, 0.05
    bound = fixed_gaussian_factor(d, p, beta) * math.sqrt(p)
    smax = np.array([np.linalg.norm(rng.standard_normal((d, p)), 2) for _ in range(400)])
    # P(sigma_max > bound) <= beta; the bound is loose, so essentially never exceeded.
    assert np.mean(smax > bound) <= beta


def test_epsilon_with_failure_is_self_consistent():
    def eps_of(factor, delta):
        return 2.0 * factor + math.log(1 / delta) / 50, None

    r = epsilon_with_failure(eps_of, delta=1e-5, projection="fresh", d=100, p=64, steps=100)
    assert r.delta_rdp + r.delta_failure <= 1e-5 * (1 + 1e-12)
    assert r.epsilon == pytest.approx(eps_of(r.factor, r.delta_rdp)[0])
    assert r.factor > 1


@pytest.mark.parametrize("algo", ["d2p2sgd", "dp2sgd"])
@pytest.mark.parametrize("smax_ratio", [1.0, 1.3, 2.2])
def test_d2p2_certified_at_least_claimed_when_factor_ge_1(algo, smax_ratio):
    alg = get_algorithm(algo)
    p_dim = 400
    base = _params(algo, projection="fixed", projection_dim=p_dim, model_dim=1000, epochs=2)
    claimed = alg.epsilon(base, "claimed").epsilon
    cert = alg.epsilon(base.with_(projection_sigma_max=smax_ratio * math.sqrt(p_dim)), "certified").epsilon
    if smax_ratio == 1.0:
        assert cert == pytest.approx(claimed, rel=1e-12)
    else:
        assert cert > claimed
    for proj in ("fresh", "fixed"):
        c = alg.epsilon(base.with_(projection=proj), "certified").epsilon
        assert c >= claimed


def test_d2p2_fixed_gaussian_bound_much_larger_than_fresh():
    alg = get_algorithm("d2p2sgd")
    fresh = alg.epsilon(_params("d2p2sgd", epochs=2), "certified")
    fixed = alg.epsilon(_params("d2p2sgd", epochs=2, projection="fixed"), "certified")
    assert fixed.epsilon > fresh.epsilon
    assert any("chi-square" in a for a in fresh.assumptions)


def test_d2psgd_certified_equals_claimed_and_schedules():
    alg = get_algorithm("d2psgd")
    p = _params("d2psgd", epochs=2)
    assert alg.epsilon(p, "certified").epsilon == pytest.approx(alg.epsilon(p, "claimed").epsilon, rel=1e-12)
    # inv-k decays faster than inv-sqrt-k, which decays faster than constant: more privacy loss
    e = {
        s: alg.epsilon(p.with_(schedule=s), "certified").epsilon for s in ("constant", "inv-sqrt-k", "inv-k")
    }
    assert e["constant"] < e["inv-sqrt-k"] < e["inv-k"]


def test_d2p2_defaults_from_paper():
    alg = get_algorithm("d2p2sgd")
    p, assumed, _ = alg.resolve(_params("d2p2sgd"))
    assert (p.dataset_size, p.batch_size, p.schedule, p.projection) == (60_000, 1024, "inv-sqrt-k", "fresh")
    assert p.model_dim == FASHIONMNIST_CNN_PARAMS == 37354
    assert p.projection_dim == round(0.7 * 37354)
    assert p.steps == math.ceil(40 * 60_000 / 1024)
    assert get_algorithm("dp2sgd").resolve(_params("dp2sgd"))[0].schedule == "constant"
    assert any("--projection-dim" in a for a in assumed)


def test_d2p2_schedule_values_scale_with_base():
    alg = get_algorithm("d2p2sgd")
    vals = (1.0, 0.9, 0.8, 0.7)
    p = _params(
        "d2p2sgd",
        z=2.0,
        schedule_values=vals,
        projection="fixed",
        projection_sigma_max=20.0,
        projection_dim=100,
        model_dim=200,
    )
    r = alg.epsilon(p, "certified")
    assert r.steps == 4
    # same as the explicit schedule of multipliers 2 * vals / factor with factor 2
    from accounting.algorithms.base import curve_epsilon, orders_of
    from accounting.rdp import subsampled_gaussian_rdp

    q = 1024 / 60_000
    ref = curve_epsilon(
        subsampled_gaussian_rdp(q, 2.0 * np.array(vals) / 2.0, orders_of(p)), DELTA, "improved"
    )
    assert r.epsilon == pytest.approx(ref.epsilon, rel=1e-12)
    with pytest.raises(InvalidParameter) as e:
        alg.epsilon(p.with_(steps=5), "certified")
    assert e.value.option == "--steps"


def test_lemma45_closed_form():
    eps, eta = lemma45_epsilon(0.01, np.full(100, 10.0), 1e-5)
    a = 7 * 1e-4 * 100 / 100.0
    assert eta == pytest.approx(min(1 + math.sqrt(math.log(1e5) / a), 100 * math.log(100) / 2))
    assert eps == pytest.approx(a * eta + math.log(1e5) / (eta - 1))
    assert lemma45_epsilon(0.01, np.full(3, 0.5), 1e-5)[0] == math.inf


def test_d2p2_claimed_warnings():
    r = get_algorithm("d2p2sgd").epsilon(_params("d2p2sgd", sample_rate=0.2, epochs=1), "claimed")
    assert any("1/10" in w for w in r.warnings)
    assert any("post-processing" in w for w in r.warnings)


def test_unused_options_are_errors():
    with pytest.raises(InvalidParameter) as e:
        get_algorithm("dpsgd").epsilon(_params("dpsgd", tau=3.0), "certified")
    assert e.value.option == "--tau"
    with pytest.raises(InvalidParameter) as e:
        get_algorithm("d2psgd").epsilon(_params("d2psgd", projection_dim=3), "certified")
    assert e.value.option == "--projection-dim"


def test_sampling_resolution_conflicts():
    alg = get_algorithm("dpsgd")
    with pytest.raises(InvalidParameter) as e:
        alg.epsilon(_params("dpsgd", sample_rate=0.5, batch_size=10, dataset_size=100), "certified")
    assert e.value.option == "--sample-rate"
    with pytest.raises(InvalidParameter) as e:
        alg.epsilon(_params("dpsgd", steps=10, epochs=1), "certified")
    assert e.value.option == "--epochs"
    p, _, _ = alg.resolve(_params("dpsgd", sample_rate=0.01))
    assert (p.dataset_size, p.batch_size, p.steps) == (50_000, 500.0, 300)


# ---------------------------------------------------------------- properties (hypothesis)


@given(
    q=st.floats(1e-3, 1.0),
    z=st.floats(0.5, 20.0),
    t=st.integers(1, 2000),
)
def test_dpsgd_claimed_never_below_certified(q, z, t):
    alg = get_algorithm("dpsgd")
    p = PrivacyParams(algo="dpsgd", noise_multiplier=z, delta=DELTA, sample_rate=q, steps=t)
    assert alg.epsilon(p, "claimed").epsilon >= alg.epsilon(p, "certified").epsilon * (1 - 1e-12)


D2P2_CASES = dict(
    q=st.floats(1e-3, 0.5),
    z=st.floats(0.5, 10.0),
    t=st.integers(1, 60),
    p_dim=st.integers(1, 5000),
    d_dim=st.integers(1, 5000),
    proj=st.sampled_from(["fresh", "fixed"]),
    sched=st.sampled_from(["constant", "inv-k", "inv-sqrt-k"]),
)


# 8 examples in the default run (about 0.15 s each), the full 25 behind slow.
@settings(max_examples=8)
@given(**D2P2_CASES)
def test_d2p2_certified_never_below_claimed(q, z, t, p_dim, d_dim, proj, sched):
    _check_d2p2_certified_never_below_claimed(q, z, t, p_dim, d_dim, proj, sched)


@pytest.mark.slow
@settings(max_examples=25)
@given(**D2P2_CASES)
def test_d2p2_certified_never_below_claimed_more_examples(q, z, t, p_dim, d_dim, proj, sched):
    _check_d2p2_certified_never_below_claimed(q, z, t, p_dim, d_dim, proj, sched)


def _check_d2p2_certified_never_below_claimed(q, z, t, p_dim, d_dim, proj, sched) -> None:
    alg = get_algorithm("d2p2sgd")
    p_dim = min(p_dim, d_dim)  # a projection reduces dimension (p > d is refused)
    p = PrivacyParams(
        algo="d2p2sgd",
        noise_multiplier=z,
        delta=DELTA,
        sample_rate=q,
        steps=t,
        projection_dim=p_dim,
        model_dim=d_dim,
        projection=proj,
        schedule=sched,
    )
    cert = alg.epsilon(p, "certified")
    assert cert.epsilon >= alg.epsilon(p, "claimed").epsilon
    if not math.isfinite(cert.epsilon):
        assert any("no finite certified epsilon" in w for w in cert.warnings)
