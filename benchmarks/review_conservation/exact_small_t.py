"""Exact Renyi divergences of DiceSGD for T = 2, 3 (1-D) against the candidate bound (K7).

Reviewer's script (numpy/scipy only, no project code). Units: the noise std sigma1 = 1, so
``c = C1/(B sigma1) = 1/z``, ``a = (G - C1)/(B sigma1)`` and ``C2`` is in units of sigma1 too.

Instances (both are real DiceSGD runs in 1-D with per-example gradient norms <= G):

* ``fixed-S``: the others' batches are fixed (the candidate claims its bound for every fixed S,
  K1), their averaged residual ``o_t`` is any function of the past releases (threshold policies),
  xi''s gradient is ``g'_t`` in [-G, G] (clip part C1 sign, residual the rest, same sign).
* ``poisson``: two other examples, each Poisson-sampled at rate q, with gradient functions of
  the past releases; the D-side law is then a mixture over their bits as well (the true mechanism).

For each instance the script integrates ``p^alpha q^(1-alpha)`` on a grid over R^T (p: the
D' law, a mixture over xi''s bits, and over the others' bits for ``poisson``), in both
directions, and compares with the candidate

    RDP(alpha) = log E_{n ~ Bin(T, q)} exp((alpha - 1) alpha S(n) / 2) / (alpha - 1),
    S(n) = (sqrt(n) c + n a)^2.

It also evaluates a deliberately false bound (S_false(n) = n (c + a)^2, i.e. a conservation law
``n a^2``) to show the comparison can fail. Grid accuracy is checked on the no-hidden-state case
(C2 huge is not needed: q = 1, a = 0 gives a Gaussian with a closed form).

    python benchmarks/review_conservation/exact_small_t.py [--search 40]
"""

from __future__ import annotations

import argparse
import itertools
import math

import numpy as np
from scipy.special import logsumexp

LOG2PI = math.log(2 * math.pi)


def clip1(e, c2):
    return np.clip(e, -c2, c2)


def candidate_rdp(alpha, T, q, c, a, false_law=False):
    n = np.arange(T + 1)
    logpmf = np.array([math.lgamma(T + 1) - math.lgamma(k + 1) - math.lgamma(T - k + 1) for k in n])
    with np.errstate(divide="ignore"):
        logpmf = logpmf + n * math.log(q) + (T - n) * (math.log1p(-q) if q < 1 else 0.0)
    if q == 1:
        logpmf = np.where(n == T, 0.0, -np.inf)
    s = n * (c + a) ** 2 if false_law else (np.sqrt(n) * c + n * a) ** 2
    return float(logsumexp(logpmf + (alpha - 1) * alpha * s / 2) / (alpha - 1))


def log_phi(x):
    return -0.5 * x * x - 0.5 * LOG2PI


def world_loglik(ys, T, policy, bits_xi, bits_others, c2):
    """log density of the release on the grid for one assignment of all Poisson bits.

    ys: list of T broadcastable arrays (grid coordinates). policy(t, hist) returns
    (o_t, gxi_t): the others' averaged residual (already summed over the included others,
    given their bits) and xi''s gradient (in units where C1/B sigma1 = c, clip at c).
    """
    ep = 0.0
    ll = 0.0
    for t in range(T):
        o_t, cxi, rxi = policy(t, ys[:t], bits_others)
        mean = clip1(ep, c2) + bits_xi[t] * cxi
        ll = ll + log_phi(ys[t] - mean)
        ep = ep - clip1(ep, c2) + o_t + bits_xi[t] * rxi
    return ll


