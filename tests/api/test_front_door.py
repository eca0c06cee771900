"""Issue 19 §1, §2 and §5: the first screen of ``calibrate --algo dicesgd``, Opacus's name
``max_grad_norm``, and ``--evaluation exact|auto|bound``."""

from __future__ import annotations

import json

import pytest

from accounting.errors import InvalidParameter
from dptheory import api
from dptheory.cli.main import main

CARD = ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dicesgd"]


def _run(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


# -- §1 the first screen ------------------------------------------------------------------------


def test_card_shows_the_trainable_noise_on_the_first_screen(capsys):
    rc, out, _ = _run(capsys, CARD)
    assert rc == 0
    first = "\n".join(out.splitlines()[:14])
    assert "noise multiplier z  52466.9961" in first
    assert "z = 1.514" in first and "--residual-clip 0.5" in first and "--grad-bound 1.5" in first
    assert "z = 52467" in first  # the certified number, rounded up, named in the same sentence


def test_trainable_noise_is_the_residual_clip_and_gradient_bound_calibration(capsys):
    rc, out, _ = _run(capsys, [*CARD, "--json"])
    alt = json.loads(out)["trainable_alternative"]
    clipped = api.calibrate(defaults="paper", eps=2, delta=1e-5, algo="dicesgd", residual_clip=0.5)
    bounded = api.calibrate(defaults="paper", eps=2, delta=1e-5, algo="dicesgd", grad_bound=1.5)
    dpsgd = api.calibrate(defaults="paper", eps=2, delta=1e-5, algo="dpsgd")  # same q, T
    assert alt["noise_multiplier"] == clipped.noise_multiplier
    assert bounded.noise_multiplier == pytest.approx(alt["noise_multiplier"], rel=1e-12)
    # the flush regime: DiceSGD is DP-SGD clipped at C1 + R, whose z is in units of C1 + R
    assert alt["flush_regime"] and alt["dpsgd_clip"] == 1.5
    assert alt["dpsgd_noise_multiplier"] == pytest.approx(dpsgd.noise_multiplier, rel=2e-6)
    assert alt["epsilon"] <= 2


def test_no_hint_once_the_residual_is_clipped(capsys):
    rc, out, _ = _run(capsys, [*CARD, "--residual-clip", "0.5", "--json"])
    assert rc == 0 and "trainable_alternative" not in json.loads(out)


# -- §2 Opacus's name for the clip norm --------------------------------------------------------


def test_max_grad_norm_is_c1():
    kw = dict(noise_multiplier=1.1, delta=1e-5, algo="dpsgd", sample_rate=0.01, steps=100)
    a = api.epsilon(max_grad_norm=2.0, **kw)
    b = api.epsilon(c1=2.0, **kw)
    one = api.epsilon(c1=1.0, **kw)
    assert a.parameters["c1"] == 2.0 and a.noise_std == b.noise_std == pytest.approx(2 * one.noise_std)
    assert api.calibrate(eps=1.0, delta=1e-5, algo="dicesgd", sample_rate=0.02, steps=50, batch_size=100,
                         max_grad_norm=3.0, residual_clip=1.0).parameters["c1"] == 3.0  # fmt: skip
    with pytest.raises(InvalidParameter, match="max_grad_norm"):
        api.epsilon(max_grad_norm=2.0, c1=1.0, **kw)


def test_cli_max_grad_norm_is_c1(capsys):
    base = ["epsilon", "--noise-multiplier", "1", "--delta", "1e-5", "--algo", "dpsgd", "--json"]
    _, a, _ = _run(capsys, [*base, "--max-grad-norm", "3"])
    _, b, _ = _run(capsys, [*base, "--c1", "3"])
    assert json.loads(a)["noise_std"] == json.loads(b)["noise_std"] == pytest.approx(3 / 1000)


# -- §5 exact where cheap ----------------------------------------------------------------------

SCHED = dict(algo="d2psgd", delta=1e-5, schedule="inv-k", sample_rate=0.02, steps=600, noise_multiplier=8.0)
INT_ORDERS = [2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0]


def _evaluation_note(report) -> str:
    (note,) = [a for a in report.assumptions if a.startswith("evaluation:")]
    return note


def test_auto_is_exact_and_agrees_with_dp_accounting():
    """600 distinct steps: the smooth bound used to be taken (>= 500 steps); auto is now exact."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as dp_rdp

    from accounting.schedules import noise_multipliers

    auto = api.epsilon(orders=INT_ORDERS, **SCHED)
    exact = api.epsilon(orders=INT_ORDERS, evaluation="exact", **SCHED)
    bound = api.epsilon(orders=INT_ORDERS, evaluation="bound", **SCHED)
    assert _evaluation_note(auto).startswith("evaluation: exact")
    assert _evaluation_note(bound).startswith("evaluation: bound (smooth-schedule bound)")
    acc = dp_rdp.RdpAccountant(INT_ORDERS)
    zs = noise_multipliers("inv-k", 8.0, 600)
    acc.compose(dpa.ComposedDpEvent([dpa.PoissonSampledDpEvent(0.02, dpa.GaussianDpEvent(z)) for z in zs]))
    ref = acc.get_epsilon(1e-5)
    assert auto.epsilon == exact.epsilon == pytest.approx(ref, rel=1e-9)
    assert bound.epsilon >= exact.epsilon and bound.epsilon > ref * (1 + 1e-7)  # a (sound) bound


def test_auto_keeps_the_bound_where_exact_is_slow():
    from accounting.algorithms.d2p2 import exact_is_cheap

    assert exact_is_cheap(2000) and not exact_is_cheap(2001)
    rep = api.epsilon(**dict(SCHED, steps=3000))
    assert _evaluation_note(rep).startswith("evaluation: bound")


def test_constant_schedule_is_exact_under_every_rule():
    kw = dict(SCHED, schedule="constant", steps=5000)
    values = {e: api.epsilon(evaluation=e, **kw).epsilon for e in ("auto", "exact", "bound")}
    assert len(set(values.values())) == 1


def test_bad_evaluation_is_one_line(capsys):
    with pytest.raises(InvalidParameter, match="evaluation"):
        api.epsilon(evaluation="fast", **SCHED)
    rc, out, err = _run(
        capsys,
        ["epsilon", "--algo", "d2psgd", "--noise-multiplier", "8", "--delta", "1e-5", "--evaluation", "x"],
    )
    assert rc == 2 and out == "" and err.count("\n") == 1 and "--evaluation" in err


def test_cli_prints_which_evaluation(capsys):
    argv = ["epsilon", "--algo", "d2psgd", "--noise-multiplier", "8", "--delta", "1e-5"]
    argv += ["--schedule", "inv-k", "--sample-rate", "0.02", "--steps", "600"]
    _, out, _ = _run(capsys, argv)
    assert "evaluation: exact" in out
    _, out, _ = _run(capsys, [*argv, "--evaluation", "bound"])
    assert "evaluation: bound" in out


def test_figures_without_out_writes_a_temporary_folder(tmp_path, monkeypatch, capsys):
    """``dptheory figures`` in a checkout never rewrites the tracked figures/ unless --out says so."""
    import pathlib
    import shutil

    monkeypatch.chdir(tmp_path)
    rc, out, _ = _run(capsys, ["figures", "--quick", "--only", "epsilon_schedules.png"])
    assert rc == 0
    written = pathlib.Path(out.strip())
    assert written.name == "epsilon_schedules.png" and written.is_file()
    assert written.parent.name.startswith("dptheory-figures-") and list(tmp_path.iterdir()) == []
    shutil.rmtree(written.parent)


@pytest.mark.parametrize("fn", [api.epsilon, api.calibrate])
def test_docstring_lists_every_option(fn):
    """``help(dptheory.epsilon)`` / ``help(dptheory.calibrate)`` name every option build_params accepts."""
    names = (*api._OPTION_FIELDS, "schedule_file", "orders", "conversion", "method", "max_grad_norm")
    missing = [n for n in names if f"``{n}``" not in fn.__doc__]
    assert not missing, missing
