"""The stacked client gradients of the Clip21 reduction searches are the per-client ones, bit for bit.

``QuadClients.all_at`` replaces n small matrix products per round by one stacked product; the
searches' evidence (worst ratios, counterexamples) stays identical only if every bit does.
"""

from __future__ import annotations

import numpy as np

from verification import simulate
from verification.claims.clip21._references import clip21_gd, mean_gradient, quad_clients


def _cases(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        d, n = int(rng.integers(1, 65)), int(rng.integers(1, 17))
        spread = float(10 ** rng.uniform(-3, 3))
        yield rng, d, n, spread


def test_all_at_is_each_clients_gradient_bit_for_bit() -> None:
    for rng, d, n, spread in _cases(60, 0):
        grads, _, x_star = quad_clients(d, n, spread)
        for scale in (1e-3, 1.0, 1e6):
            x = x_star + scale * rng.normal(size=d)
            assert np.array_equal(grads.all_at(x), np.stack([f(x) for f in grads])), (d, n)


def test_mean_gradient_sums_in_client_order() -> None:
    for rng, d, n, spread in _cases(30, 1):
        grads, _, x_star = quad_clients(d, n, spread)
        x = x_star + rng.normal(size=d)
        assert np.array_equal(mean_gradient(grads)(x), sum(f(x) for f in grads) / n)
        assert np.array_equal(mean_gradient(list(grads))(x), sum(f(x) for f in grads) / n)


def test_runs_equal_the_per_client_runs() -> None:
    """Both recurrences, fed the stacked clients or the plain list of the same functions."""
    for rng, d, n, spread in _cases(12, 2):
        grads, L, x_star = quad_clients(d, n, spread)
        x0 = x_star + float(10 ** rng.uniform(-3, 6)) / np.sqrt(d)
        gamma, tau = float(rng.uniform(0.01, 1.0)) / L, float(10 ** rng.uniform(-3, 3))
        kw = dict(x0=x0, gamma=gamma, beta=1.0, beta_hat=float(rng.uniform(0.01, 1)), tau=tau, steps=30)
        fast, plain = (
            simulate.clip21sgd2m_deterministic(grads, **kw),
            simulate.clip21sgd2m_deterministic(list(grads), **kw),
        )
        for key in fast:
            assert np.array_equal(fast[key], plain[key], equal_nan=True), (key, d, n)
        assert np.array_equal(
            clip21_gd(grads, x0, gamma, tau, 30), clip21_gd(list(grads), x0, gamma, tau, 30), equal_nan=True
        )