def divergences(T, q, c2, policy, alphas, lim, step, others_bits=None):
    """Both Renyi directions by grid quadrature. others_bits: list of (prob, bits) or None."""
    g = np.arange(-lim, lim + step / 2, step)
    out_pq = {al: [] for al in alphas}
    out_qp = {al: [] for al in alphas}
    others = others_bits if others_bits is not None else [(1.0, None)]
    xi_bits = list(itertools.product([0, 1], repeat=T))
    xi_logp = [
        sum(math.log(q) if b else math.log1p(-q) for b in bits) if q < 1 else (0.0 if all(bits) else -np.inf)
        for bits in xi_bits
    ]
    for i0 in range(len(g)):  # chunk over the first coordinate
        ys = [np.array(g[i0])] + [g.reshape((-1,) + (1,) * (T - 2 - k)) for k in range(T - 1)]
        lq_terms, lp_terms = [], []
        for po, ob in others:
            lq_terms.append(math.log(po) + world_loglik(ys, T, policy, [0] * T, ob, c2))
            for lb, bits in zip(xi_logp, xi_bits, strict=False):
                if lb == -np.inf:
                    continue
                lp_terms.append(math.log(po) + lb + world_loglik(ys, T, policy, list(bits), ob, c2))
        shape = np.broadcast_shapes(*[np.shape(x) for x in lq_terms + lp_terms])
        lq = logsumexp(np.stack([np.broadcast_to(x, shape) for x in lq_terms]), axis=0)
        lp = logsumexp(np.stack([np.broadcast_to(x, shape) for x in lp_terms]), axis=0)
        for al in alphas:
            out_pq[al].append(logsumexp(al * lp + (1 - al) * lq))
            out_qp[al].append(logsumexp(al * lq + (1 - al) * lp))
    logvol = T * math.log(step)
    return (
        {al: (logsumexp(v) + logvol) / (al - 1) for al, v in out_pq.items()},
        {al: (logsumexp(v) + logvol) / (al - 1) for al, v in out_qp.items()},
    )


def xi_grad(gmult, c, a_over_c):
    """xi''s gradient g' = gmult * C1 (|gmult| <= G/C1): clip part and residual, in sigma units."""
    s = math.copysign(1.0, gmult) if gmult != 0 else 0.0
    m = abs(gmult)
    cl = min(m, 1.0) * c * s
    res = max(0.0, m - 1.0) * c * s
    return cl, res


def make_fixed_policy(T, c, gratio, o_plus, o_minus, thr, gx):
    """Others' residual o_t = o_plus[t] if y_{t-1} > thr[t] else o_minus[t] (t >= 1); o_0 = o_plus[0]."""

    def policy(t, hist, _ob):
        if t == 0:
            o = o_plus[0]
        else:
            o = np.where(hist[-1] > thr[t], o_plus[t], o_minus[t])
        cl, res = xi_grad(gx[t], c, gratio - 1)
        return o, cl, res

    return policy


