"""``kl_floor`` with a per-step noise that underflowed to 0.

``calibrate --algo d2psgd --target steps --noise-multiplier 1e-300 --schedule exp --schedule-rho
1e300`` gives steps whose noise z rho^(-k/T) is 0.0 in floating point; kl_floor divided by it and
the command ended in a ZeroDivisionError traceback.
"""

from __future__ import annotations

import math

import pytest

import dptheory
from accounting.errors import InvalidParameter
from accounting.order_screen import kl_floor


def test_zero_noise_step_has_the_largest_total_variation():
    # TV of (1-q) N(0, s^2) + q N(1, s^2) vs N(0, s^2) tends to q as s -> 0; Pinsker: 2 TV^2
    assert kl_floor(0.5, 0.0) == pytest.approx(2 * 0.25, rel=1e-8)
    assert kl_floor(0.5, 0.0) >= kl_floor(0.5, 1e-300) > 0
    assert math.isfinite(kl_floor([0.1, 0.1], [0.0, 2.0], [3, 1]))


def test_underflowing_schedule_is_one_clean_error():
    with pytest.raises(InvalidParameter):
        dptheory.epsilon(
            noise_multiplier=1e-300,
            delta=1e-10,
            algo="d2psgd",
            sample_rate=1e-6,
            steps=3,
            schedule="exp",
            schedule_rho=1e300,
        )
