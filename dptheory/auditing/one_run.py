"""The two one-run hypothesis tests (numpy/scipy only).

Setting (both papers): ``m`` canaries, each included independently with probability 1/2
(``S_i`` uniform on {-1, +1}); after the run the auditor guesses "in" or "out" for ``r`` of them
(abstaining on the rest) from the output alone, and ``v`` of the ``r`` guesses are right.

* :func:`steinke_p_value` bounds ``P[W >= v]`` for an (eps, delta)-DP run: Steinke, Nasr and
  Jagielski 2023 (arXiv 2305.08846), Theorem 5.2 (with delta; Proposition 5.7 computes it):
  ``P[W >= v] <= beta + 2 m delta * max_{1<=i<=v} (P[B >= v - i] - beta) / i`` with
  ``B ~ Bin(r, e^eps / (1 + e^eps))`` and ``beta = P[B >= v]``.
* :func:`fdp_rejects` is the test of Mahloujifar, Melis and Chaudhuri 2024 (arXiv 2410.22235)
  against a trade-off curve ``f``: their recursion (Algorithm "audit with cap", from Theorem 9
  on reconstruction games) propagates the mass of ``i`` correct guesses down to ``i = 0`` through
  the inverse "blow-up" ``g^{-1}`` of ``g(x) = 1 - f(x)`` (the most power an f-DP run allows at
  type-I error ``x``); the claim "the run is f-DP" is rejected at level ``tau`` when the
  propagated mass exceeds the ``r / m`` that the guesses can carry.

Both return *rejections*; the epsilon searches in :mod:`dptheory.auditing.auditor` turn them
into lower confidence bounds (monotonicity argument there).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

__all__ = ["steinke_p_value", "steinke_rejects", "fdp_rejects"]


def steinke_p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """Upper bound on ``P[W >= v]`` when the run is (eps, delta)-DP (Theorem 5.2 of Steinke et al.).

    ``m`` canaries, ``r`` guesses, ``v`` correct.  ``delta = 0`` gives the pure binomial tail."""
    if v <= 0:
        return 1.0
    q = 1.0 / (1.0 + math.exp(-eps))
    beta = float(stats.binom.sf(v - 1, r, q))
    if delta == 0:
        return min(beta, 1.0)
    i = np.arange(1, v + 1)
    # P[B >= v - i] - P[B >= v] = P[v - i <= B < v], computed as a difference of upper tails.
    gaps = stats.binom.sf(v - i - 1, r, q) - beta
    alpha = float(np.max(gaps / i))
    return min(beta + 2.0 * m * delta * max(alpha, 0.0), 1.0)


def steinke_rejects(m: int, r: int, v: int, eps: float, delta: float, level: float) -> bool:
    """Does observing ``v`` of ``r`` correct reject "(eps, delta)-DP" at ``level``?"""
    return steinke_p_value(m, r, v, eps, delta) <= level


def fdp_rejects(m: int, r: int, v: int, g_inv: Callable[[float], float], level: float) -> bool:
    """Does ``v`` of ``r`` correct reject "the run is f-DP" at ``level`` (Mahloujifar et al.)?

    ``g_inv(y)`` must be a *lower* bound on ``inf {x : 1 - f(x) >= y}`` (a weaker claim: rounding
    it down can only make rejections rarer).  Recursion, from ``i = v`` down to 0:
    ``r_v = level v / m``, ``h_v = level (r - v) / m``;
    ``h_i = max(h_{i+1}, g_inv(r_{i+1}))``, ``r_i = min(r_{i+1} + i / (r - i) (h_i - h_{i+1}), 1)``;
    reject when ``r_0 + h_0 > r / m``.  Once ``h`` stops moving it never moves again (``r`` only
    moves with ``h``), so the loop stops there."""
    if v <= 0 or r <= 0:
        return False
    rr = level * v / m
    h = level * (r - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(h, g_inv(rr))
        if h_new == h:
            break
        rr = min(rr + (i / (r - i)) * (h_new - h), 1.0)
        h = h_new
    return rr + h > r / m
