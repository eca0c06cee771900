"""Two-dimensional releases, T = 2: exact (grid over R^4) hockey sticks of adaptive, rotating shifts
against the pair (reviewer's code, no project imports).

Shifts: Delta_0^b = s0_b u(theta_b), Delta_1^b(y_0) = s1_b(y_0) u(phi_b(y_0)) with the direction of the
second release turning with the first release (e.g. orthogonal to it) and s1_b taking the rest of the
budget mu_{n_b}^2 (or part of it); not causal in b. The comonotone instance (all shifts along one fixed
unit vector of R^4, full budget) checks the grid against the closed form.

    python benchmarks/review_dominating/two_d.py [--search 30]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pair


def grid(n=45, lim=6.5):
    x = np.linspace(-lim, lim, n)
    h = x[1] - x[0]
    w = np.full(n, h)
    w[0] = w[-1] = h / 2
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi) * w
    return x, pdf


def hockey(policy, q, mu, eps, n=61, lim=None):
    """E_Q (L - gamma)_+ and E_Q (1 - gamma L)_+ with y ~ N(0, I_4) under Q."""
    x, pw = grid(n, lim if lim is not None else 6.0 + float(mu[-1]))
    a0, a1, b0, b1 = np.meshgrid(x, x, x, x, indexing="ij", sparse=True)
    W = pw[:, None, None, None] * pw[None, :, None, None] * pw[None, None, :, None] * pw[None, None, None, :]
    L = 0.0
    for bits in ((0, 0), (0, 1), (1, 0), (1, 1)):
        nb = sum(bits)
        pri = q**nb * (1 - q) ** (2 - nb)
        if nb == 0:
            L = L + pri
            continue
        d0, d1 = policy(bits, mu[nb], a0, a1)  # d0: (2,) array-likes, d1: arrays broadcast over y_0
        l0 = d0[0] * a0 + d0[1] * a1 - (d0[0] ** 2 + d0[1] ** 2) / 2
        l1 = d1[0] * b0 + d1[1] * b1 - (d1[0] ** 2 + d1[1] ** 2) / 2
        L = L + pri * np.exp(l0 + l1)
    g = math.exp(eps)
    return float(np.sum(np.maximum(L - g, 0) * W)), float(np.sum(np.maximum(1 - g * L, 0) * W))


def comonotone(v):
    v = np.asarray(v, float) / np.linalg.norm(v)

    def pol(bits, m, a0, a1):
        return (m * v[0], m * v[1]), (m * v[2] + 0 * a0, m * v[3] + 0 * a0)

    return pol


def rotating(rng):
    th = rng.uniform(0, 2 * np.pi, 4)
    frac = rng.uniform(0, 1, 4)
    k = rng.normal(0, 2, 4)
    spend = rng.random() < 0.7

    def pol(bits, m, a0, a1):
        i = bits[0] * 2 + bits[1]
        s0 = m * math.sqrt(frac[i])
        u0 = (math.cos(th[i]), math.sin(th[i]))
        rest = math.sqrt(max(m * m - s0 * s0, 0.0))
        # second direction turns with the first release: angle = th + pi/2 + k * <y_0, u0>
        ang = th[i] + np.pi / 2 + k[i] * np.tanh(a0 * u0[0] + a1 * u0[1])
        s1 = rest if spend else rest * (0.5 + 0.5 * np.tanh(a0 - a1))
        return (s0 * u0[0], s0 * u0[1]), (s1 * np.cos(ang), s1 * np.sin(ang))

    return pol


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--search", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    for q, z, r, eps in [(0.5, 1.0, 1.0, 0.5), (0.3, 0.8, 2.0, 1.0)]:
        mu = pair.mus(2, z, r)
        got = hockey(comonotone([1, 2, -1, 0.5]), q, mu, eps)
        ref = pair.delta_float_mu(eps, pair.log_pis(2, q), mu)
        print(
            f"selftest q={q} z={z} r={r} eps={eps}: grid {got[0]:.5f} / {got[1]:.5f},"
            f" closed form {ref[0]:.5f} / {ref[1]:.5f}"
        )
    worst = 0.0
    for it in range(a.search):
        q = float(rng.choice([0.2, 0.5, 0.8]))
        z = float(rng.choice([0.7, 1.0, 1.5]))
        r = float(rng.choice([0.0, 1.0, 3.0]))
        eps = float(rng.choice([0.0, 0.5, 1.0, 2.0]))
        mu = pair.mus(2, z, r)
        got = max(hockey(rotating(rng), q, mu, eps))
        bnd = max(pair.delta_float_mu(eps, pair.log_pis(2, q), mu))
        worst = max(worst, got / bnd)
        print(
            f"{it:2d} q={q} z={z} r={r} eps={eps}: exact {got:.5g} bound {bnd:.5g} ratio {got / bnd:.4f}",
            flush=True,
        )
    print(f"worst exact/bound over {a.search} rotating adaptive 2-D instances: {worst:.4f}")


if __name__ == "__main__":
    main()
