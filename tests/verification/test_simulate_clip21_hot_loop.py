"""simulate.clip21sgd2m_deterministic's hot loop equals its plain form (np.stack, .mean, clip_vec).

The clip21 searches report worst deviation ratios at full precision; the faster loop must leave
every value bit-identical, so the reference below is the loop as first written.
"""

from __future__ import annotations

import numpy as np
import pytest

from verification import simulate
from verification.claims.clip21._reductions import quad_clients


def _plain(grads, *, x0, gamma, beta, beta_hat, tau, steps):
    n, x = len(grads), np.asarray(x0, dtype=float).copy()
    v, gi, g = np.zeros((n, x.size)), np.zeros((n, x.size)), np.zeros(x.size)
    xs, gradsq, active = [x.copy()], [], []
    for _ in range(steps):
        x = x - gamma * g
        gr = np.stack([f(x) for f in grads])
        gradsq.append(float(np.sum(gr.mean(axis=0) ** 2)))
        v = (1 - beta) * v + beta * gr
        diff = v - gi
        active.append(np.linalg.norm(diff, axis=1) > tau)
        c = simulate.clip_vec(diff, tau)
        gi = gi + beta_hat * c
        g = g + beta_hat * c.mean(axis=0)
        xs.append(x.copy())
    return {"x": np.array(xs), "grad_sq": np.array(gradsq), "clip_active": np.array(active)}


@pytest.mark.parametrize("seed", range(3))
def test_fast_loop_is_bit_identical_to_plain_loop(seed):
    rng = np.random.default_rng(seed)
    for k in range(12):
        d, n = int(rng.integers(1, 33)), int(rng.integers(1, 9))
        grads, L, x_star = quad_clients(d, n, float(np.exp(rng.uniform(-5, 5))))
        kw = dict(
            x0=x_star + float(np.exp(rng.uniform(-5, 10))) / np.sqrt(d),
            gamma=float(np.exp(rng.uniform(-10, 0))) / L,
            beta=1.0 if k % 2 else float(rng.uniform(0.01, 1.0)),
            beta_hat=float(rng.uniform(1e-3, 1.0)),
            tau=np.inf if k % 3 == 0 else float(np.exp(rng.uniform(-8, 5))),
            steps=30,
        )
        fast, ref = simulate.clip21sgd2m_deterministic(grads, **kw), _plain(grads, **kw)
        for key in ref:
            assert np.array_equal(fast[key], ref[key], equal_nan=True), key
