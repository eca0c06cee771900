"""The smooth-schedule bound's closed-form step sums, beyond the cells summed term by term.

Hostile review: no test reached cells of more than ``_DIRECT_MAX`` steps, where the closed forms
take over, and the inv-sqrt-k one (a midpoint rule, which *under*-estimates the sum of a concave
function) made the bound 1.6e-7 below the truth.  Two independent references: the exact sums by
``math.fsum`` (and mpmath where the count is large), and, at q = 1, the composed RDP in closed
form, ``alpha * sum_k 1 / (2 sigma_k^2)`` (the Gaussian mechanism's RDP is linear in s).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from accounting.schedule_bound import _DIRECT_MAX, _sum_s, smooth_schedule_rdp
from accounting.schedules import noise_multipliers


def _exact_sum(name: str, sigma: float, steps: int, rho: float, a: int, b: int) -> float:
    if name == "inv-sqrt-k" and b - a > 10**6:
        with mp.workdps(40):  # Hurwitz zeta: sum_{k=a}^{b} k^(1/2)
            tot = mp.zeta(-0.5, a) - mp.zeta(-0.5, b + 1)
            return float(tot / (2 * mp.mpf(sigma) ** 2))
    k = np.arange(a, b + 1, dtype=float)
    if name == "inv-k":
        sk = sigma / np.sqrt(k)
    elif name == "inv-sqrt-k":
        sk = sigma / k**0.25
    else:
        sk = sigma * np.exp(-(k / steps) * math.log(rho))
    return math.fsum((0.5 / (sk * sk)).tolist())


@pytest.mark.parametrize("name", ["inv-k", "inv-sqrt-k", "exp"])
@pytest.mark.parametrize(
    ("a", "b"),
    [(1, _DIRECT_MAX + 1), (1, 5000), (100, 20_000), (10_000, 15_000), (1, 200_000), (10**6, 12 * 10**5)],
)
def test_closed_form_sums_bracket_the_exact_sum(name: str, a: int, b: int) -> None:
    steps, sigma, rho = max(b, 2), 1.7, 3.0
    lo, up = _sum_s(name, sigma, steps, rho, np.array([a]), np.array([b]))
    exact = _exact_sum(name, sigma, steps, rho, a, b)
    assert lo[0] <= exact <= up[0]
    assert up[0] - lo[0] <= 1e-3 * exact  # a bracket, not a vacuous one


@pytest.mark.parametrize(("steps", "ratio"), [(5000, 10.0), (4097, 1000.0), (20_000, 1.05)])
@pytest.mark.parametrize("name", ["inv-k", "inv-sqrt-k", "exp"])
def test_q1_bound_is_above_the_closed_form(name: str, steps: int, ratio: float) -> None:
    orders = np.array([2.0, 3.0, 8.0, 32.0])
    curve = smooth_schedule_rdp(name, 1.0, 1.0, steps, orders, rho=2.0, ratio=ratio, budget=0)
    z = noise_multipliers(name, 1.0, steps, rho=2.0)
    exact = orders * math.fsum((0.5 / (z * z)).tolist())
    assert np.all(curve.rdp >= exact)
    assert np.all(curve.rdp <= exact * (1 + 1e-6))
