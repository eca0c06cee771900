"""``stochastic-quadratic``: the setting of the Clip21-SGD2M paper's Theorem 1.

n clients, client i: ``f_i(x) = (L/2)||x - b_i||^2`` (convex, L-smooth), heterogeneous centres
b_i with mean x*. Its stochastic gradient is ``L(x - b_i) + sigma u`` with u uniform on
``{+-e_1, ..., +-e_d}`` (the paper's construction picks the noise "uniformly at random from"
a finite symmetric set). Each client stores the 2d samples ``(b_i, u_k)``; a round that uses
one local sample (sample rate 1/(2d), the default) gets exactly this stochastic gradient.
``||sigma u|| = sigma`` almost surely, so the noise is zero-mean and sigma-sub-Gaussian
(bounded noise is sub-Gaussian with the same parameter).

x* = mean_i b_i, f* computed; L = mu = L; sigma as given; G on the ball of radius
R = ||x0 - x*||: ``G <= L (R + max_i ||b_i - x*||) + sigma``.
"""

from __future__ import annotations

import numpy as np
import torch

from accounting.errors import InvalidParameter
from dptheory.problems.base import Problem, check_positive


def build(
    *, d: int = 10, clients: int = 4, L: float = 1.0, sigma: float = 1.0, hetero: float = 1.0, seed: int = 0
) -> Problem:
    L = check_positive("--L", L)
    if sigma < 0:
        raise InvalidParameter("--sigma", f"must be >= 0 (got {sigma})")
    if d < 1 or clients < 1:
        raise InvalidParameter("--clients", "need d >= 1 and at least one client")
    rng = np.random.default_rng(seed)
    x_star = rng.standard_normal(d)
    u = rng.standard_normal((clients, d))
    u -= u.mean(axis=0)
    b = x_star + hetero * u
    signs = np.concatenate([np.eye(d), -np.eye(d)])  # 2d noise directions, sum 0
    m = 2 * d
    bb = np.repeat(b, m, axis=0)
    ss = np.tile(signs, (clients, 1))

    def loss(params, sample):
        r = params["x"] - sample["b"]
        return 0.5 * L * (r * r).sum() + sigma * (sample["u"] * params["x"]).sum()

    x0 = x_star + 5.0 * np.ones(d) / np.sqrt(d)
    prob = Problem(
        name="stochastic-quadratic",
        data={"b": torch.tensor(bb, dtype=torch.float64), "u": torch.tensor(ss, dtype=torch.float64)},
        loss_fn=loss,
        x0={"x": torch.tensor(x0, dtype=torch.float64)},
        clients=[np.arange(i * m, (i + 1) * m) for i in range(clients)],
        x_star=x_star,
        f_star=0.0,
        constants={},
        optimum_kind="global minimizer (closed form x* = mean b_i)",
        default_sample_rate=1.0 / m,
        default_lr=0.1,
        default_steps=500,
    )
    prob.f_star = prob.loss(x_star)
    radius = float(np.linalg.norm(x0 - x_star))
    prob.constants = {
        "d": d,
        "N": clients * m,
        "clients": clients,
        "samples_per_client": m,
        "L": L,
        "mu": L,
        "sigma": float(sigma),
        "G": float(L * (radius + np.max(np.linalg.norm(b - x_star, axis=1))) + sigma),
        "G_radius": radius,
        "heterogeneity": float(np.sqrt(np.mean(np.sum((L * (b - x_star)) ** 2, axis=1)))),
    }
    return prob
