"""The PLD accountant below dp-accounting's floating-point resolution of delta.

dp-accounting's composed PMFs carry absolute errors near 1e-15 (its tail truncation and FFT
rounding); at q = 1e-3, z = 5.6566, T = 1e4 the computed infinite-loss mass came out negative and
delta = 1e-100 gave a finite epsilon 0.13, while z = 5.5 and z = 20 (more noise) gave inf: epsilon
rose with z, and calibrate printed 0.13 at delta = 1e-100. ``pld_epsilon`` now reads delta(eps) at
``delta - PLD_DELTA_SLACK`` and is inf at or below the slack.
"""

from __future__ import annotations

import math

import pytest

import dptheory
from accounting.events import SelfComposedEvent, SubsampledGaussianEvent
from accounting.interop import PLD_DELTA_SLACK, pld_epsilon
from dptheory.cli.main import main

Q, T = 1e-3, 10_000


def _event(z: float) -> SelfComposedEvent:
    return SelfComposedEvent(SubsampledGaussianEvent(sample_rate=Q, noise_multiplier=z), T)


@pytest.mark.parametrize("delta", [1e-100, 1e-20, PLD_DELTA_SLACK])
def test_delta_at_or_below_the_slack_is_inf_at_every_noise(delta):
    eps = [pld_epsilon(_event(z), delta) for z in (5.5, 5.656614933718895, 20.0)]
    assert eps == [math.inf] * 3  # so epsilon is non-increasing in z


def test_epsilon_is_read_at_delta_minus_the_slack():
    event = _event(5.656614933718895)
    at = {d: pld_epsilon(event, d) for d in (1e-10, 1e-12, 1e-12 + PLD_DELTA_SLACK)}
    assert at[1e-12] > at[1e-12 + PLD_DELTA_SLACK] > at[1e-10]  # shifted, in the safe direction
    assert at[1e-12] < math.inf


def test_api_epsilon_and_the_exact_gaussian_path_below_the_slack():
    common = dict(delta=1e-100, algo="dpsgd", accountant="pld", steps=T)
    rep = dptheory.epsilon(noise_multiplier=5.656614933718895, sample_rate=Q, **common)
    assert rep.epsilon == math.inf and any("--accountant rdp" in w for w in rep.warnings)
    # q = 1: plain Gaussians, exact mu-GDP in closed form; no grid, so no floor
    assert math.isfinite(dptheory.epsilon(noise_multiplier=200.0, sample_rate=1.0, **common).epsilon)


def test_calibrate_below_the_slack_names_delta(capsys):
    argv = ["calibrate", "--algo", "dpsgd", "--eps", "1", "--delta", "1e-100", "--accountant", "pld"]
    rc = main(argv + ["--sample-rate", "0.001", "--steps", "10000"])
    out, err = capsys.readouterr()
    err = err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and not out
    assert "--delta" in err[0] and "--accountant rdp" in err[0]
