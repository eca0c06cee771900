"""Numerics of the comonotone pair (reviewer's code): float log-space vs mpmath, tails, q = 1, the
reverse direction's missing threshold, and the rho = 0 check against DP-SGD (dp-accounting PLD).

    python benchmarks/review_dominating/numerics.py
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pair
from dp_accounting.pld import privacy_loss_distribution as pld


def float_vs_mp(rng, n=40):
    worst = 0.0
    for _ in range(n):
        T = int(rng.choice([1, 2, 5, 30, 150, 600]))
        q = float(rng.choice([1e-4, 0.01, 0.02, 0.3, 0.9, 1.0]))
        z = float(10 ** rng.uniform(-0.5, 2.5))
        r = float(rng.choice([0.0, 0.25, 1.0, 10.0, 1000.0]))
        eps = float(rng.choice([0.0, 0.1, 1.0, 2.0, 10.0, 50.0]))
        f = max(pair.delta_float(eps, T, q, z, r), 0.0)
        m = float(pair.delta_mp(eps, T, q, z, r))
        if m > 1e-290:
            rel = abs(f - m) / m
            worst = max(worst, rel)
            flag = "  <-- float differs" if rel > 1e-6 else ""
            print(f"T={T} q={q} z={z:.4g} r={r} eps={eps}: float {f:.10g} mp {m:.10g}{flag}")
        else:
            print(f"T={T} q={q} z={z:.4g} r={r} eps={eps}: float {f:.3g} mp {m:.3g} (below 1e-290)")
    print(f"worst relative float/mp difference above 1e-290: {worst:.2e}")


def reverse_threshold_edge():
    """pi_0 >= 1/gamma: S*(z) > 1/gamma everywhere, so H(Q*||P*) = 0 exactly (no z'_g)."""
    T, q, z, r = 150, 0.02, 20.0, 1.0
    pi0 = (1 - q) ** T
    e0 = -math.log(pi0)
    print(f"T=150 q=0.02: pi_0 = {pi0:.5f}; reverse direction is 0 for eps >= {e0:.5f}")
    for eps in (e0 - 0.01, e0 + 0.01, 5.0):
        fwd, rev = pair.delta_mp(eps, T, q, z, r, both=True)
        print(f"  eps={eps:.5f}: fwd {mp.nstr(fwd, 6)} rev {mp.nstr(rev, 6)}")


def q_one():
    """q = 1: P* = N(mu_T, 1), the Gaussian closed form."""
    for T, z, r, eps in [(1, 1.0, 0.0, 1.0), (4, 2.0, 0.5, 0.5), (150, 30.0, 1.0, 2.0)]:
        mu = (math.sqrt(T) + T * r) / z
        g = mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)
        print(
            f"q=1 T={T} z={z} r={r} eps={eps}: pair {pair.delta_float(eps, T, 1.0, z, r):.12g}"
            f" gaussian {mp.nstr(g, 12)}"
        )


def tails():
    """delta far in the tail: log-space float vs mp."""
    for T, q, z, r, eps in [
        (150, 0.02, 0.5, 1.0, 50.0),
        (150, 0.02, 2.0, 10.0, 50.0),
        (10, 0.5, 0.05, 0.0, 40.0),
        (150, 0.02, 200.0, 10.0, 1.0),
        (1000, 0.001, 3.0, 0.0, 30.0),
    ]:
        f = pair.delta_float(eps, T, q, z, r)
        m = pair.delta_mp(eps, T, q, z, r)
        print(f"tail T={T} q={q} z={z} r={r} eps={eps}: float {f:.6g} mp {mp.nstr(m, 8)}")


def rho0_vs_dpsgd():
    """At rho = 0 the pair must never be below DP-SGD's exact delta (dp-accounting, optimistic PLD)."""
    worst = math.inf
    for T, q, z in [
        (150, 0.02, 1.0),
        (150, 0.02, 2.0),
        (50, 0.1, 1.5),
        (1, 0.3, 0.8),
        (10, 1.0, 3.0),
        (1000, 0.01, 1.2),
    ]:
        ev = pld.from_gaussian_mechanism(
            z, sampling_prob=q, pessimistic_estimate=False, value_discretization_interval=1e-4
        ).self_compose(T)
        ev_p = pld.from_gaussian_mechanism(
            z, sampling_prob=q, pessimistic_estimate=True, value_discretization_interval=1e-4
        ).self_compose(T)
        for eps in (0.5, 1.0, 2.0, 4.0):
            ours = pair.delta_float(eps, T, q, z, 0.0)
            lo, hi = ev.get_delta_for_epsilon(eps), ev_p.get_delta_for_epsilon(eps)
            worst = min(worst, ours / max(hi, 1e-300))
            print(
                f"rho=0 T={T} q={q} z={z} eps={eps}: pair {ours:.4g}  DP-SGD PLD [{lo:.4g}, {hi:.4g}]"
                f"  pair/DP-SGD {ours / max(hi, 1e-300):.3g}{'  <-- BELOW DP-SGD' if ours < lo else ''}"
            )
    print(f"smallest pair / DP-SGD(pessimistic) over the table: {worst:.3g}")


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    q_one()
    reverse_threshold_edge()
    tails()
    rho0_vs_dpsgd()
    float_vs_mp(rng)
