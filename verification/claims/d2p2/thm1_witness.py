"""A rigorous counterexample family to D2P2 Theorem 1, for every pair of constants (C1, C2).

Model: the mechanism the proof analyses (Lemma 5, App. A.3), Poisson inclusion with rate q,
sensitivity 1, noise ``sigma_k^2 = sigma^2 / k`` at Theorem 1's smallest allowed sigma.  One sample
has a fixed unit gradient, all others zero; the weighted sum ``T = sum_k (k / sigma^2) y_k`` is
post-processing, Gaussian under D and a Gaussian plus a Hoeffding-concentrated sum under D'.  A
closed-form family of (eps, K, threshold) then gives ``delta(eps) > 0.977`` for every C1, C2 > 0,
every q < 1/10 and every delta < 0.977 (and above 0.976 with Alg. 1's per-sample normalisation).
The code evaluates the same bound numerically at each witness (no Monte Carlo).

The derivation, step by step: ``docs/claim-proofs.md``, "D2P2 Theorem 1".
"""

from __future__ import annotations

import math

from scipy.stats import norm

#: a safety margin on the floating-point evaluation of the bound (each scipy term is accurate to
#: a few ulps; the analytic bound 0.977 leaves a margin far larger than this)
ROUNDING_SLACK = 1e-9
#: the analytic lower bound the family guarantees (see the module docstring)
ANALYTIC_LOWER = float(norm.cdf(2.0) * (1 - math.exp(-10)) - 0.5 * math.exp(-12))


def thm1_witness(c1: float, c2: float, delta: float, q: float = 0.05, shift: float = 1.0) -> dict:
    """The family's parameters (K, eps, sigma) for constants (C1, C2) and a rigorous lower bound on
    delta(eps) of the proof's mechanism at the theorem's minimal noise.

    ``shift`` is the norm of the differing sample's contribution: 1 under the proof's clipping to
    norm 1; M/(M + gamma) < 1 under Alg. 1's normalisation g/(||g|| + gamma) with ||g|| = M."""
    L = math.log(1 / delta)
    r = math.sqrt(2 * c2 * L)
    mu0 = 8 * r + 10
    eps = mu0 * r
    t = mu0 / 2 + 2
    K = math.ceil(max(5 * eps * eps / (c2 * q * q * L), eps / (c1 * q * q)))
    sigma2 = c2 * q * q * K * K * L / (eps * eps)
    b = delta_lower_bound(K, sigma2, q, eps, t, shift)
    return {
        "C1": c1,
        "C2": c2,
        "delta": delta,
        "q": q,
        "K": K,
        "eps": eps,
        "eps<=C1_q^2_K": eps <= c1 * q * q * K,
        "sigma": math.sqrt(sigma2),
        "sigma_K_min_over_steps": math.sqrt(sigma2 / K),
        "threshold_t": t,
        "shift": shift,
        **b,
        "violates": b["delta_eps_lower"] > delta,
    }


def delta_lower_bound(K: int, sigma2: float, q: float, eps: float, t: float, shift: float = 1.0) -> dict:
    """Rigorous lower bound on delta(eps) of the K-step mechanism (schedule sigma^2/k) from the
    test T > t sqrt(V), with Hoeffding for the inclusion pattern (module docstring).

    With a shift c <= 1 in place of 1, E S and mu scale by c, and Hoeffding's exponent for a
    deviation sqrt(V) becomes 6 sigma^2/(c^2 (2K + 1)) >= the c = 1 value used here."""
    if not 0 < shift <= 1:
        raise ValueError("shift must lie in (0, 1]")
    mu = shift * q * math.sqrt(K * (K + 1) / 2) / math.sqrt(sigma2)
    hoeffding_fail = math.exp(-6 * sigma2 / (2 * K + 1))
    p_side = (1 - hoeffding_fail) * float(norm.cdf(mu - 1 - t))
    q_side = math.exp(eps + float(norm.logsf(t)))
    return {
        "mu_test": mu,
        "hoeffding_failure": hoeffding_fail,
        "P_side": p_side,
        "eQ_side": q_side,
        "delta_eps_lower": p_side - q_side - ROUNDING_SLACK,
    }


def thm1_gaussian_limit_mu(c2: float, delta: float, eps: float) -> float:
    """mu0 = eps/sqrt(2 C2 ln(1/delta)): the test's Gaussian-mechanism parameter, free of K."""
    return eps / math.sqrt(2 * c2 * math.log(1 / delta))