def check(name, T, q, c, a, c2, policy, alphas, lim, step, others_bits=None):
    pq, qp = divergences(T, q, c2, policy, alphas, lim, step, others_bits)
    worst = 0.0
    worst_false = 0.0
    for al in alphas:
        cand = candidate_rdp(al, T, q, c, a)
        fal = candidate_rdp(al, T, q, c, a, false_law=True)
        tr = max(pq[al], qp[al])
        worst = max(worst, tr / cand)
        worst_false = max(worst_false, tr / fal)
        print(
            f"  {name} alpha={al:g}: D(P||Q)={pq[al]:.5f} D(Q||P)={qp[al]:.5f} candidate={cand:.5f}"
            f" ratio={tr / cand:.4f} false-law={fal:.5f}"
        )
    return worst, worst_false


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--search", type=int, default=30, help="random adaptive T=2 instances")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    alphas = (2.0, 3.0, 5.0)

    # 0. grid accuracy: q = 1, a = 0, one Gaussian shift per step: exact alpha T c^2 / 2
    c = 1.0
    pol = make_fixed_policy(2, c, 1.0, [0, 0], [0, 0], [0, 0], [1.0, 1.0])
    pq, qp = divergences(2, 1.0, 1.0, pol, alphas, 16.0, 0.1)
    for al in alphas:
        print(f"grid check alpha={al:g}: {pq[al]:.8f} {qp[al]:.8f} exact {al * 2 * c * c / 2:.8f}")

    overall, overall_false = 0.0, 0.0
    # 1. stored-then-drained, T = 3, fixed S: saturate, store b_0, b_1 residuals, drain at t = 2
    for q, c, gr, c2 in [
        (0.5, 0.1, 11.0, 1.0),
        (0.5, 0.3, 3.0, 1.0),
        (0.9, 0.1, 6.0, 2.0),
        (0.2, 0.2, 6.0, 1.5),
        (0.5, 0.1, 4.0, 1.0),  # 2 a <= C2: both stored residuals leak together at t = 2
        (0.9, 0.05, 7.0, 1.0),
    ]:
        a = c * (gr - 1)
        M = 5.0
        pol = make_fixed_policy(3, c, gr, [M, -(M - c2), 0.0], [M, -(M - c2), 0.0], [0, -99, -99], [gr] * 3)
        lim = 3 + c2 + max(alphas) * (2 * c2 + c) + 6
        w, wf = check(f"stored q={q} c={c} G/C1={gr} C2={c2}", 3, q, c, a, c2, pol, alphas, lim, 0.2)
        overall, overall_false = max(overall, w), max(overall_false, wf)

    # 2. rotation has no 1-D analogue; flush picture T = 3 (others at zero)
    for q, c, gr, c2 in [(0.5, 0.5, 2.0, 1.0), (0.5, 1.0, 1.5, 0.3)]:
        a = c * (gr - 1)
        pol = make_fixed_policy(3, c, gr, [0, 0, 0], [0, 0, 0], [0, 0, 0], [gr] * 3)
        lim = 3 + c2 + max(alphas) * (2 * c2 + c) + 6
        w, wf = check(f"flush q={q} c={c} G/C1={gr} C2={c2}", 3, q, c, a, c2, pol, alphas, lim, 0.2)
        overall, overall_false = max(overall, w), max(overall_false, wf)

    # 3. the true mechanism with two Poisson-sampled others (mixture over their bits too), T = 3
    q, c, gr, c2 = 0.5, 0.2, 6.0, 1.0
    a = c * (gr - 1)
    M = 5.0

    def pol_poisson(t, hist, ob):
        # other 1 saturates at t = 0 (residual M), other 2 drains at t = 1 (residual -(M - c2))
        o = [M * ob[0], -(M - c2) * ob[1], 0.0][t] if ob is not None else 0.0
        cl, res = xi_grad(gr, c, gr - 1)
        return o, cl, res

    others = [(((q if b1 else 1 - q) * (q if b2 else 1 - q)), (b1, b2)) for b1 in (0, 1) for b2 in (0, 1)]
    lim = 3 + c2 + max(alphas) * (2 * c2 + c) + 6
    w, wf = check("poisson-others", 3, q, c, a, c2, pol_poisson, alphas, lim, 0.2, others)
    overall, overall_false = max(overall, w), max(overall_false, wf)

    # 4. random adaptive instances, T = 2 (threshold policies, random xi gradients)
    for _k in range(args.search):
        q = float(rng.choice([0.1, 0.5, 0.9]))
        c = float(rng.choice([0.1, 0.3, 1.0]))
        gr = float(rng.choice([1.5, 3.0, 11.0]))
        c2 = float(rng.choice([0.2, 1.0, 3.0]))
        a = c * (gr - 1)
        op = rng.normal(size=2) * 3 * c2
        om = rng.normal(size=2) * 3 * c2
        thr = rng.normal(size=2)
        gx = rng.uniform(-gr, gr, size=2)
        gx[0] = gr
        pol = make_fixed_policy(2, c, gr, op, om, thr, gx)
        lim = 3 + c2 + 3 * (2 * c2 + c) + 6
        pq, qp = divergences(2, q, c2, pol, (2.0, 3.0), lim, 0.1)
        for al in (2.0, 3.0):
            r = max(pq[al], qp[al]) / candidate_rdp(al, 2, q, c, a)
            overall = max(overall, r)
    print(f"worst true/candidate over all instances and orders: {overall:.4f} (must be <= 1)")
    print(f"worst true/false-law bound: {overall_false:.4f} (> 1 shows the check can fail)")


if __name__ == "__main__":
    main()
