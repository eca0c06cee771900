"""Computed integer-order RDP is never below the exact value, even by one rounding step: the
dominant-term shortcut, the ``log(A - 1)`` path near A = 1, q = 1, and composed sums (60-digit
mpmath references; a hostile review found the first two 1.7e-16 and 3e-16 relative below)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from accounting.rdp import subsampled_gaussian_rdp


def _exact(q: float, sigma: float, alpha: int) -> mp.mpf:
    with mp.workdps(60):
        qq, ss = mp.mpf(q), mp.mpf(sigma)
        if q == 1.0:
            return alpha / (2 * ss * ss)
        terms = (
            mp.binomial(alpha, k) * (1 - qq) ** (alpha - k) * qq**k * mp.e ** ((k * k - k) / (2 * ss * ss))
            for k in range(alpha + 1)
        )
        return mp.log(mp.fsum(terms)) / (alpha - 1)


CASES = [(0.5, 0.3, 16), (1e-9, 1e6, 2), (0.01, 1.0, 12), (0.3, 0.5, 64), (1.0, 0.7, 3), (0.02, 0.05, 5)]


@pytest.mark.parametrize(("q", "sigma", "alpha"), CASES)
def test_reviewer_cases_round_up(q: float, sigma: float, alpha: int) -> None:
    got = subsampled_gaussian_rdp(q, sigma, np.array([float(alpha)])).rdp[0]
    assert mp.mpf(got) >= _exact(q, sigma, alpha)


def test_random_cases_and_compositions_round_up() -> None:
    rng = np.random.default_rng(11)
    for _ in range(40):
        q = float(10 ** rng.uniform(-9, 0)) if rng.random() < 0.9 else 1.0
        sigma = float(10 ** rng.uniform(-1.5, 6))
        alpha = int(rng.integers(2, 40))
        steps = int(rng.integers(1, 10**6))
        got = subsampled_gaussian_rdp(q, sigma, np.array([float(alpha)]), steps=steps).rdp[0]
        ref = _exact(q, sigma, alpha)
        assert mp.mpf(got) >= steps * ref, (q, sigma, alpha, steps)


def test_large_fractional_orders_fall_back_to_the_chord() -> None:
    # the fractional series returned NaN (status 0) here and the order was dropped as "overflow";
    # the chord between the integer neighbours is a rigorous bound (log A convex in alpha)
    orders = np.array([2000.0, 2000.5, 2001.0, 3000.0, 3000.5, 3001.0])
    curve = subsampled_gaussian_rdp(1e-3, 10.0, orders)
    assert curve.dropped == ()
    r = curve.rdp
    assert np.all(np.isfinite(r)) and np.all(np.diff(r) > 0)  # RDP is nondecreasing in alpha
    for i in (1, 4):  # log A at the midpoint <= the chord of log A (plus rounding)
        a0, a, a1 = orders[i - 1 : i + 2]
        chord = 0.5 * ((a0 - 1) * r[i - 1] + (a1 - 1) * r[i + 1])
        assert (a - 1) * r[i] <= chord * (1 + 1e-12)


def _filtered_groups(a: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The review's construction: one huge step plus 400 distinct sample rates whose top-term
    RDP each lands in the lower half of the total's ulp, so every group addition rounds down."""
    rng = np.random.default_rng(seed)
    big_q, big_s = 0.01, 1e-4
    ulp_total = np.spacing(a * np.log(big_q) / (a - 1) + a * (0.5 / (big_s * big_s)))
    qs, ss = [big_q], [big_s]
    while len(qs) < 401:
        q, sg = float(rng.uniform(0.02, 0.5)), float(rng.uniform(0.15, 0.25))
        c = a * np.log(q) / (a - 1) + a * (0.5 / (sg * sg))
        if 0.05 < (c / ulp_total) % 1.0 < 0.45:
            qs.append(q)
            ss.append(sg)
    return np.array(qs), np.array(ss)


def test_many_sample_rates_round_up() -> None:
    # review: the per-group additions into the total rounded down 89 ulps in all
    a = 8.0
    qs, ss = _filtered_groups(a, 0)
    got = subsampled_gaussian_rdp(qs, ss, np.array([a])).rdp[0]
    with mp.workdps(50):  # the dominant term alone is a lower bound on each step's RDP
        terms = zip(qs.tolist(), ss.tolist(), strict=True)
        low = mp.fsum(
            mp.mpf(a) * mp.log(mp.mpf(q)) / (a - 1) + mp.mpf(a) / (2 * mp.mpf(s) ** 2) for q, s in terms
        )
        assert mp.mpf(got) >= low


def test_gaussian_rdp_rounds_up() -> None:
    from accounting.rdp import gaussian_rdp

    rng = np.random.default_rng(5)
    sig = np.r_[0.5327701427184037, 10 ** rng.uniform(-2, 3, 300)]
    orders = np.array([1.5, 2.0, 5.0, 33.0])
    got = gaussian_rdp(sig, orders)
    with mp.workdps(50):
        for i, s in enumerate(sig.tolist()):
            for j, a in enumerate(orders.tolist()):
                assert mp.mpf(got[i, j]) >= mp.mpf(a) / (2 * mp.mpf(s) ** 2), (s, a)
