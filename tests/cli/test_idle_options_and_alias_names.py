"""Options that would do nothing are one-line errors; errors name the option or keyword the caller
typed (an alias such as ``max_grad_norm``, ``method`` or ``schedule_values`` included); audit-run's
printed ratio is the deciding bound's; PLD's useless inf says where a finite bound is."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dptheory
from accounting.accountant import RdpAccountant
from accounting.errors import InvalidParameter
from dptheory import api
from dptheory.cli.main import main

Z = ["--noise-multiplier", "1", "--delta", "1e-5"]


def _cli(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    "argv,option",
    [
        (["epsilon", "--algo", "dpsgd", *Z, "--evaluation", "exact"], "--evaluation"),
        (["epsilon", "--algo", "dicesgd", *Z, "--evaluation", "bound"], "--evaluation"),
        (["epsilon", "--algo", "clip21sgd2m", *Z, "--evaluation", "exact"], "--evaluation"),
        (["epsilon", "--algo", "d2p2sgd", *Z, "--accountant", "pld", "--evaluation", "exact"],
         "--evaluation"),
        (["epsilon", "--algo", "dpsgd", *Z, "--accountant", "pld", "--conversion", "classic"],
         "--conversion"),
        (["calibrate", "--algo", "dpsgd", "--eps", "1", "--delta", "1e-5", "--accountant", "pld",
          "--conversion", "improved"], "--conversion"),
        (["audit", "--algo", "dicesgd", *Z, "--accountant", "pld"], "--accountant"),
        (["audit", "--algo", "dicesgd", *Z, "--confidence", "0.4"], "--confidence"),
        (["epsilon", "--algo", "dpsgd", *Z, "--max-grad-norm", "1", "--c1", "2"], "--max-grad-norm"),
        (["epsilon", "--algo", "dpsgd", *Z, "--c1", "2", "--max-grad-norm", "1"], "--max-grad-norm"),
        (["epsilon", "--algo", "d2p2sgd", *Z, "--max-grad-norm", "5"], "--max-grad-norm"),
        (["epsilon", "--algo", "dpsgd", *Z, "--max-grad-norm", "-1"], "--max-grad-norm"),
    ],
)  # fmt: skip
def test_idle_or_conflicting_options_are_one_line_errors(argv, option, capsys):
    rc, out, err = _cli(argv, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and out == "" and len(lines) == 1, err
    assert option in lines[0], lines[0]
    if option == "--max-grad-norm":
        assert "--c1:" not in lines[0]  # the option the user typed, not the one it stands for


def _json(argv, capsys) -> dict:
    rc, out, err = _cli([*argv, "--json"], capsys)
    assert rc == 0, err
    return json.loads(out)


def test_max_grad_norm_is_c1_and_rdp_conversion_still_applies(capsys):
    base = ["epsilon", "--algo", "dpsgd", *Z, "--sample-rate", "0.01", "--steps", "100"]
    by_alias = _json([*base, "--max-grad-norm", "3"], capsys)
    by_c1 = _json([*base, "--c1", "3"], capsys)
    default = _json(base, capsys)
    assert by_alias["noise_std"] == by_c1["noise_std"] == pytest.approx(3 * default["noise_std"])
    classic = _json([*base, "--conversion", "classic"], capsys)
    assert classic["epsilon"] > default["epsilon"]  # Balle et al.'s conversion is never worse


GOOD = dict(algo="dpsgd", noise_multiplier=1.0, delta=1e-5, sample_rate=0.01, steps=10)
SCHED = dict(algo="d2p2sgd", noise_multiplier=1.0, delta=1e-5, sample_rate=0.01, model_dim=10)


@pytest.mark.parametrize(
    "kwargs,keyword",
    [
        (dict(GOOD, max_grad_norm=-1.0), "max_grad_norm"),
        (dict(GOOD, max_grad_norm=math.nan), "max_grad_norm"),
        (dict(GOOD, max_grad_norm=1.0, c1=2.0), "max_grad_norm"),
        (dict(SCHED, steps=10, max_grad_norm=5.0), "max_grad_norm"),
        (dict(SCHED, schedule_values=[1.0, -1.0]), "schedule_values"),
        (dict(SCHED, schedule_values=[]), "schedule_values"),
        (dict(SCHED, steps=2, schedule_values=[1.0, -1.0]), "schedule_values"),
        (dict(SCHED, steps=3, schedule_values=[1.0, -1.0]), "schedule_values"),
        (dict(GOOD, method="bogus"), "method"),
        (dict(GOOD, conversion="bogus"), "conversion"),
        (dict(GOOD, accountant="pld", method="classic"), "method"),
        (dict(GOOD, evaluation="exact"), "evaluation"),
    ],
)
def test_api_errors_name_the_keyword_passed(kwargs, keyword):
    with pytest.raises(InvalidParameter) as info:
        api.epsilon(**kwargs)
    assert info.value.option == keyword, info.value
    assert "--" not in str(info.value)


@pytest.mark.parametrize("params", [None, {}, {"algo": "dpsgd"}])
def test_audit_of_a_non_params_names_params(params):
    with pytest.raises(InvalidParameter) as info:
        dptheory.audit(params)
    assert info.value.option == "params"


def test_audit_confidence_below_one_half_is_refused():
    p = api.build_params(algo="dicesgd", noise_multiplier=1.0, delta=1e-5, sample_rate=0.01, steps=10)
    with pytest.raises(InvalidParameter) as info:
        dptheory.audit(p, confidence=0.4, samples=10)
    assert info.value.option == "confidence"


@pytest.mark.parametrize("call", ["keyword", "positional", "result"])
def test_accountant_conversion_errors_name_method(call):
    acc = RdpAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.01)
    with pytest.raises(InvalidParameter) as info:
        if call == "keyword":
            acc.get_epsilon(1e-5, method="bogus")
        elif call == "positional":
            acc.get_epsilon(1e-5, "bogus")
        else:
            acc.get_epsilon_result(1e-5, method="bogus")
    assert info.value.option == "method"


def test_pld_inf_warns_towards_rdp_where_rdp_is_finite():
    kw = dict(algo="dpsgd", noise_multiplier=6.2, sample_rate=0.00025, steps=48, delta=2e-28)
    pld = api.epsilon(accountant="pld", **kw)
    rdp = api.epsilon(**kw)
    assert pld.epsilon == math.inf and math.isfinite(rdp.epsilon)
    assert any("--accountant rdp" in w for w in pld.warnings)
    assert not any("PLD" in w for w in rdp.warnings)


@pytest.mark.parametrize(
    "z,q,steps",
    [(1.0, 0.01, 2000), (0.1, 1.0, 10**9)],  # per-step evaluation; the smooth-schedule bound (T = 1e9)
)
def test_huge_exp_rho_raises_no_raw_numpy_warning(z, q, steps):
    """rho = 1e300: the last steps carry no noise, eps = inf; the overflow is handled (inf RDP is
    sound), so it must not surface as numpy's RuntimeWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = api.epsilon(
            algo="d2psgd", schedule="exp", schedule_rho=1e300, noise_multiplier=z, delta=1e-5,
            sample_rate=q, steps=steps,
        )  # fmt: skip
    assert r.epsilon == math.inf


