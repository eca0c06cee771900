"""Skipping the alpha-chord where its closed-form lower bound exceeds the series
(``accounting._frac_chord._chord_cannot_win``) changes no value, bit for bit, and does skip in
the ordinary regime (else the speed-up silently went away)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from accounting import _frac_chord
from accounting.orders import DEFAULT_ORDERS
from accounting.rdp import subsampled_gaussian_rdp, subsampled_gaussian_rdp_steps


def _never_skip(cand, alpha, rows, q, s):
    return np.zeros(rows.size, dtype=bool)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


@given(
    log_q=st.floats(-7.0, 0.0, exclude_max=True),
    log_sigma=st.floats(-0.7, 6.0),
    spread=st.floats(0.0, 0.5),
    steps=st.integers(1, 6),
    extra=st.lists(st.floats(1.001, 30.0), min_size=1, max_size=6),
)
def test_skipping_the_chord_changes_no_bit(log_q, log_sigma, spread, steps, extra):
    orders = np.unique(np.concatenate([DEFAULT_ORDERS, extra]))
    q = 10.0**log_q
    sig = 10.0**log_sigma * np.exp(spread * np.linspace(-1.0, 1.0, steps))
    with_skip = subsampled_gaussian_rdp_steps(np.full(steps, q), sig, orders)
    total_skip = subsampled_gaussian_rdp(q, sig[0], orders, steps=7).rdp
    original = _frac_chord._chord_cannot_win
    _frac_chord._chord_cannot_win = _never_skip
    try:
        without = subsampled_gaussian_rdp_steps(np.full(steps, q), sig, orders)
        total_without = subsampled_gaussian_rdp(q, sig[0], orders, steps=7).rdp
    finally:
        _frac_chord._chord_cannot_win = original
    assert _same_bits(with_skip, without)
    assert _same_bits(total_skip, total_without)


def test_the_chord_is_skipped_in_the_ordinary_regime_and_kept_near_a_equal_to_one(monkeypatch):
    seen = []
    original = _frac_chord._chord_cannot_win

    def spy(cand, alpha, rows, q, s):
        out = original(cand, alpha, rows, q, s)
        seen.append((out.sum(), out.size))
        return out

    monkeypatch.setattr(_frac_chord, "_chord_cannot_win", spy)
    subsampled_gaussian_rdp(0.02, 1.1, DEFAULT_ORDERS)  # DP-SGD's usual noise: the series wins
    skipped, rows = seen[-1]
    assert skipped == rows == int(np.sum(DEFAULT_ORDERS != np.floor(DEFAULT_ORDERS)))
    # huge noise: A is within ~1e-13 of 1, the series' absolute allowance dominates and the
    # chord (relative precision) must still be computed for every fractional order
    subsampled_gaussian_rdp(0.02, 52466.0, DEFAULT_ORDERS)
    assert seen[-1][0] == 0
