"""Independent check of the conservation law (K4) and the total-shift budget (K5).

Reviewer's script (numpy only, no project code). For the DiceSGD hidden state with
h(e) = e - clip(e, C2), D world ``e_{t+1} = h(e_t) + o_t`` and D' world
``e'_{t+1} = h(e'_t) + o_t + b_t r_t`` (o_t: the others' averaged residuals, identical in both
worlds along one history; ||r_t|| <= a), the candidate claims, for n = sum b_t inclusions,

    sum_t ||u_t||^2 <= n^2 a^2,    u_t = clip(e'_t, C2) - clip(e_t, C2)        (K4)
    sum_t ||b_t c_t + u_t||^2 <= (sqrt(n) c + n a)^2,   ||c_t|| <= c          (K5)

Attacks: random high-dimensional sequences, rotations (state held outside the ball, xi' pushing
orthogonally), stored-then-drained residuals (equality case), and a hill-climbing search that
maximises the ratio over the others' sequence, xi''s residual directions and bits.
A deliberately false variant (``n a^2`` instead of ``n^2 a^2``) is checked too, to show that the
search can find violations when they exist.

    python benchmarks/review_conservation/conservation_attack.py [--iters 300]
"""

from __future__ import annotations

import argparse

import numpy as np


def clip(e: np.ndarray, c: float) -> np.ndarray:
    n = np.linalg.norm(e)
    return e if n <= c else e * (c / n)


def run(o: np.ndarray, r: np.ndarray, b: np.ndarray, c2: float) -> tuple[float, np.ndarray]:
    """Returns (sum ||u_t||^2, per-step u) for T = len(b) releases."""
    d = o.shape[1]
    e, ep = np.zeros(d), np.zeros(d)
    us = []
    for t in range(len(b)):
        ce, cep = clip(e, c2), clip(ep, c2)
        us.append(cep - ce)
        e = e - ce + o[t]
        ep = ep - cep + o[t] + b[t] * r[t]
    us = np.array(us)
    return float((us**2).sum()), us


def ratio(o, r, b, c2, a, c, false_law=False):
    n = int(b.sum())
    if n == 0:
        return 0.0, 0.0
    su, us = run(o, r, b, c2)
    # K5 with the worst clipped-gradient direction: c_t aligned with u_t when b_t = 1
    un = np.linalg.norm(us, axis=1)
    delta2 = float(((b * c + un) ** 2).sum())
    k4 = su / ((n * a * a) if false_law else (n * a) ** 2)
    k5 = delta2 / (np.sqrt(n) * c + n * a) ** 2
    return k4, k5


def unit_rows(x):
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-300)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    worst = {"K4": 0.0, "K5": 0.0, "false": 0.0}

    def upd(o, r, b, c2, a, c):
        k4, k5 = ratio(o, r, b, c2, a, c)
        kf, _ = ratio(o, r, b, c2, a, c, false_law=True)
        worst["K4"], worst["K5"], worst["false"] = (
            max(worst["K4"], k4),
            max(worst["K5"], k5),
            max(worst["false"], kf),
        )
        return k4

    # 1. random instances, dimensions 1..200, residual of norm exactly a, others of various scales
    for _ in range(2000):
        d = int(rng.choice([1, 2, 3, 10, 200]))
        T = int(rng.integers(2, 40))
        c2 = float(rng.choice([0.1, 1.0, 5.0]))
        a = float(rng.choice([0.01, 0.3, 1.0, 10.0]))
        scale = float(rng.choice([0.0, 0.1, 1.0, 3.0, 30.0]))
        o = rng.normal(size=(T, d)) * scale * c2
        r = unit_rows(rng.normal(size=(T, d))) * a
        b = (rng.random(T) < rng.uniform(0.05, 1)).astype(float)
        upd(o, r, b, c2, a, 1.0)
    rnd = dict(worst)

    # 2. rotation: others hold e at norm M along e1, xi' pushes along e2
    for M in (1.5, 3.0, 10.0, 100.0):
        for T in (5, 20, 80):
            d, c2, a = 2, 1.0, 0.5
            o = np.zeros((T, d))
            o[:, 0] = c2  # refill what the clip removes: e stays at norm >= M along e1
            o[0, 0] = M
            r = np.tile([0.0, a], (T, 1))
            for nb in (1, 3, T):
                b = np.zeros(T)
                b[:nb] = 1
                upd(o, r, b, c2, a, 1.0)
    rot = dict(worst)

    # 3. stored-then-drained (the equality case): saturate, store n residuals, drain in one step
    eq = []
    for n in (1, 2, 5, 20):
        T, c2, a = n + 3, 1.0, 0.25
        o = np.zeros((T, 1))
        o[0, 0] = 10.0  # saturate: e_1 = 10
        for t in range(1, n + 1):
            o[t, 0] = c2  # refill what the clip removes
        o[n + 1, 0] = -(10.0 - c2)  # drain: e_{n+2} = 0, e' = n a
        r = np.full((T, 1), a)
        b = np.zeros(T)
        b[1 : n + 1] = 1
        eq.append(ratio(o, r, b, c2, a, 0.0)[0])
        upd(o, r, b, c2, a, 1.0)

    # 4. hill climbing on the K4 ratio (and on the false law), d = 1, 2, 3
    for target in ("K4", "false"):
        best_all = 0.0
        for trial in range(12):
            d = 1 + trial % 3
            T = int(rng.integers(3, 12))
            c2, a = 1.0, float(rng.choice([0.2, 0.7, 2.0]))
            o = rng.normal(size=(T, d)) * 2
            r = unit_rows(rng.normal(size=(T, d))) * a
            b = (rng.random(T) < 0.5).astype(float)
            b[0] = 1

            def score(o, r, b, c2=c2, a=a, target=target):
                return ratio(o, r, b, c2, a, 1.0, false_law=(target == "false"))[0]

            cur = score(o, r, b)
            step = 1.0
            for _it in range(args.iters):
                o2, r2, b2 = o + rng.normal(size=o.shape) * step, r.copy(), b.copy()
                if rng.random() < 0.3:
                    r2 = unit_rows(r + rng.normal(size=r.shape) * step) * a
                if rng.random() < 0.1:
                    i = rng.integers(T)
                    b2[i] = 1 - b2[i]
                s = score(o2, r2, b2)
                if s >= cur:
                    o, r, b, cur = o2, r2, b2, s
                else:
                    step = max(step * 0.995, 1e-3)
            upd(o, r, b, c2, a, 1.0)
            best_all = max(best_all, cur)
        print(f"hill-climb target {target}: best ratio {best_all:.6f}")
    print(f"random instances: worst K4 ratio {rnd['K4']:.6f}, K5 ratio {rnd['K5']:.6f}")
    print(f"with rotations:   worst K4 ratio {rot['K4']:.6f}, K5 ratio {rot['K5']:.6f}")
    print("stored-then-drained K4 ratio (n = 1, 2, 5, 20):", " ".join(f"{x:.6f}" for x in eq))
    print(
        f"overall worst: K4 {worst['K4']:.6f} (minus 1: {worst['K4'] - 1:.2e}, rounding at equality)  "
        f"K5 {worst['K5']:.6f}  (must be <= 1)"
    )
    print(f"false law n a^2 (must be violated, > 1): {worst['false']:.3f}")


if __name__ == "__main__":
    main()
