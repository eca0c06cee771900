"""K4-K5's pathwise budget on real DiceSGD recursions in d dimensions (reviewer's code).

Both worlds run the error-feedback recursion along one shared history (the budget must hold for
every history, so the iterate path x_t is driven by arbitrary releases): N others with
per-example gradients of norm <= G from an adversarial family (aligned, rotating, saturating,
then draining; random Poisson batches), xi' with norm <= G. Checks, per run,
sum_t ||Delta_t||^2 <= S(n) = (sqrt(n) C1/B + n rho/B)^2,
Delta_t = b_t clip(g', C1)/B + clip(e', C2) - clip(e, C2),
and reports the largest ratio seen (1 = the budget is attained). Also reports the ratio for the false
budget n (C1 + rho)^2 / B^2 (no storage), which real runs must exceed (power).

    python benchmarks/review_dominating/budget_paths.py [--runs 3000]
"""

from __future__ import annotations

import argparse

import numpy as np


def clip(v, c):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v * np.minimum(1.0, c / np.maximum(n, 1e-300))


def run(rng, d, N, B, q, T, C1, C2, G):
    e = np.zeros(d)
    ep = np.zeros(d)
    tot = 0.0
    n = 0
    mode = rng.integers(4)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    drain = rng.integers(1, T)
    for t in range(T):
        # others' gradients: any functions of t and the shared history (here: of t and mode)
        if mode == 0:
            og = rng.normal(size=(N, d))
        elif mode == 1:
            og = np.tile(u, (N, 1)) * (1 if t < drain else -1)
        elif mode == 2:
            ang = 0.3 * t
            v = np.zeros(d)
            v[0], v[1 % d] = np.cos(ang), np.sin(ang)
            og = np.tile(v, (N, 1)) + 0.1 * rng.normal(size=(N, d))
        else:
            og = np.tile(u, (N, 1)) * (1.0 if t < drain else 0.0)
        og = clip(og * G * rng.uniform(0.5, 1.5), G)
        batch = rng.random(N) < q
        o_clip = clip(og[batch], C1).sum(0) / B
        o_res = (og[batch] - clip(og[batch], C1)).sum(0) / B
        # xi''s gradient: a fixed adversarial direction, full norm G, sometimes orthogonal to u
        g = (u if rng.random() < 0.7 else rng.normal(size=d)) * 1.0
        g = g / np.linalg.norm(g) * G
        b = rng.random() < q
        delta = clip(ep, C2) - clip(e, C2) + (clip(g, C1) / B if b else 0.0)
        tot += float(delta @ delta)
        _ = o_clip  # common to both worlds: cancels in Delta
        e = e - clip(e, C2) + o_res
        ep = ep - clip(ep, C2) + o_res + ((g - clip(g, C1)) / B if b else 0.0)
        n += int(b)
    rho = max(0.0, G - C1)
    S = (np.sqrt(n) * C1 / B + n * rho / B) ** 2
    F = n * (C1 + rho) ** 2 / B**2
    return tot, S, F, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    worst, worst_false = 0.0, 0.0
    for _ in range(a.runs):
        d = int(rng.choice([1, 2, 3]))
        N, B = int(rng.choice([5, 20, 50])), float(rng.choice([2.0, 5.0, 10.0]))
        q, T = float(rng.choice([0.2, 0.5, 0.9])), int(rng.choice([3, 10, 30]))
        C1, C2, G = 1.0, float(rng.choice([0.05, 0.2, 1.0])), float(rng.choice([1.5, 3.0, 11.0]))
        tot, S, F, n = run(rng, d, N, B, q, T, C1, C2, G)
        if n:
            worst = max(worst, tot / S)
            worst_false = max(worst_false, tot / F)
    print(
        f"{a.runs} runs: largest sum ||Delta||^2 / S(n) = {worst:.6f} (must be <= 1);"
        f" largest against the false budget n (C1 + rho)^2/B^2 = {worst_false:.3f} (> 1 shows power)"
    )


if __name__ == "__main__":
    main()
