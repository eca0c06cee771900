"""Independent end-to-end simulation of the 2-D DiceSGD run that the orthogonal audit certifies.

Nothing of ``accounting.audit.dicesgd_orthogonal`` is used to compute: the module is called only to
obtain its *claim* (the design it certified: the others' schedule, xi''s steps, the weights, the
direction and threshold of the test, and its eps_lower). This script then

1. checks the instance is a legal DiceSGD run (norms <= G, counts <= N - 1 others, sigma = z C1/B);
2. simulates the real recursion of docs/hidden-state.md "The mechanism" with per-example gradient
   vectors, clip at C1, error state, clip(e, C2), the fixed divisor B and 2-D isotropic noise,
   drawing xi''s Poisson bit, the others' Poisson counts (``Bin(n_t, q)``: the others' gradients at a
   step are one vector, so their sum is exactly count x vector) AND the noise, under D' and under D;
3. compares the empirical test probabilities with the mixture formula (recomputed here) and with
   the exact Gaussian D-side;
4. gives an independent eps lower bound from the brute-force indicators alone (Clopper-Pearson,
   two-sided split of beta = 0.01 over the two probabilities), to set against the module's number;
5. power: the same comparison against wrong models: sigma = z C1 / (2B), a release of
   clip(e_{t+1}, C2) (wrong order), the others' counts frozen at their mean (no Poisson noise, the
   "fixed-others" limit that would overstate the leak); each should fail by many standard errors.

    PYTHONPATH=/work/wt/ortho python benchmarks/review_orthogonal/brute_force.py --g 2 --c2 0.5 \
        --z 11.08 --runs 2000000
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from scipy import special, stats

C1, B, Q, N, T, DELTA = 1.0, 1000.0, 0.02, 50_000, 150, 1e-5


def clip_rows(x: np.ndarray, c: float) -> np.ndarray:
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x * np.minimum(1.0, c / np.maximum(n, 1e-300))


def simulate(plan, g: float, c2: float, sigma: float, runs: int, with_xi: bool, rng, noise: bool = True,
             wrong_order: bool = False, mean_others: bool = False) -> np.ndarray:
    """S = sum_t w_t y_t[e1] for ``runs`` independent DiceSGD runs (bits and, if ``noise``, noise)."""
    e = np.zeros((runs, 2))
    s = np.zeros(runs)
    g_xi = np.array([g, 0.0])
    for t in range(T):
        n_t, j_t = plan.others[t]
        g_o = np.array([0.0, math.copysign(C1 + B * abs(j_t), j_t)]) if j_t else np.zeros(2)
        k = rng.binomial(n_t, Q, size=runs) if n_t else np.zeros(runs, dtype=np.int64)
        if mean_others:  # a wrong model: the others' counts at their mean (no Poisson noise)
            k = np.full(runs, n_t * Q)
        bx = (rng.random(runs) < Q) if (with_xi and plan.xi_steps[t]) else np.zeros(runs, dtype=bool)
        grads_sum = bx[:, None] * g_xi[None, :] + k[:, None] * g_o[None, :]
        clipped_sum = bx[:, None] * clip_rows(g_xi, C1)[None, :] + k[:, None] * clip_rows(g_o, C1)[None, :]
        if wrong_order:
            e_new = e + (grads_sum - clipped_sum) / B
            v = clipped_sum / B + clip_rows(e_new, c2)
        else:
            v = clipped_sum / B + clip_rows(e, c2)
        e = e + grads_sum / B - v
        w = plan.weights[t]
        if w:
            y1 = v[:, 0] + (rng.normal(0.0, sigma, size=runs) if noise else 0.0)
            s += w * y1
    return s


def cp_lower(k: int, n: int, beta: float) -> float:
    return 0.0 if k == 0 else float(stats.beta.ppf(beta, k, n - k + 1))


def cp_upper(k: int, n: int, beta: float) -> float:
    return 1.0 if k == n else float(stats.beta.ppf(1 - beta, k + 1, n - k))


def main() -> None:
    from accounting.audit.dicesgd_orthogonal import dicesgd_orthogonal_epsilon_lower, orthogonal_plan

    ap = argparse.ArgumentParser()
    ap.add_argument("--g", type=float, required=True)
    ap.add_argument("--c2", type=float, required=True)
    ap.add_argument("--z", type=float, required=True)
    ap.add_argument("--runs", type=int, default=2_000_000)
    ap.add_argument("--claim-samples", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    g, c2, z = a.g, a.c2, a.z
    eps_mod, det = dicesgd_orthogonal_epsilon_lower(
        sample_rate=Q, noise_multiplier=z, steps=T, delta=DELTA, c1=C1, c2=c2, batch_size=B, grad_bound=g,
        dataset_size=N, samples=a.claim_samples, pilot_samples=20_000, seed=0,
    )  # fmt: skip
    plan = orthogonal_plan(
        sample_rate=Q, noise_multiplier=z, steps=T, c1=C1, c2=c2, batch_size=B, grad_bound=g,
        dataset_size=N, lam=det["lam"], store=det["store"], drain=det["drain"], weights="matched",
    )  # fmt: skip
    u, direction = det["threshold"], det["direction"]
    out = dict(g=g, c2=c2, z=z, module_eps_lower=eps_mod, module_point=det["point_estimate"],
               direction=direction, threshold=u, lam=det["lam"], drain=det["drain"])
    # 1. legality
    sigma = z * C1 / B
    out["sigma_matches"] = math.isclose(plan.sigma, sigma, rel_tol=1e-12)
    out["residual_matches"] = math.isclose(plan.residual, (g - C1) / B, rel_tol=1e-12)
    out["clip_step_matches"] = math.isclose(plan.clip_step, C1 / B, rel_tol=1e-12)
    out["max_other_norm_over_G"] = max(C1 + B * abs(j) for n_t, j in plan.others if n_t) / g
    out["max_others"] = max(n for n, _ in plan.others)
    out["others_le_N_minus_1"] = out["max_others"] <= N - 1
    out["steps"] = plan.steps
    out["xi_steps"] = int(sum(plan.xi_steps))
    w = np.array(plan.weights)
    s_tot = sigma * float(np.linalg.norm(w))
    rng = np.random.default_rng(a.seed)
    # 2-3. brute force with noise, under D' and D
    runs = a.runs
    s_dp = np.concatenate([simulate(plan, g, c2, sigma, runs // 4, True, rng) for _ in range(4)])
    s_d = np.concatenate([simulate(plan, g, c2, sigma, runs // 4, False, rng) for _ in range(4)])
    n = s_dp.size
    if direction == "add":
        k_dp, k_d = int((s_dp > u).sum()), int((s_d > u).sum())
        exact_d = float(special.ndtr(-u / s_tot))
    else:
        k_dp, k_d = int((s_dp < u).sum()), int((s_d < u).sum())
        exact_d = float(special.ndtr(u / s_tot))
    # mixture formula recomputed here from bits-only draws (noise integrated out analytically)
    m = np.concatenate([simulate(plan, g, c2, sigma, runs // 4, True, rng, noise=False) for _ in range(4)])
    x = special.ndtr((m - u) / s_tot) if direction == "add" else special.ndtr((u - m) / s_tot)
    out["P_Dprime_bruteforce"] = k_dp / n
    out["P_Dprime_mixture"] = float(x.mean())
    se = math.sqrt(max(k_dp / n * (1 - k_dp / n), 1e-300) / n)
    out["Dprime_zscore"] = (k_dp / n - float(x.mean())) / math.sqrt(se**2 + x.var() / x.size)
    out["P_D_bruteforce"] = k_d / n
    out["P_D_exact"] = exact_d
    out["D_zscore"] = (k_d / n - exact_d) / math.sqrt(exact_d * (1 - exact_d) / n)
    # 4. an independent eps lower bound from brute-force indicators only (CP, beta split 0.005 + 0.005)
    if direction == "add":
        num, den = cp_lower(k_dp, n, 0.005) - DELTA, cp_upper(k_d, n, 0.005)
        pnum, pden = k_dp / n - DELTA, exact_d
    else:
        num, den = cp_lower(k_d, n, 0.005) - DELTA, cp_upper(k_dp, n, 0.005)
        pnum, pden = exact_d - DELTA, k_dp / n
    out["bruteforce_cp_eps_lower"] = math.log(num / den) if num > 0 else 0.0
    out["bruteforce_point_eps"] = math.log(pnum / pden) if pnum > 0 and pden > 0 else 0.0
    # with the exact D-side (Gaussian) and CP on the D'-side only at beta = 0.01
    if direction == "add":
        num2, den2 = cp_lower(k_dp, n, 0.01) - DELTA, exact_d
    else:
        num2, den2 = exact_d - DELTA, cp_upper(k_dp, n, 0.01)
    out["bruteforce_cp_exactD_eps_lower"] = math.log(num2 / den2) if num2 > 0 else 0.0
    # the module's method redone with this review's own bits-only draws and own Bernstein bound
    lg = math.log(2 / 0.01)
    rad = math.sqrt(2 * x.var(ddof=1) * lg / x.size) + 7 * lg / (3 * (x.size - 1))
    if direction == "add":
        num3, den3 = float(x.mean()) - rad - DELTA, exact_d
    else:
        num3, den3 = exact_d - DELTA, float(x.mean()) + rad
    out["own_mixture_bernstein_eps_lower"] = math.log(num3 / den3) if num3 > 0 else 0.0
    pm = float(x.mean())
    out["own_mixture_point_eps"] = (
        math.log((pm - DELTA) / exact_d) if direction == "add" else math.log((exact_d - DELTA) / pm)
    )
    # 5. power: wrong models evaluated on the same question must disagree with the brute force
    s_half = s_tot / 2
    xh = special.ndtr((m - u) / s_half) if direction == "add" else special.ndtr((u - m) / s_half)
    out["wrong_sigma_mixture"] = float(xh.mean())
    out["wrong_sigma_zscore"] = (k_dp / n - float(xh.mean())) / math.sqrt(se**2 + xh.var() / xh.size)
    for name, kw in (("wrong_order", dict(wrong_order=True)), ("mean_others", dict(mean_others=True))):
        mw = simulate(plan, g, c2, sigma, runs // 4, True, rng, noise=False, **kw)
        xw = special.ndtr((mw - u) / s_tot) if direction == "add" else special.ndtr((u - mw) / s_tot)
        out[f"{name}_mixture"] = float(xw.mean())
        out[f"{name}_zscore"] = (k_dp / n - float(xw.mean())) / math.sqrt(se**2 + xw.var() / xw.size)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
