"""Extreme noise multipliers give their answer without numpy RuntimeWarnings.

A warning is printed by Python on stderr with its source line, so the command line showed three
extra lines: ``z^2`` underflowing to 0 at z = 1e-300 (plain Gaussian RDP, Clip21) and ``g * g``
overflowing in the sigma grid at z = 1e300 (a long D2P2 schedule).
"""

from __future__ import annotations

import math
import warnings

import dptheory


def _quiet(**kw) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return dptheory.epsilon(delta=1e-5, **kw).epsilon


def test_gaussian_rdp_at_tiny_noise_is_inf_without_a_warning():
    assert _quiet(algo="clip21sgd2m", noise_multiplier=1e-300, rounds=1) == math.inf


def test_sigma_grid_at_huge_noise_is_zero_without_a_warning():
    eps = _quiet(
        algo="d2psgd",
        noise_multiplier=1e300,
        sample_rate=0.01,
        steps=3_000_000,
        schedule="exp",
        schedule_rho=0.5,
        evaluation="bound",
    )
    assert eps == 0.0
