"""The memoised pure functions that speed up ``dptheory verify --all`` return what they computed
before (bit for bit), never share mutable state with their callers, and keep their side effects."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from accounting import hidden_state as hs
from accounting.orders import DEFAULT_ORDERS

CASE = dict(sample_rate=0.01, noise_multiplier=1.3, steps=200, c1=1.0, c2=2.0, batch_size=100, grad_bound=3.0)


def test_certified_rdp_memo_equals_uncached_and_is_not_shared():
    first = hs.dicesgd_certified_rdp(**CASE, orders=DEFAULT_ORDERS)
    args = (0.01, 1.3, 200, 1.0, 2.0, 100.0, 3.0, np.asarray(DEFAULT_ORDERS, dtype=float).tobytes())
    uncached, dropped = hs._certified_rdp_memo.__wrapped__(*args)
    assert np.array_equal(first.rdp, uncached) and first.dropped == dropped
    with pytest.raises(ValueError):  # RdpCurve is read-only, and holds its own copy anyway
        first.rdp[:] = -1.0
    again = hs.dicesgd_certified_rdp(**CASE, orders=DEFAULT_ORDERS)
    assert np.array_equal(again.rdp, uncached)
    assert hs._certified_rdp_memo.cache_info().hits >= 1


def test_sg_table_memo_is_read_only_and_exact():
    orders = np.asarray(DEFAULT_ORDERS, dtype=float)
    z = 1.3 * np.sqrt(1.0 - hs.SPLIT_GRID)
    table = hs._sg_table(0.01, z, orders)
    fresh = hs._sg_table_memo.__wrapped__(0.01, z.tobytes(), orders.tobytes())
    assert np.array_equal(table, fresh)
    with pytest.raises(ValueError):
        table[0, 0] = 0.0


def test_quadrature_memo_keeps_precision_side_effect():
    import mpmath as mp

    from verification import properties as P

    mp.mp.dps = 15
    value = P.sgm_rdp_quadrature(1e-3, 0.8, 2.5, dps=25)
    assert mp.mp.dps == 25  # callers keep computing at the precision they asked for
    mp.mp.dps = 15
    assert P.sgm_rdp_quadrature(1e-3, 0.8, 2.5, dps=25) == value  # served from the cache
    assert mp.mp.dps == 25
    with mp.workdps(25):
        assert P._sgm_rdp_quadrature_at(mp, 1e-3, 0.8, 2.5) == value
    # integer order: the quadrature agrees with the closed form
    assert P.sgm_rdp_quadrature(1e-3, 0.8, 3.0, dps=25) == pytest.approx(
        P.sgm_rdp_integer(1e-3, 0.8, 3), rel=1e-9
    )
    mp.mp.dps = 15


def _identity_tool():
    path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "verify_identity.py"
    spec = importlib.util.spec_from_file_location("verify_identity", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_identity_tool_flags_any_change():
    tool = _identity_tool()
    snap = {"quick": True, "seed": 0, "claims": [{"id": "a", "verdict": "confirmed", "evidence": [{"x": 1}]}]}
    assert tool.compare(snap, snap) == []
    changed = {**snap, "claims": [{"id": "a", "verdict": "confirmed", "evidence": [{"x": 2}]}]}
    assert tool.compare(snap, changed) == ["claims[0].evidence[0].x: 1 -> 2"]
    assert tool.compare(snap, {**snap, "quick": False})
