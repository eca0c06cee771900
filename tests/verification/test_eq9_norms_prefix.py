"""dicesgd.eq9's search kernel: stepping only the points still running changes no value.

The reference below steps every point at every step and freezes finished ones with ``np.where``
(the kernel's former form); the kernel must agree with it exactly, ties and single points included.
"""

from __future__ import annotations

import numpy as np
import pytest

from verification.claims.dicesgd import hidden_state_steps as hss


def _reference_norms(p) -> np.ndarray:
    base = hss._eq9_base()
    t = p["t"].astype(int)
    gp, al, sp = p["G'/C2"][:, None], p["align"][:, None, None], p["spread"][:, None]
    bmask = np.arange(hss._EQ9_B)[None, :] < p["B"].astype(int)[:, None]
    dmask = (np.arange(hss._EQ9_D)[None, :] < p["d"].astype(int)[:, None]).astype(float)
    u0 = np.zeros((1, 1, hss._EQ9_D))
    u0[..., 0] = 1.0
    offs = p["draw"].astype(np.int64) % hss._EQ9_LEN
    e = np.zeros((t.size, hss._EQ9_D))
    for s in range(int(t.max())):
        raw = base[(offs + s) % hss._EQ9_LEN]
        dirs = (al * u0 + (1 - al) * raw) * dmask[:, None, :]
        dirs /= np.maximum(np.linalg.norm(dirs, axis=2, keepdims=True), 1e-300)
        frac = base[(offs + s + 7) % hss._EQ9_LEN][:, :, 0]
        norms = gp * (1 - sp * (0.5 + 0.5 * np.tanh(frac)))
        r = (np.where(bmask, norms, 0.0)[:, :, None] * dirs).sum(axis=1) / bmask.sum(axis=1)[:, None]
        ne = np.linalg.norm(e, axis=1, keepdims=True)
        nxt = e - e * np.minimum(1.0, 1.0 / np.maximum(ne, 1e-300)) + r
        e = np.where((s < t)[:, None], nxt, e)
    return np.linalg.norm(e, axis=1)


def _points(n: int, rng: np.random.Generator, max_t: int) -> dict:
    p = {}
    for prm in hss.eq9_domain(max_t).params:
        if prm.log:
            v = np.exp(rng.uniform(np.log(prm.lo), np.log(prm.hi), n))
        else:
            v = rng.uniform(prm.lo, prm.hi, n)
        p[prm.name] = np.round(v) if prm.integer else v
    return p


@pytest.mark.parametrize("n", [1, 2, 5, 40])
def test_prefix_stepping_equals_masked_stepping(n):
    rng = np.random.default_rng(n)
    for ties in (False, True):
        p = _points(n, rng, 300)
        if ties:
            p["t"][: max(1, n // 2)] = p["t"][0]
        ne, gp, t = hss._eq9_norms(p)
        assert np.array_equal(ne, _reference_norms(p), equal_nan=True)
        assert np.array_equal(t, p["t"].astype(int).astype(float))
        assert gp is p["G'/C2"]
