"""The Gaussian mechanism's exact privacy curve, shared by the two example claims files.

Balle & Wang (2018, "Improving the Gaussian mechanism for differential privacy", Theorem 8): the
Gaussian mechanism with L2 sensitivity Delta and noise std sigma is (eps, delta)-DP if and only if

    delta >= Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta).

This is an equivalence, so the right-hand side is *the* smallest delta at eps: a claimed
(eps, delta) whose delta is below it is false, and one above it is true. Both sides depend on
sigma/Delta only, so Delta = 1 loses nothing.
"""

from __future__ import annotations

import math

import numpy as np


def classical_sigma(eps, delta, factor=1.0):
    """Dwork & Roth Thm A.1's noise, sigma = c Delta/eps with c = sqrt(2 ln(1.25/delta)), Delta = 1,
    times ``factor`` >= 1 (the theorem allows any sigma >= c Delta/eps)."""
    return factor * np.sqrt(2 * np.log(1.25 / delta)) / eps


def delta_ratio(p):
    """Exact delta(eps) / claimed delta at the classical noise, vectorised in float (log space)."""
    from scipy.special import log_ndtr

    eps, delta = p["eps"], p["delta"]
    s = classical_sigma(eps, delta, p.get("factor", 1.0))
    a = log_ndtr(1 / (2 * s) - eps * s)
    b = eps + log_ndtr(-1 / (2 * s) - eps * s)
    log_exact = a + np.log1p(-np.exp(np.minimum(b - a, 0.0)))
    return np.exp(log_exact - np.log(delta))


def delta_ratio_exact(point, dps=60):
    """The same ratio in 60-digit arithmetic (mpmath): what a verdict rests on."""
    import mpmath as mp

    mp.mp.dps = dps
    eps, delta = mp.mpf(point["eps"]), mp.mpf(point["delta"])
    s = mp.mpf(point.get("factor", 1.0)) * mp.sqrt(2 * mp.log(mp.mpf("1.25") / delta)) / eps
    exact = mp.ncdf(1 / (2 * s) - eps * s) - mp.e**eps * mp.ncdf(-1 / (2 * s) - eps * s)
    return float(exact / delta)


def replay(eps, delta, factor=1.0):
    """Human-readable replay of one point (what the reproduce commands print)."""
    sigma = float(classical_sigma(eps, delta, factor))
    r = delta_ratio_exact({"eps": eps, "delta": delta, "factor": factor})
    return {
        "eps": eps,
        "delta": delta,
        "sigma/Delta": sigma,
        "exact_delta_at_eps": r * delta,
        "ratio": r,
        "private": r <= 1,
        "log10_ratio": math.log10(r) if r > 0 else float("-inf"),
    }
