"""Skipping the alpha-chord where its closed-form lower bound exceeds the series
(``accounting._frac_chord._chord_cannot_win``) changes no value, bit for bit, and does skip in
the ordinary regime (else the speed-up silently went away).  Symmetrically, skipping the series
where the chord certainly wins (``accounting._frac_chord.frac_log_a``, huge noise) changes no
value and does skip there (one schedule reaching sigma = 1e150 took two minutes without it)."""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
from hypothesis import given, settings
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
    with mock.patch.object(_frac_chord, "_chord_cannot_win", _never_skip):
        without = subsampled_gaussian_rdp_steps(np.full(steps, q), sig, orders)
        total_without = subsampled_gaussian_rdp(q, sig[0], orders, steps=7).rdp
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


@settings(max_examples=40)
@given(
    log_q=st.floats(-8.0, 0.0, exclude_max=True),
    log_sigma=st.floats(0.0, 305.0),
    spread=st.floats(0.0, 12.0),
    steps=st.integers(1, 5),
    extra=st.lists(st.floats(1.0001, 5000.0), min_size=1, max_size=6),
)
def test_the_chord_first_at_huge_noise_changes_no_bit(log_q, log_sigma, spread, steps, extra):
    """Batches below 1024 rows: the series' blocks do not depend on how many rows it runs."""
    orders = np.unique(np.concatenate([DEFAULT_ORDERS, extra]))
    q = 10.0**log_q
    sig = 10.0 ** (log_sigma - spread * np.linspace(0.0, 1.0, steps))
    chord_first = subsampled_gaussian_rdp_steps(np.full(steps, q), sig, orders)
    total_first = subsampled_gaussian_rdp(q, sig[0], orders, steps=7)
    # no chord wins first: every row runs the series
    with mock.patch.object(_frac_chord, "CHORD_WINS_BELOW", -math.inf):
        series = subsampled_gaussian_rdp_steps(np.full(steps, q), sig, orders)
        total_series = subsampled_gaussian_rdp(q, sig[0], orders, steps=7)
    assert _same_bits(chord_first, series)
    assert _same_bits(total_first.rdp, total_series.rdp) and total_first.dropped == total_series.dropped


def test_the_series_is_skipped_at_huge_noise_and_runs_at_usual_noise(monkeypatch):
    rows_run = []
    original = _frac_chord.log_a_frac

    def spy(lq, *args):
        rows_run.append(lq.size)
        return original(lq, *args)

    monkeypatch.setattr(_frac_chord, "log_a_frac", spy)
    n_frac = int(np.sum(DEFAULT_ORDERS != np.floor(DEFAULT_ORDERS)))
    subsampled_gaussian_rdp(0.02, 1e150, DEFAULT_ORDERS)
    assert rows_run == []  # every fractional order: the chord, without the series
    subsampled_gaussian_rdp(0.02, 1.1, DEFAULT_ORDERS)
    assert rows_run == [n_frac]