def _audit_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dptheory.cli.main", "audit-run", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_audit_run_zero_ideal_bound_prints_na(capsys):
    """At eps 0.2 the ideal audit certifies nothing (lower bound 0): run / ideal is undefined.

    In process (what is tested is the printed ratio, not the process); the run seeds torch's global
    generator, whose state is restored afterwards."""
    torch = pytest.importorskip("torch")
    with torch.random.fork_rng(devices=[]):
        rc, out, err = _cli(["audit-run", "--eps", "0.2", "--canaries", "200"], capsys)
    assert rc == 0 and "Traceback" not in err, err
    assert "run / ideal = n/a" in out


@pytest.mark.slow
def test_audit_run_ratio_is_the_deciding_bounds():
    """dicesgd: only Steinke's bound decides, so the ratio is its one and exceeds 1 iff the audit fails
    (the f-DP bound, on DP-SGD's curve, was above the certified epsilon here while the verdict held)."""
    p = _audit_run(
        "--algo", "dicesgd", "--eps", "1", "--residual-clip", "0.5", "--noise-scale", "0.3", "--json"
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    o = json.loads(p.stdout)
    assert o["fdp_in_family"] is False
    assert o["ratio"] == pytest.approx(o["epsilon_lower"] / o["certified_epsilon"])
    assert (o["ratio"] > 1) == o["leaks_more_than_accounted"]


def test_lemma45_closed_form_at_overflowing_noise_is_no_traceback(capsys):
    """rho = 1e-300 grows the noise to ~1e299: z^2 overflows, the lemma's a underflows to 0 (it
    divided by it); the infimum of its closed form is then 0, reached as eta -> inf."""
    from accounting.algorithms.d2p2 import lemma45_epsilon

    assert lemma45_epsilon(0.01, np.array([1e299]), 1e-5) == (0.0, math.inf)
    eps, eta = lemma45_epsilon(0.01, np.array([30.0, 1e299]), 1e-5)  # capped by the smaller z
    assert 0 < eps < math.inf and eta == pytest.approx(30.0**2 * math.log(100.0) / 2)
    argv = ["audit", "--algo", "d2p2sgd", "--delta", "1e-5", "--noise-multiplier", "0.1", "--steps", "1"]
    rc = main([*argv, "--schedule", "exp", "--schedule-rho", "1e-300"])
    assert rc == 0, capsys.readouterr().err
