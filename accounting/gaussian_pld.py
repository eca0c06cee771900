"""Exact PLD epsilon of compositions of plain (not subsampled) Gaussian mechanisms, in closed form.

Why: dp-accounting's PLD accountant discretises the Gaussian privacy loss on a grid of step
1e-4 over its whole support.  For Clip21-SGD2M's local-DP defaults (z = 3, sensitivity 2,
T = 1000) the loss has mean ~222 and the grid holds 8.5 million points, each filled by a Python
call: 57 s for a number that has a closed form.

Derivation (every step is standard; references given):

1. A Gaussian mechanism with L2 sensitivity ``Delta`` and noise std ``sigma`` is dominated, in
   the sense of privacy-loss distributions, by the pair ``P = N(0, 1)``, ``Q = N(mu, 1)`` with
   ``mu = Delta / sigma`` (rotate and scale the output space: only the projection on the
   difference of the means carries information).  Under add/remove adjacency the pair is the
   same in both directions, because the pair is symmetric (swap the roles and reflect).
2. Adaptive composition of mechanisms with dominating pairs ``(P_i, Q_i)`` is dominated by the
   product pair (Zhu, Dong & Wang 2022, Thm 10; Dong, Roth & Su 2022, Thm 4 for GDP).  The
   product of ``N(0, 1)`` vs ``N(mu_i, 1)`` over ``i`` is, again by rotation, ``N(0, 1)`` vs
   ``N(mu, 1)`` with ``mu = sqrt(sum_i mu_i^2)``: the composition is exactly ``mu``-GDP (for
   ``T`` identical rounds, ``mu = sqrt(T) Delta / sigma``).
3. The tight privacy profile of ``N(0, 1)`` vs ``N(mu, 1)`` is (Balle & Wang 2018, Thm 8;
   Dong, Roth & Su 2022, Cor. 1)
   ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, decreasing in ``eps``.
   It is what dp-accounting's PLD converges to as its discretisation interval goes to 0: its
   pessimistic PLD is above it and its optimistic one below (tests/test_pld_groups.py checks
   the sandwich).
4. We return an ``eps`` found by bisection at which an *upper estimate* of ``delta(eps)`` is at
   most the target: the terms are evaluated in log space (``log_ndtr``,
   ``delta = e^la (1 - e^(lb - la))``) and the estimate widens ``lb - la`` by
   :data:`LOG_ERROR` x (the magnitudes involved) and ``e^la`` by the same relative amount, far
   more than the rounding of these few operations.  The widening matters only where the two
   terms nearly cancel (tiny ``mu`` and ``delta``), and there it makes ``eps`` larger, never
   smaller.  So the true ``delta(eps) <= target``: an upper bound on the true epsilon, above
   it by the bisection width (1e-12 relative) plus the widening (~1e-12 relative in ordinary
   regimes).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["gaussian_mu", "gdp_delta", "gdp_epsilon"]

#: Relative error allowed for each log-space quantity of ``gdp_delta`` (step 4): ~1000 ulps.
LOG_ERROR = 1e-13


def gdp_delta(mu: float, eps: float, *, upper: bool = False) -> float:
    """``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` of ``mu``-GDP, in log space.

    ``upper=True`` returns an estimate that is >= the exact value despite rounding (step 4 of
    the module docstring)."""
    from scipy.special import log_ndtr

    if mu <= 0:
        return 0.0
    if not math.isfinite(mu):
        return 1.0
    la = float(log_ndtr(-eps / mu + mu / 2))
    lnb = float(log_ndtr(-eps / mu - mu / 2))
    gap = la - (eps + lnb)  # > 0 exactly; log of the ratio of the two terms
    if upper:
        err = LOG_ERROR * (abs(la) + abs(lnb) + abs(eps) + 1.0)
        return min(1.0, math.exp(la + err) * -math.expm1(-(gap + err)))
    if gap <= 0:  # only by rounding (the profile is >= 0)
        return 0.0
    return math.exp(la) * -math.expm1(-gap)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ``eps >= 0`` with ``delta(eps) <= delta`` for ``mu``-GDP, rounded up (bisection to
    1e-12 relative on the upper estimate of ``delta``: step 4 of the module docstring)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if mu <= 0:
        return 0.0
    if not math.isfinite(mu):
        return math.inf
    target = delta
    if gdp_delta(mu, 0.0, upper=True) <= target:
        return 0.0
    # Gaussian tail: delta(eps) <= Phi(-(eps/mu - mu/2)) <= exp(-(eps/mu - mu/2)^2 / 2) <= delta here
    hi = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / target))
    while gdp_delta(mu, hi, upper=True) > target:  # never expected; guards rounding in the tail formula
        hi *= 2
        if not math.isfinite(hi):
            return math.inf
    lo = 0.0
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if gdp_delta(mu, mid, upper=True) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def gaussian_mu(event: Any) -> float | None:
    """``mu`` of the GDP pair dominating ``event`` when it is a composition of plain Gaussian
    mechanisms (``GaussianEvent``, or ``SubsampledGaussianEvent`` with rate 1), else None."""
    from accounting.events import ComposedEvent, GaussianEvent, SelfComposedEvent, SubsampledGaussianEvent

    def mu_sq(ev: Any) -> float | None:
        if isinstance(ev, GaussianEvent):
            return (ev.sensitivity / ev.noise_multiplier) ** 2
        if isinstance(ev, SubsampledGaussianEvent):
            return ev.noise_multiplier**-2 if ev.sample_rate == 1 else None
        if isinstance(ev, SelfComposedEvent):
            inner = mu_sq(ev.event)
            return None if inner is None else ev.count * inner
        if isinstance(ev, ComposedEvent):
            total = 0.0
            for e in ev.events:
                part = mu_sq(e)
                if part is None:
                    return None
                total += part
            return total
        return None

    sq = mu_sq(event)
    # epsilon grows with mu: round the few float operations above up (1e-14 >> their error)
    return None if sq is None else math.sqrt(sq) * (1.0 + 1e-14)
