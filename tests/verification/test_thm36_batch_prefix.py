"""dicesgd.thm3.6's batched Huber kernel: stepping only the points still running changes no value.

The reference below steps every point at every step and masks finished ones (the kernel's former
form); the kernel must agree with it exactly (noise draws included), and with the 50-digit
mpmath replay to float accuracy.
"""

from __future__ import annotations

import numpy as np
import pytest

from verification.claims.dicesgd.thm36 import thm36_domain, thm36_huber_batch, thm36_huber_run


def _masked_reference(G, r, x0, T, sigma1=0.0, seeds=1, seed=0):
    c1, L, c2, T = 1.0, 1.0, r * 1.0, T.astype(int)
    n, tmax = G.size, int(T.max())
    f0 = np.where(np.abs(x0) <= G / L, L * x0**2 / 2, G * np.abs(x0) - G**2 / (2 * L))
    K = 2 * c1**2 + 3 * c2**2 + sigma1**2
    eta, rhs = np.sqrt(2 * f0 / (T * L * K)), 2 * np.sqrt(2 * L * f0 * K / T)
    rng = np.random.default_rng(seed)
    x, e = np.repeat(x0[None, :], seeds, axis=0), np.zeros((seeds, n))
    gsq, om = np.zeros((seeds, n, tmax)), np.ones((seeds, n, tmax))
    live = np.arange(tmax)[None, :] < T[:, None]
    for t in range(tmax):
        gr = np.where(np.abs(x) <= G / L, L * x, G * np.sign(x))
        gsq[:, :, t] = gr * gr
        ae = np.abs(e)
        om[:, :, t] = np.where(
            live[None, :, t], np.where(ae <= c2, 0.0, 1 - c2 / np.maximum(ae, 1e-300)), 1.0
        )
        v = np.clip(gr, -c1, c1) + np.clip(e, -c2, c2)
        w = rng.normal(0.0, sigma1, (seeds, n)) if sigma1 > 0 else 0.0
        x, e = x - eta[None, :] * (v + w), e + gr - v
    rev = np.cumprod(om[:, :, ::-1], axis=2)[:, :, ::-1]
    A = np.where(live[None], 1.0 - np.concatenate([rev[:, :, 1:], np.ones((seeds, n, 1))], axis=2), 0.0)
    A[:, np.arange(n), T - 1] = 1e-12
    measured = (A * gsq).sum(axis=2) / A.sum(axis=2)
    return {"measured": measured.mean(axis=0), "rhs": rhs, "eta": eta, "measured_by_seed": measured}


def _points(n: int, rng: np.random.Generator, max_steps: int) -> dict:
    p = {}
    for prm in thm36_domain(max_steps).params:
        v = np.exp(rng.uniform(np.log(prm.lo), np.log(prm.hi), n))
        p[prm.name] = np.round(v) if prm.integer else v
    return p


@pytest.mark.parametrize("n, noisy", [(1, False), (3, False), (40, False), (6, True)])
def test_prefix_stepping_equals_masked_stepping(n, noisy):
    rng = np.random.default_rng(n)
    p = _points(n, rng, 300)
    p["T"][: max(1, n // 3)] = p["T"][0]  # ties
    kw = dict(sigma1=1.0, seeds=3, seed=4) if noisy else {}
    got = thm36_huber_batch(p["G"], p["C2/C1"], p["x0"], p["T"], **kw)
    ref = _masked_reference(p["G"], p["C2/C1"], p["x0"], p["T"], **kw)
    for key, val in ref.items():
        assert np.array_equal(got[key], val, equal_nan=True), key
    assert np.array_equal(got["ratio"], ref["measured"] / ref["rhs"], equal_nan=True)


def test_batch_matches_mpmath_replay():
    rng = np.random.default_rng(11)
    p = _points(4, rng, 60)
    batch = thm36_huber_batch(p["G"], p["C2/C1"], p["x0"], p["T"])
    for i in range(4):
        exact = thm36_huber_run(p["G"][i], 1.0, p["C2/C1"][i], p["x0"][i], int(p["T"][i]), exact=True)
        assert batch["ratio"][i] == pytest.approx(exact["ratio"], rel=1e-6)
