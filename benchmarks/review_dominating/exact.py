"""Exact hockey-stick divergences of small adaptive Gaussian mechanisms (reviewer's code, 1-D).

Everything is in noise units (release noise s.d. 1). A *mechanism* is a list of hidden
configurations (prior weight, mean function); the release is y_t = m_t(config, y_<t) + N(0, 1),
t = 0..T-1, and its density is sum_cfg w_cfg prod_t phi(y_t - m_t). The hockey-stick divergence
H_gamma(P||Q) = int (p - gamma q)_+ dy is integrated on a tensor grid over R^T (trapezoid, grid
checked against closed forms in ``selftest``). Mean functions take the grid's history array
``Y`` of shape (M, t) and return an array of shape (M,).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

MeanFn = Callable[[int, np.ndarray], np.ndarray]


class Grid:
    def __init__(self, T: int, lo: float, hi: float, n: int):
        self.T = T
        x = np.linspace(lo, hi, n)
        self.h = x[1] - x[0]
        mesh = np.meshgrid(*([x] * T), indexing="ij")
        self.Y = np.stack([m.ravel() for m in mesh], axis=1)  # (M, T)
        w1 = np.full(n, self.h)
        w1[0] = w1[-1] = self.h / 2
        wm = np.meshgrid(*([w1] * T), indexing="ij")
        self.W = np.prod(np.stack([m.ravel() for m in wm], axis=1), axis=1)


def log_density(grid: Grid, configs: Sequence[tuple[float, MeanFn]]) -> np.ndarray:
    """log sum_cfg w prod_t phi(y_t - m_t(y_<t))."""
    Y = grid.Y
    logs = []
    for w, mean in configs:
        if w <= 0:
            continue
        lp = np.full(Y.shape[0], math.log(w))
        for t in range(grid.T):
            m = mean(t, Y[:, :t])
            lp += -0.5 * (Y[:, t] - m) ** 2 - 0.5 * math.log(2 * math.pi)
        logs.append(lp)
    L = np.stack(logs)
    mx = L.max(axis=0)
    return mx + np.log(np.exp(L - mx).sum(axis=0))


def hockey(grid: Grid, lp: np.ndarray, lq: np.ndarray, eps: float) -> tuple[float, float]:
    """(H_gamma(P||Q), H_gamma(Q||P)) with gamma = e^eps."""
    p, q = np.exp(lp), np.exp(lq)
    g = math.exp(eps)
    fwd = float(np.sum(np.maximum(p - g * q, 0) * grid.W))
    rev = float(np.sum(np.maximum(q - g * p, 0) * grid.W))
    return fwd, rev


def bits(T: int):
    for k in range(2**T):
        yield tuple((k >> t) & 1 for t in range(T))


def prior(b: Sequence[int], q: float) -> float:
    n = sum(b)
    return q**n * (1 - q) ** (len(b) - n)
