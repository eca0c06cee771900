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
   pessimistic PLD is above it and its optimistic one below (tests/accounting/test_pld_groups.py checks
   the sandwich).
4. We return an ``eps`` found by bisection at which an *upper estimate* of ``delta(eps)`` is at
   most the target (:func:`accounting.gdp_curve.gdp_delta_upper`: log space, the rounding of
   every operation bounded and added, derivation in :mod:`accounting.gdp_curve`).  So the true
   ``delta(eps) <= target``: an upper bound on the true epsilon, above it by the bisection width
   (1e-12 relative) plus the widening (at most 3e-8 relative in epsilon on 300 random
   ``(mu, delta)`` over ``mu`` in [1e-12, 1e6], ``delta`` in [1e-300, 1), against 80-digit mpmath;
   tests/accounting/test_gdp_against_mpmath.py asserts 1e-6 over ``mu`` in [1e-12, 1e9]; largest where the two
   terms nearly cancel, small ``mu``).
5. ``mu`` itself (:func:`gaussian_mu`) is computed by exact scaling and ``math.fsum`` and
   rounded up, so that it is never below the exact ``sqrt(sum count_i (Delta_i/sigma_i)^2)``.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["gaussian_mu", "gdp_delta", "gdp_epsilon"]


def gdp_delta(mu: float, eps: float, *, upper: bool = False) -> float:
    """``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` of ``mu``-GDP, in log space.

    ``upper=True`` returns an estimate that is >= the exact value despite rounding (step 4 of
    the module docstring; :mod:`accounting.gdp_curve` holds the implementation and its bound)."""
    from accounting.gdp_curve import gdp_delta as nearest
    from accounting.gdp_curve import gdp_delta_upper

    return gdp_delta_upper(mu, eps) if upper else nearest(mu, eps)


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


def _gaussian_terms(event: Any) -> list[tuple[float, float]] | None:
    """``(count, ratio)`` pairs with ``mu^2 = sum count * ratio^2`` (ratio = sensitivity / noise),
    or None when ``event`` is not a composition of plain Gaussians."""
    from accounting.events import ComposedEvent, GaussianEvent, SelfComposedEvent, SubsampledGaussianEvent

    if isinstance(event, GaussianEvent):
        return [(1.0, _ratio(event.sensitivity, event.noise_multiplier))]
    if isinstance(event, SubsampledGaussianEvent):
        return [(1.0, _ratio(1.0, event.noise_multiplier))] if event.sample_rate == 1 else None
    if isinstance(event, SelfComposedEvent):
        inner = _gaussian_terms(event.event)
        return None if inner is None else [(event.count * c, r) for c, r in inner]
    if isinstance(event, ComposedEvent):
        terms: list[tuple[float, float]] = []
        for e in event.events:
            part = _gaussian_terms(e)
            if part is None:
                return None
            terms.extend(part)
        return terms
    return None


def _ratio(sensitivity: float, noise: float) -> float:
    """``sensitivity / noise``, never rounded to 0 when the sensitivity is positive (the smallest
    subnormal is above any positive quotient that underflows), inf for zero noise."""
    sensitivity, noise = abs(float(sensitivity)), abs(float(noise))
    if sensitivity == 0:
        return 0.0
    if noise == 0:
        return math.inf
    return max(sensitivity / noise, math.ulp(0.0))


def _round_up(x: float, ulps: int) -> float:
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def gaussian_mu(event: Any) -> float | None:
    """``mu`` of the GDP pair dominating ``event`` when it is a composition of plain Gaussian
    mechanisms (``GaussianEvent``, or ``SubsampledGaussianEvent`` with rate 1), else None.

    ``mu = sqrt(sum count_i ratio_i^2)`` is computed as ``m sqrt(fsum(count_i (ratio_i / m)^2))``
    with ``m = max ratio_i``, so no square overflows or underflows to a wrong answer (a ratio
    ``1e-160`` or ``1e170`` is fine; a term that underflows is below ``1e-308`` of the total).
    The quotients, squares, products, the correctly rounded ``fsum``, the ``sqrt`` and the final
    product each err by at most one ulp relative: rounding the result up by 8 ulps makes it an
    upper bound (epsilon grows with ``mu``).  inf when ``mu`` overflows; never 0 when some
    sensitivity is positive."""
    terms = _gaussian_terms(event)
    if terms is None:
        return None
    terms = [(c, r) for c, r in terms if c > 0 and r > 0]
    if not terms:
        return 0.0
    scale = max(r for _, r in terms)
    if not math.isfinite(scale):
        return math.inf
    total = math.fsum(c * (r / scale) ** 2 for c, r in terms)
    mu = scale * math.sqrt(total)
    return _round_up(mu, 8) if math.isfinite(mu) else math.inf
