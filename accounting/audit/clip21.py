"""Audit of Clip21-SGD2M under local DP: an exact composition of Gaussians.

Instance: client i's local loss is ``f_i(x) = +G x`` in one neighbouring local dataset and
``-G x`` in the other, with ``G >= tau (1 + T beta_hat) / beta``.  Then ``v_i^t = +-G (1 - (1 -
beta)^t)`` and ``|g_i^{t-1}| <= (t - 1) beta_hat tau``, so ``|v_i^t - g_i^{t-1}| >= tau`` every round
and the clipped message is ``c_i^t = +tau`` resp. ``-tau``: two messages at distance ``2 tau``,
whatever the public history.  The release is T rounds of ``c + N(0, sigma_omega^2)``, a Gaussian
mechanism composed T times, i.e. exactly mu-GDP with ``mu = 2 tau sqrt(T) / sigma_omega = 2
sqrt(T) / z``, whose (eps, delta) curve is closed-form (:func:`accounting.audit.stats.gaussian_delta`).
The exact epsilon(delta) of the instance is therefore computed, not estimated (rounded down).
"""

from __future__ import annotations

import math

from accounting.audit.stats import gaussian_epsilon

__all__ = ["clip21_epsilon_lower", "clip21_mu"]


def clip21_mu(noise_multiplier: float, rounds: int, *, sensitivity: float = 2.0) -> float:
    """mu of the composed Gaussian: sensitivity (units of tau) x sqrt(T) / z."""
    return sensitivity * math.sqrt(rounds) / noise_multiplier


def clip21_epsilon_lower(noise_multiplier: float, rounds: int, delta: float) -> float:
    """Exact epsilon(delta) of the +-tau instance (rounded down)."""
    return gaussian_epsilon(delta, clip21_mu(noise_multiplier, rounds))
