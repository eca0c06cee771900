"""dptheory.epsilon / dptheory.calibrate: validation, calibration conservativeness, c2 auto."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dptheory
from accounting.algorithms import ALGO_NAMES, PrivacyParams, get_algorithm
from accounting.errors import InvalidParameter, UnreachableTarget, python_name
from dptheory import api

DELTA = 1e-5
#: Small experiments so that every calibration stays fast.
SMALL = {
    "dpsgd": {},
    "dicesgd": {},
    "d2p2sgd": {"epochs": 2},
    "d2psgd": {"epochs": 2},
    "dp2sgd": {"epochs": 2},
    "clip21sgd2m": {"rounds": 200},
}


def test_lazy_reexports():
    assert dptheory.calibrate is api.calibrate
    assert dptheory.epsilon is api.epsilon
    assert dptheory.PrivacyReport.__name__ == "PrivacyReport"
    assert dptheory.__version__
    with pytest.raises(AttributeError):
        dptheory.does_not_exist  # noqa: B018


def test_api_epsilon_matches_algorithm():
    r = dptheory.epsilon(
        defaults="paper", noise_multiplier=1.1, delta=DELTA, algo="dpsgd", sample_rate=0.01, steps=500
    )
    ref = get_algorithm("dpsgd").epsilon(
        PrivacyParams(algo="dpsgd", noise_multiplier=1.1, delta=DELTA, sample_rate=0.01, steps=500)
    )
    assert r.epsilon == ref.epsilon and r.order == ref.order
    classic = dptheory.epsilon(
        defaults="paper",
        noise_multiplier=1.1,
        delta=DELTA,
        algo="dpsgd",
        sample_rate=0.01,
        steps=500,
        method="classic",
    )
    assert classic.epsilon > r.epsilon


# slow: the claimed mode of the two D2P2 variants (their calibration is the same search as the other
# algorithms' claimed mode; the certified D2P2 cases, on the harder schedule bounds, stay by default)
_CLAIMED_SLOW = ("d2p2sgd", "d2psgd")


@pytest.mark.parametrize(
    "mode,algo",
    [
        pytest.param(mode, algo, marks=pytest.mark.slow)
        if mode == "claimed" and algo in _CLAIMED_SLOW
        else pytest.param(mode, algo)
        for mode in ("claimed", "certified")
        for algo in ALGO_NAMES
    ],
)
def test_calibration_is_conservative_and_tight(algo, mode):
    target = 2.0 if algo != "clip21sgd2m" else 8.0
    r = dptheory.calibrate(defaults="paper", eps=target, delta=DELTA, algo=algo, mode=mode, **SMALL[algo])
    assert r.epsilon <= target
    assert r.calibration["target"] == "noise_multiplier"
    # Within the documented tolerance: a slightly smaller z misses the target.
    below = dptheory.epsilon(
        defaults="paper",
        noise_multiplier=r.noise_multiplier * (1 - 1e-5),
        delta=DELTA,
        algo=algo,
        mode=mode,
        **SMALL[algo],
    )
    assert below.epsilon > target
    again = dptheory.epsilon(
        defaults="paper",
        noise_multiplier=r.noise_multiplier,
        delta=DELTA,
        algo=algo,
        mode=mode,
        **SMALL[algo],
    )
    assert again.epsilon == pytest.approx(r.epsilon, rel=1e-12)


def test_calibrate_dicesgd_claimed_matches_theorem37_inversion():
    from accounting.algorithms.dicesgd import theorem37_noise_multiplier

    r = dptheory.calibrate(defaults="paper", eps=2.0, delta=DELTA, algo="dicesgd", mode="claimed")
    z = theorem37_noise_multiplier(
        eps=2.0, delta=DELTA, steps=150, dataset_size=50_000, batch_size=1000.0, c1=1.0, c2=1.0
    )
    assert r.noise_multiplier == pytest.approx(z, rel=2e-6)
    assert r.noise_multiplier >= z * (1 - 1e-12)


def test_calibrate_steps():
    r = dptheory.calibrate(
        defaults="paper",
        eps=2.0,
        delta=DELTA,
        algo="dpsgd",
        target="steps",
        noise_multiplier=1.0,
        sample_rate=0.02,
    )
    assert r.epsilon <= 2.0
    over = dptheory.epsilon(
        defaults="paper", noise_multiplier=1.0, delta=DELTA, algo="dpsgd", sample_rate=0.02, steps=r.steps + 1
    )
    assert over.epsilon > 2.0
    r = dptheory.calibrate(
        defaults="paper", eps=3.0, delta=DELTA, algo="clip21sgd2m", target="steps", noise_multiplier=30.0
    )
    assert r.epsilon <= 3.0 and r.parameters["rounds"] == r.steps
    with pytest.raises(UnreachableTarget):
        dptheory.calibrate(
            defaults="paper",
            eps=0.01,
            delta=DELTA,
            algo="dpsgd",
            target="steps",
            noise_multiplier=0.3,
            sample_rate=1.0,
        )


@pytest.mark.slow
def test_calibrate_pld_dpsgd():
    kw = dict(sample_rate=0.05, steps=20)
    r = dptheory.calibrate(defaults="paper", eps=2.0, delta=DELTA, algo="dpsgd", accountant="pld", **kw)
    rdp = dptheory.calibrate(defaults="paper", eps=2.0, delta=DELTA, algo="dpsgd", **kw)
    assert r.epsilon <= 2.0 and r.accountant == "pld"
    assert r.noise_multiplier <= rdp.noise_multiplier * 1.001


@pytest.mark.parametrize(
    "kwargs,option",
    [
        (dict(eps=0.0), "--eps"),
        (dict(eps=-1.0), "--eps"),
        (dict(eps=math.nan), "--eps"),
        (dict(delta=0.0), "--delta"),
        (dict(delta=1.0), "--delta"),
        (dict(delta=math.nan), "--delta"),
        (dict(algo="sgd"), "--algo"),
        (dict(sample_rate=0.0), "--sample-rate"),
        (dict(sample_rate=1.5), "--sample-rate"),
        (dict(sample_rate=math.nan), "--sample-rate"),
        (dict(steps=0), "--steps"),
        (dict(steps=-3), "--steps"),
        (dict(batch_size=0), "--batch-size"),
        (dict(batch_size=-1.0), "--batch-size"),
        (dict(dataset_size=0), "--dataset-size"),
        (dict(c1=-1.0), "--c1"),
        (dict(accountant="exact"), "--accountant"),
        (dict(mode="optimistic"), "--mode"),
        (dict(orders="0.5,2"), "--orders"),
        (dict(conversion="fancy"), "--conversion"),
    ],
)
def test_calibrate_bad_input(kwargs, option):
    args = dict(eps=2.0, delta=DELTA, algo="dpsgd")
    args.update(kwargs)
    with pytest.raises(InvalidParameter) as e:
        dptheory.calibrate(defaults="paper", **args)
    assert e.value.option == python_name(option)  # the API names its keyword


@pytest.mark.parametrize(
    "kwargs,option",
    [
        (dict(noise_multiplier=0.0), "--noise-multiplier"),
        (dict(noise_multiplier=-2.0), "--noise-multiplier"),
        (dict(noise_multiplier=math.nan), "--noise-multiplier"),
        (dict(noise_multiplier=math.inf), "--noise-multiplier"),
        (dict(noise_multiplier=None), "--noise-multiplier"),
    ],
)
def test_epsilon_bad_noise(kwargs, option):
    args = dict(noise_multiplier=1.0, delta=DELTA, algo="dpsgd")
    args.update(kwargs)
    with pytest.raises(InvalidParameter) as e:
        dptheory.epsilon(defaults="paper", **args)
    assert e.value.option == python_name(option)  # the API names its keyword


def test_schedule_file(tmp_path):
    f = tmp_path / "sched.txt"
    f.write_text("4\n3\n2\n1\n")
    r = dptheory.epsilon(defaults="paper", delta=DELTA, algo="d2psgd", schedule_file=str(f))
    assert r.steps == 4 and r.noise_multiplier == 1.0
    r2 = dptheory.epsilon(
        defaults="paper", noise_multiplier=2.0, delta=DELTA, algo="d2psgd", schedule_file=str(f)
    )
    assert r2.epsilon < r.epsilon
    c = dptheory.calibrate(defaults="paper", eps=1.0, delta=DELTA, algo="d2psgd", schedule_file=str(f))
    assert c.epsilon <= 1.0 and c.steps == 4
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    for path in (str(empty), str(tmp_path / "missing.txt")):
        with pytest.raises(InvalidParameter) as e:
            dptheory.epsilon(defaults="paper", delta=DELTA, algo="d2psgd", schedule_file=path)
        assert e.value.option == "schedule_file"
    bad = tmp_path / "bad.txt"
    bad.write_text("1\nfoo\n")
    with pytest.raises(InvalidParameter) as e:
        dptheory.epsilon(defaults="paper", delta=DELTA, algo="d2psgd", schedule_file=str(bad))
    assert e.value.option == "schedule_file"


def test_unknown_schedule_name():
    with pytest.raises(InvalidParameter) as e:
        dptheory.epsilon(
            defaults="paper", noise_multiplier=3.0, delta=DELTA, algo="d2p2sgd", schedule="cosine"
        )
    assert e.value.option == "schedule"


def test_c2_auto_calibrate_keeps_noise_within_ratio():
    ratio = 1.5
    dp = dptheory.calibrate(defaults="paper", eps=2.0, delta=DELTA, algo="dpsgd")
    r = dptheory.calibrate(
        defaults="paper", eps=2.0, delta=DELTA, algo="dicesgd", c2="auto", max_noise_ratio=ratio
    )
    assert r.epsilon <= 2.0
    assert r.noise_multiplier <= ratio * dp.noise_multiplier * (1 + 1e-5)
    assert any(a.startswith("--c2 auto") for a in r.defaults_assumed)
    c2 = r.parameters["c2"]
    assert 0 < c2 < math.inf


def test_c2_auto_epsilon():
    z = 3.0
    r = dptheory.epsilon(
        defaults="paper", noise_multiplier=z, delta=DELTA, algo="dicesgd", c2="auto", max_noise_ratio=1.2
    )
    dp = dptheory.epsilon(defaults="paper", noise_multiplier=z / 1.2, delta=DELTA, algo="dpsgd")
    assert r.epsilon <= dp.epsilon * (1 + 1e-9)


def test_unreachable_calibration_target():
    # DiceSGD certified without a gradient bound: T steps of hidden-state shift; still reachable,
    # so use a steps target that even one step cannot meet instead.
    with pytest.raises(UnreachableTarget) as e:
        dptheory.calibrate(
            defaults="paper", eps=1e-3, delta=DELTA, algo="clip21sgd2m", target="steps", noise_multiplier=1.0
        )
    assert e.value.option == "eps"


def test_compare_has_three_rows():
    out = api.compare(defaults="paper", eps=2.0, delta=DELTA, algo="dpsgd")
    assert out["claimed"].mode == "claimed" and out["certified"].mode == "certified"
    assert out["claimed"].noise_multiplier == out["certified"].noise_multiplier == out["noise_multiplier"]
    assert "audit" in out


@settings(max_examples=15)
@given(
    algo=st.sampled_from(["dpsgd", "clip21sgd2m", "dp2sgd"]),
    mode=st.sampled_from(["claimed", "certified"]),
    eps=st.floats(0.2, 10.0),
    log_delta=st.floats(-9.0, -3.0),
    q=st.floats(1e-3, 0.3),
    t=st.integers(1, 400),
)
def test_calibration_conservative_property(algo, mode, eps, log_delta, q, t):
    delta = 10.0**log_delta
    kw = {"rounds": t} if algo == "clip21sgd2m" else {"sample_rate": q, "steps": t}
    r = dptheory.calibrate(defaults="paper", eps=eps, delta=delta, algo=algo, mode=mode, **kw)
    assert r.epsilon <= eps
    lower = dptheory.epsilon(
        defaults="paper",
        noise_multiplier=r.noise_multiplier / (1 + 2e-6),
        delta=delta,
        algo=algo,
        mode=mode,
        **kw,
    )
    assert lower.epsilon > eps or r.noise_multiplier <= 1e-12 * 4


def test_api_never_assumes_a_dataset():
    """Without defaults='paper', the quantities that fix q and T must be given (issue: a silent
    N = 50 000 turned a request for eps = 3 into eps = 6.27 on a 10 000-example dataset)."""
    with pytest.raises(InvalidParameter, match="sample_rate"):
        api.calibrate(eps=3, delta=1e-5, algo="dpsgd", batch_size=256, epochs=5)
    with pytest.raises(InvalidParameter, match="steps"):
        api.epsilon(noise_multiplier=1.0, delta=1e-5, algo="dpsgd", sample_rate=0.01)
    with pytest.raises(InvalidParameter, match="rounds"):
        api.epsilon(noise_multiplier=10.0, delta=1e-5, algo="clip21sgd2m")
    with pytest.raises(InvalidParameter, match="defaults"):
        api.epsilon(
            noise_multiplier=1.0, delta=1e-5, algo="dpsgd", sample_rate=0.01, steps=10, defaults="cifar"
        )
    explicit = api.calibrate(eps=3, delta=1e-5, algo="dpsgd", batch_size=256, dataset_size=10_000, epochs=5)
    over = api.epsilon(
        noise_multiplier=explicit.noise_multiplier,
        delta=1e-5,
        algo="dpsgd",
        batch_size=256,
        dataset_size=10_000,
        epochs=5,
    )
    assert over.epsilon <= 3.0
    assert explicit.sample_rate == pytest.approx(256 / 10_000)


def test_options_that_do_not_apply_are_errors():
    with pytest.raises(InvalidParameter, match="projection_dim"):
        api.epsilon(
            noise_multiplier=1.0, delta=1e-5, algo="dpsgd", sample_rate=0.01, steps=10, projection_dim=5
        )
    with pytest.raises(InvalidParameter, match="max_noise_ratio"):
        api.epsilon(noise_multiplier=1.0, delta=1e-5, algo="dicesgd", defaults="paper", max_noise_ratio=1.2)
    with pytest.raises(InvalidParameter, match="max_noise_ratio"):
        api.epsilon(
            noise_multiplier=1.0, delta=1e-5, algo="dicesgd", defaults="paper", c2="auto", max_noise_ratio=0.5
        )
    with pytest.raises(InvalidParameter, match="c2"):
        api.epsilon(noise_multiplier=1.0, delta=1e-5, algo="dpsgd", defaults="paper", c2="auto")
