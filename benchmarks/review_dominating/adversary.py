"""Optimised adversaries for the small-T DiceSGD model (reviewer's code, no project imports).

For fixed (T, q, z, r, C2, eps), maximise the exact hockey-stick divergence (both directions) of
the fixed-S DiceSGD instance of ``small_t.dice_instance`` over its policy parameters (xi''s
gradient direction and residual size, the others' residual contributions, all functions of the
past releases) with Nelder-Mead from random and store-then-release starts, on a coarse grid; the
best policy is re-evaluated on the fine grid and compared with the bound and the false variants.

    python benchmarks/review_dominating/adversary.py [--iters 150]
"""

from __future__ import annotations

import argparse

import numpy as np
import small_t as st
from scipy import optimize

CASES = [  # T, q, z, r, C2 (in units of C1/B), eps
    (2, 0.3, 1.0, 2.0, 1.0, 1.0),
    (2, 0.5, 1.5, 10.0, 1.0, 2.0),
    (3, 0.3, 1.0, 2.0, 1.0, 1.0),
    (3, 0.5, 2.0, 10.0, 2.0, 2.0),
]
COARSE = {2: 401, 3: 51}


def unpack(x, T):
    k = 0
    own_dir = x[k : k + 3 * T].reshape(T, 3)
    k += 3 * T
    own_res = x[k : k + 3 * T].reshape(T, 3)
    k += 3 * T
    oth = x[k : k + 3 * T].reshape(1, T, 3)
    k += 3 * T
    return {"own_dir": own_dir, "own_res": own_res, "oth": oth, "oth_scale": float(abs(x[k]))}


def pack(pol, T):
    return np.concatenate(
        [pol["own_dir"].ravel(), pol["own_res"].ravel(), pol["oth"].ravel(), [pol["oth_scale"]]]
    )


def value(x, T, q, z, r, C2n, eps, n):
    P, Q = st.dice_instance(T, q, z, r, C2n, unpack(x, T))
    return max(st.evaluate(P, Q, T, eps, n=n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only-t", type=int, default=0, help="run only the cases with this T")
    ap.add_argument("--starts", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    for T, q, z, r, C2, eps in CASES:
        if a.only_t and T != a.only_t:
            continue
        C2n = C2 / z
        bnd = max(st.bound(eps, T, q, z, r))
        best_x, best_v = None, -1.0
        starts = [pack(st.random_policy(rng, T, 1, z, C2n), T) for _ in range(2)]
        # a store-friendly start: others push the state far out, then pull it back
        sp = st.random_policy(rng, T, 1, z, C2n)
        sp["oth"][0, :, 0] = np.linspace(3, -3, T)
        sp["oth_scale"] = 2 * C2n
        starts.append(pack(sp, T))
        for x0 in starts[-a.starts :]:
            res = optimize.minimize(
                lambda x, T=T, q=q, z=z, r=r, C2n=C2n, eps=eps: -value(x, T, q, z, r, C2n, eps, COARSE[T]),
                x0,
                method="Nelder-Mead",
                options={"maxfev": a.iters, "xatol": 1e-3, "fatol": 1e-7},
            )
            if -res.fun > best_v:
                best_v, best_x = -res.fun, res.x
        fine = value(best_x, T, q, z, r, C2n, eps, None)
        # the store-then-release instance (analytic optimum of K4) for reference
        P, Q = st.dice_instance(T, q, z, r, C2n, st.store_release_policy(T, C2n))
        store = max(st.evaluate(P, Q, T, eps))
        fl = {
            k: max(f(eps, T, q, z, r))
            for k, f in (("F1", st.false_F1), ("F2", st.false_F2), ("F3", st.false_F3))
        }
        print(
            f"T={T} q={q} z={z} r={r} C2={C2} eps={eps}: optimised true {fine:.6g} (coarse {best_v:.6g}),"
            f" store-release {store:.6g}, bound {bnd:.6g}, true/bound {max(fine, store) / bnd:.4f};"
            f" false variants "
            + ", ".join(f"{k} {v:.4g} (true/{k} {max(fine, store) / v:.3f})" for k, v in fl.items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
