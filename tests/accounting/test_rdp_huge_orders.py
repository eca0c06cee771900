"""Grids with huge orders: each fractional order's series table has the length it gets alone, and
tables of huge orders are not kept in the caches.

A grid of orders 1.5..59.5 with 621843.5 used to give every fractional order the huge one's
table (1.2e6 terms): 12 s and 6 GB, and a random 80-order grid up to 1e6 ran out of 24 GB."""

from __future__ import annotations

import numpy as np
import pytest

from accounting import _frac_chord, _log_a_frac
from accounting.rdp import subsampled_gaussian_rdp

Q, SIGMA, HUGE = 0.0031613637352037533, 0.611506450405699, 621843.5


def test_each_fractional_order_keeps_its_own_table_length(monkeypatch: pytest.MonkeyPatch) -> None:
    lengths: dict[float, int] = {}
    real = _frac_chord.log_a_frac

    def spy(lq, l1q, s, sigma, a, tab_idx, tabs, step=None):
        for al in np.unique(a).tolist():
            lengths[al] = tabs[0].shape[1]
        return real(lq, l1q, s, sigma, a, tab_idx, tabs, step)

    monkeypatch.setattr(_frac_chord, "log_a_frac", spy)
    orders = np.append(np.arange(1.5, 12.0, 1.0), HUGE)
    cached_before = _log_a_frac._frac_tables.cache_info().currsize
    curve = subsampled_gaussian_rdp(Q, SIGMA, orders, evaluation="exact")
    assert lengths and all(lengths[a] == 4096 for a in orders[:-1].tolist())
    assert lengths.get(HUGE, int(2 * HUGE) + 64) == int(2 * HUGE) + 64  # (its top term may settle it)
    # the small orders' tables may be new entries; the huge one's is not kept
    assert _log_a_frac._frac_tables.cache_info().currsize <= cached_before + orders.size - 1
    # and every value is the one the order gets alone
    alone = [subsampled_gaussian_rdp(Q, SIGMA, [a], evaluation="exact").rdp[0] for a in orders.tolist()]
    assert [v.hex() for v in curve.rdp] == [float(v).hex() for v in alone]
