"""Families of trade-off curves that the f-DP one-run test (:func:`~.one_run.fdp_rejects`) audits.

A family is indexed by one number ``theta``; a larger ``theta`` is a *less* private member
(pointwise lower trade-off curve).  Each family gives, per member, ``g_inv``: a lower bound on
``inf {x : 1 - f(x) >= y}`` (the weaker the claim, the fewer the rejections: sound), and
``epsilon(theta, delta)``: that member's epsilon at ``delta`` rounded *down*.

* :class:`ApproxDP` (theta = eps at fixed delta): ``f(x) = max(0, 1 - delta - e^eps x,
  e^-eps (1 - delta - x))`` (Kairouz, Oh & Viswanath 2015).  Assumption-free: rejecting it
  refutes (eps, delta)-DP itself.
* :class:`GaussianDP` (theta = mu): ``f(x) = Phi(Phi^-1(1 - x) - mu)`` (Dong, Roth & Su 2022),
  so ``g_inv(y) = Phi(Phi^-1(y) - mu)``.  Its epsilon bound refutes "the run is mu-GDP"; a
  subsampled mechanism is not GDP, so against DP-SGD prefer :class:`SubsampledGaussian`.
* :class:`SubsampledGaussian` (theta = 1 / noise multiplier at fixed sample rate ``q`` and
  ``steps``): the composed Poisson-subsampled Gaussian, the mechanism a DP-SGD run claims.
  Its curve is the envelope of the lines of its privacy profile: a mechanism that is
  (eps_j, delta_j)-DP for every j is f-DP with ``f = max_j f_{eps_j, delta_j}`` (Dong, Roth & Su
  2022, Prop. 2.12 in the dual form), so ``g_inv(y) = max(0, max_j (y - delta_j) e^-eps_j,
  max_j (1 - delta_j - e^eps_j (1 - y)))``.  ``delta_j`` are dp-accounting's *pessimistic* PLD
  values (upper bounds, both neighbour orders): the envelope lies below the true curve (a true
  claim about the real mechanism).  The member's epsilon is the rigorous *lower* PLD bound of
  :func:`accounting.audit.pld.subsampled_gaussian_epsilon_lower`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy import special

from accounting.errors import InvalidParameter

__all__ = ["TradeoffFamily", "ApproxDP", "GaussianDP", "SubsampledGaussian"]

_SHRINK = 1.0 - 1e-12  # rounds g_inv down by far more than its floating-point error


class TradeoffFamily:
    """Base class: ``g_inv(theta)`` and ``epsilon(theta, delta)``; ``theta_max`` bounds the search."""

    name = "family"
    theta_max = 1e3

    def g_inv(self, theta: float) -> Callable[[float], float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def epsilon(self, theta: float, delta: float) -> float:  # pragma: no cover - abstract
        raise NotImplementedError


class ApproxDP(TradeoffFamily):
    """The (eps, delta)-DP curve at the audit's ``delta``; theta is eps itself."""

    name = "approx-dp"
    theta_max = 100.0

    def __init__(self, delta: float) -> None:
        self.delta = float(delta)

    def g_inv(self, theta: float) -> Callable[[float], float]:
        d, e_lo, e_hi = self.delta, math.exp(-theta), math.exp(theta)

        def inv(y: float) -> float:
            return max(0.0, (y - d) * e_lo, 1.0 - d - e_hi * (1.0 - y)) * _SHRINK

        return inv

    def epsilon(self, theta: float, delta: float) -> float:
        return float(theta)


class GaussianDP(TradeoffFamily):
    """``mu``-GDP; theta is ``mu``."""

    name = "gdp"
    theta_max = 40.0

    def g_inv(self, theta: float) -> Callable[[float], float]:
        mu = float(theta)

        def inv(y: float) -> float:
            if y <= 0.0:
                return 0.0
            if y >= 1.0:
                return 1.0
            return float(special.ndtr(special.ndtri(y) - mu)) * _SHRINK

        return inv

    def epsilon(self, theta: float, delta: float) -> float:
        from accounting.audit.stats import gaussian_epsilon

        return gaussian_epsilon(delta, float(theta))


class SubsampledGaussian(TradeoffFamily):
    """``steps`` compositions of the Poisson-subsampled Gaussian at rate ``sample_rate``.

    theta = 1 / noise multiplier.  ``eps_grid`` (default 0..60 in 600 steps plus a fine part near
    0) is where the profile is sampled; a coarser grid only weakens the claim (fewer lines)."""

    name = "subsampled-gaussian"
    theta_max = 20.0

    def __init__(self, sample_rate: float, steps: int, *, eps_grid: np.ndarray | None = None) -> None:
        if not 0 < sample_rate <= 1:
            raise InvalidParameter("sample_rate", f"must be in (0, 1], got {sample_rate!r}")
        if int(steps) != steps or steps < 1:
            raise InvalidParameter("steps", f"must be an integer >= 1, got {steps!r}")
        self.sample_rate = float(sample_rate)
        self.steps = int(steps)
        grid = np.unique(np.concatenate([np.linspace(0, 2, 201), np.linspace(2, 60, 581)]))
        self.eps_grid = grid if eps_grid is None else np.asarray(eps_grid, dtype=float)
        self._profiles: dict[float, np.ndarray] = {}

    def profile(self, theta: float) -> np.ndarray:
        """Pessimistic (upper) delta at each grid epsilon for noise multiplier ``1 / theta``."""
        key = float(theta)
        if key not in self._profiles:
            self._profiles[key] = _pessimistic_profile(self.sample_rate, self.steps, 1.0 / key, self.eps_grid)
        return self._profiles[key]

    def g_inv(self, theta: float) -> Callable[[float], float]:
        d = self.profile(theta)
        keep = d < 1.0
        e, d = self.eps_grid[keep], d[keep]
        e_lo, e_hi = np.exp(-e), np.exp(e)

        def inv(y: float) -> float:
            a = float(np.max((y - d) * e_lo)) if e.size else 0.0
            b = float(np.max(1.0 - d - e_hi * (1.0 - y))) if e.size else 0.0
            return max(0.0, a, b) * _SHRINK

        return inv

    def epsilon(self, theta: float, delta: float) -> float:
        from accounting.audit.pld import subsampled_gaussian_epsilon_lower

        z = 1.0 / float(theta)
        return subsampled_gaussian_epsilon_lower(self.sample_rate, np.full(self.steps, z), delta)


@lru_cache(maxsize=256)
def _cached_profile(q: float, steps: int, z: float, grid: tuple[float, ...]) -> tuple[float, ...]:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    from accounting.audit.pld_profile import delta_for_epsilons

    pld = pld_lib.from_gaussian_mechanism(
        standard_deviation=z,
        sampling_prob=q,
        value_discretization_interval=1e-3,
        pessimistic_estimate=True,
    ).self_compose(steps)
    # dp-accounting's get_delta_for_epsilon, bit for bit, without its Python loop over the losses
    return tuple(float(x) for x in np.minimum(1.0, delta_for_epsilons(pld, np.asarray(grid))))


def _pessimistic_profile(q: float, steps: int, z: float, grid: np.ndarray) -> np.ndarray:
    return np.asarray(_cached_profile(q, steps, z, tuple(float(g) for g in grid)))
