"""The runner against the papers' qualitative claims on problems with exact answers."""

from __future__ import annotations

import os

import numpy as np
import pytest

from accounting.errors import InvalidParameter
from dptheory import runner


def test_dpsgd_converges_to_the_clipped_fixed_point_not_the_optimum():
    r = runner.run("dpsgd", "dicesgd-b1", c1=1.0, steps=400, device="cpu")
    s = r.summary()
    assert s["dist_to_fixed_point"]["mean"] < 1e-8
    assert s["dist_to_opt"]["mean"] == pytest.approx(0.5, abs=1e-8)  # bias (C'-C)/C' = 1/2 at C = 1
    assert s["x"]["mean"] == pytest.approx(-0.5, abs=1e-8)


def test_dicesgd_removes_the_clipping_bias():
    r = runner.run("dicesgd", "dicesgd-b1", c1=1.0, steps=400, device="cpu")
    assert r.summary()["dist_to_opt"]["mean"] < 1e-8


def test_clip_gd_stuck_and_clip21_gd_converges_on_example1():
    stuck = runner.run("clipsgd", "clip21-example1", tau=1.0, steps=100, device="cpu").summary()
    assert stuck["x"]["mean"] == 1.0 and stuck["dist_to_fixed_point"]["mean"] == 0.0
    ef = runner.run("clip21sgd", "clip21-example1", tau=1.0, steps=300, device="cpu").summary()
    assert ef["dist_to_opt"]["mean"] < 1e-10


def test_seeds_give_mean_and_spread():
    r = runner.run("dpsgd", "quadratic", steps=30, seeds=3, noise_multiplier=1.0, device="cpu")
    s = r.summary()
    vals = np.array(s["final_loss"]["values"])
    assert len(vals) == 3 and s["final_loss"]["std"] == pytest.approx(vals.std(ddof=1))
    assert s["final_loss"]["std"] > 0
    assert r.privacy["private"] and r.privacy["noise_std"] == pytest.approx(1.0 / (0.25 * 64))
    assert s["x"] is None  # not a 1-D problem


def test_runs_are_reproducible():
    a = runner.run("dicesgd", "quadratic", steps=20, noise_multiplier=2.0, seed=4, device="cpu").summary()
    b = runner.run("dicesgd", "quadratic", steps=20, noise_multiplier=2.0, seed=4, device="cpu").summary()
    assert a["final_loss"] == b["final_loss"]


@pytest.mark.parametrize(
    "kw, option",
    [
        (dict(algo="sgd"), "--algo"),
        (dict(beta=0.5), "--beta"),
        (dict(tau=1.0), "--tau"),
        (dict(lr=-1.0), "--lr"),
        (dict(sample_rate=1.5), "--sample-rate"),
        (dict(noise_multiplier=1.0, eps=1.0, delta=1e-5), "--eps"),
        (dict(eps=1.0), "--delta"),
        (dict(steps=0), "--steps"),
        (dict(lr=float("nan")), "--lr"),
    ],
)
def test_bad_settings(kw, option):
    algo = kw.pop("algo", "dpsgd")
    with pytest.raises(InvalidParameter) as exc:
        runner.run(algo, "quadratic", device="cpu", **kw)
    assert exc.value.option == option


def test_plot_is_written_atomically(tmp_path):
    r = runner.run("dpsgd", "dicesgd-b1", steps=20, device="cpu")
    path = tmp_path / "traj.png"
    runner.plot_result(r, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["traj.png"]  # no temporary left behind
    with pytest.raises(InvalidParameter, match="--plot"):
        runner.check_plot_path(str(tmp_path / "missing" / "x.png"))
    with pytest.raises(InvalidParameter, match="--plot"):
        runner.check_plot_path(str(tmp_path / "x.txt"))
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(InvalidParameter, match="--plot"):
            runner.check_plot_path(str(ro / "x.png"))
