"""accounting._log_a_frac's running sums: the ``np.cumsum`` route and the row loop give the same bits,
so which one a block's shape selects never changes an RDP value."""

from __future__ import annotations

import numpy as np
import pytest

import accounting._log_a_frac as log_a_frac
from accounting.orders import DEFAULT_ORDERS
from accounting.rdp import subsampled_gaussian_rdp


@pytest.mark.parametrize("shape", [(2, 3), (40, 7), (256, 160), (5, 161), (300, 2)])
def test_cumsum_routes_agree_bit_for_bit(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    x = rng.standard_normal(shape) * 10.0 ** rng.uniform(-30.0, 30.0, shape)
    loop = x.copy()
    for k in range(1, shape[0]):
        loop[k] = loop[k - 1] + loop[k]
    got = log_a_frac._cumsum0(x.copy())
    assert np.array_equal(got, loop)


def test_rdp_curve_is_the_same_whichever_route_the_blocks_take(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short and long schedules (narrow and wide blocks), every default order."""
    z = 0.7 + np.random.default_rng(3).uniform(0.0, 3.0, 400)
    cases = [(0.01, z[:5]), (0.2, z), (0.5, z[:30])]
    default = [subsampled_gaussian_rdp(q, s, DEFAULT_ORDERS, evaluation="exact").rdp for q, s in cases]
    monkeypatch.setattr(log_a_frac, "_CUMSUM_COLS", -1)  # the row loop everywhere
    looped = [subsampled_gaussian_rdp(q, s, DEFAULT_ORDERS, evaluation="exact").rdp for q, s in cases]
    for a, b in zip(default, looped, strict=True):
        assert np.array_equal(a, b, equal_nan=True)


def test_noise_whose_square_overflows_takes_the_order_chord() -> None:
    """sigma = 1e160: sigma^2 and z0 overflow, the second series is all zeros and never meets the
    stopping rule, so every fractional order is the chord of its integer neighbours' log A (which
    keep full relative precision: positive, never rounded to 0)."""
    curve = subsampled_gaussian_rdp(0.01, 1e160, DEFAULT_ORDERS, steps=3)
    rdp, o = curve.rdp, DEFAULT_ORDERS
    assert not curve.dropped and np.all(np.isfinite(rdp)) and np.all(rdp > 0) and np.all(rdp < 1e-280)
    ints = o == np.floor(o)
    log_a = dict(zip(o[ints].tolist(), (rdp[ints] * (o[ints] - 1)).tolist(), strict=True))
    log_a[1.0] = 0.0
    for a, r in zip(o[~ints & (o < o[ints].max())], rdp[~ints & (o < o[ints].max())], strict=True):
        n = np.floor(a)
        chord = (n + 1 - a) * log_a[n] + (a - n) * log_a[n + 1]
        assert r * (a - 1) == pytest.approx(chord, rel=1e-12)
