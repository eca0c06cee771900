"""A rigorous counterexample family to D2P2 Theorem 1, for every pair of constants (C1, C2).

Model (the mechanism the proof analyses, Lemma 5 and App. A.3): at step k a sample enters the
batch with probability q = B/n, independently across steps (Poisson sampling with add/remove, or
fixed batches of size B drawn without replacement with replace-one adjacency: both give the same
inclusion pattern), the clipped minibatch sum (sensitivity 1) gets N(0, sigma_k^2) noise with
sigma_k^2 = sigma^2/k, and the sequence y_1..y_K is released. Theorem 1 asks only
sigma^2 >= C2 q^2 K^2 ln(1/delta)/eps^2 for eps <= C1 q^2 K; we take sigma^2 at that minimum.

Neighbours: every sample has gradient 0 except one, whose gradient is a fixed unit vector e_1
(a linear loss, so the gradient does not depend on the iterate). Only the e_1-coordinate of y_k
carries information, so in one dimension: under D, y_k ~ N(0, sigma_k^2); under D', y_k ~
N(b_k, sigma_k^2) with b_k ~ Bernoulli(q) i.i.d.

Test statistic (post-processing): T = sum_k w_k y_k with w_k = 1/sigma_k^2 = k/sigma^2.
Under D, T ~ N(0, V) with V = sum_k w_k^2 sigma_k^2 = K(K+1)/(2 sigma^2). Under D', T = S + Z with
S = sum_k w_k b_k independent of Z ~ N(0, V); E S = q K(K+1)/(2 sigma^2). In units of sqrt(V):
mu = E S / sqrt(V) = q sqrt(K(K+1)/2)/sigma = mu0 sqrt((K+1)/K) >= mu0, mu0 = eps/sqrt(2 C2 ln(1/delta)).

Lower bound on the hockey-stick divergence, for the event {T > t sqrt(V)}:
  delta(eps) >= P_{D'}(T > t sqrt V) - e^eps P_D(T > t sqrt V)
             >= P(S >= E S - sqrt V) * Phi(mu - 1 - t) - e^eps Phibar(t),
since T > t sqrt V whenever S >= E S - sqrt V and Z > (t - mu + 1) sqrt V (independent events).
Hoeffding (each w_k b_k in [0, w_k]): P(S < E S - sqrt V) <= exp(-2 V / sum w_k^2)
= exp(-6 sigma^2/(2K+1)).

Closed-form family, with r = sqrt(2 C2 ln(1/delta)):
  mu0 = 8 r + 10,  eps = mu0 r,  t = mu0/2 + 2,
  K = ceil(max(5 eps^2/(C2 q^2 ln(1/delta)), eps/(C1 q^2))).
Then (i) eps <= C1 q^2 K (the theorem's condition); (ii) sigma^2 = C2 q^2 K^2 ln(1/delta)/eps^2
>= 5K, so every sigma_k^2 >= sigma_K^2 >= 5 and the Hoeffding exponent 6 sigma^2/(2K+1) >= 10;
(iii) mu - 1 - t >= mu0/2 - 3 >= 2; (iv) eps = mu0 (mu0 - 10)/8 < mu0^2/8 = t^2/2 - mu0 - 2, and
Phibar(x) <= exp(-x^2/2)/2 for x >= 0, so e^eps Phibar(t) <= exp(-12)/2. Hence
  delta(eps) >= Phi(2) (1 - e^-10) - e^-12/2 > 0.977
for every C1, C2 > 0, every q = B/n < 1/10 and every delta < 0.977: Theorem 1 fails for all
constants. The code evaluates the same bound numerically at each witness (no Monte Carlo).

Alg. 1 normalises per sample, g/(||g|| + gamma), so the differing contribution has norm
c = M/(M + gamma) < 1 rather than the proof's 1; mu scales by c and the Hoeffding step only
improves. For c >= 0.999, mu - 1 - t >= 0.499 mu0 - 3 >= 1.99 and the bound stays above 0.976.
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
