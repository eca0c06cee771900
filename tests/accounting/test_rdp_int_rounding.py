"""Integer orders stay upper bounds at very large orders (hostile review of the fast paths).

``log C(alpha, k)`` is a difference of ``gammaln`` values of size ~``gammaln(alpha + 1)``; at
alpha = 2e5 its rounding alone (~5e-10 absolute) exceeded the value's own precision, and the RDP
came out 7.7e-11 relative *below* the true value.  The reference here is an independent 60-digit
sum of the (positive) series for A_alpha, truncated, so itself a lower bound on the truth.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from accounting.rdp import subsampled_gaussian_rdp


def _reference_rdp(q: float, sigma: float, alpha: int, terms: int) -> float:
    with mp.workdps(60):
        qq, s = mp.mpf(q), mp.mpf(sigma)
        total, coef = mp.mpf(0), mp.mpf(1)
        for k in range(terms):
            if k:
                coef = coef * (alpha - k + 1) / k
            total += coef * (1 - qq) ** (alpha - k) * qq**k * mp.e ** (mp.mpf(k * k - k) / (2 * s * s))
        return float(mp.log(total) / (alpha - 1))


@pytest.mark.parametrize(
    ("q", "sigma", "alpha", "terms"),
    [
        (1e-5, 1000.0, 200_000, 400),  # terms beyond k = 400 are below 1e-300 of the sum
        (1e-5, 1000.0, 100_000, 400),
        (1e-3, 50.0, 20_000, 400),
        (0.01, 3.0, 2048, 2049),  # here the top terms dominate: the whole series
    ],
)
def test_large_integer_orders_are_upper_bounds(q: float, sigma: float, alpha: int, terms: int) -> None:
    ours = float(subsampled_gaussian_rdp(q, sigma, np.array([float(alpha)]), evaluation="exact").rdp[0])
    ref = _reference_rdp(q, sigma, alpha, terms)
    assert ours >= ref
    assert ours <= ref * (1 + 1e-7)  # the allowance is a few ulps of gammaln(alpha + 1), not more
