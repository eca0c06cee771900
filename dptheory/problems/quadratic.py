"""``quadratic``: a finite-sum quadratic with every constant the DiceSGD/D2P2 theorems use.

Per sample ``f(x; z_j) = (1/2)(x - z_j)^T H (x - z_j)`` with ``H = diag(linspace(mu, L, d))`` and
``z_j = x* + s xi_j`` where the xi_j are centred exactly (sum xi_j = 0), so
``f(x) = (1/2)(x - x*)^T H (x - x*) + f*``. mu > 0: strongly convex, unique x*; mu = 0: convex,
optima ``x* + ker H`` and ``dist_to_opt`` is the distance to that set.

Constants (computed): L = max eig H, mu = min eig H, per-sample gradient variance
``sigma^2 = mean_j ||H (z_j - x*)||^2`` (independent of x), and a bound on per-sample gradient
norms on the ball ``||x - x*|| <= R`` (R = ||x0 - x*||): ``G <= L R + max_j ||H (x* - z_j)||``.
"""

from __future__ import annotations

import numpy as np
import torch

from accounting.errors import InvalidParameter
from dptheory.problems.base import Problem


def build(
    *,
    d: int = 10,
    n_samples: int = 64,
    mu: float = 0.1,
    L: float = 1.0,
    s: float = 1.0,
    clients: int = 1,
    seed: int = 0,
) -> Problem:
    if not (0 <= mu <= L) or L <= 0:
        raise InvalidParameter("--mu", f"need 0 <= mu <= L and L > 0 (got mu={mu}, L={L})")
    if d < 1 or n_samples < 2:
        raise InvalidParameter("--dim", "need d >= 1 and at least 2 samples")
    rng = np.random.default_rng(seed)
    h = np.linspace(mu, L, d)
    x_star = rng.standard_normal(d)
    xi = rng.standard_normal((n_samples, d))
    xi -= xi.mean(axis=0)
    z = x_star + s * xi
    hd = torch.tensor(h, dtype=torch.float64)

    def loss(params, sample):
        r = params["x"] - sample["z"]
        return 0.5 * (r * hd.to(r.device) * r).sum()

    zero = h == 0
    prob = Problem(
        name="quadratic",
        data={"z": torch.tensor(z, dtype=torch.float64)},
        loss_fn=loss,
        x0={"x": torch.zeros(d, dtype=torch.float64)},
        clients=[a for a in np.array_split(np.arange(n_samples), clients)],
        x_star=x_star,
        f_star=0.0,
        constants={},
        optimum_kind="global minimizer (closed form)" + ("" if mu > 0 else "; convex: optima x* + ker H"),
        default_sample_rate=0.25,
        default_lr=0.2,
        default_steps=500,
        opt_residual=(lambda r: np.where(zero, 0.0, r)) if zero.any() else None,
    )
    prob.f_star = prob.loss(x_star)
    dev = (z - x_star) * h
    radius = float(np.linalg.norm(x_star))  # x0 = 0
    prob.constants = {
        "d": d,
        "N": n_samples,
        "L": float(h.max()),
        "mu": float(h.min()),
        "sigma": float(np.sqrt(np.mean(np.sum(dev**2, axis=1)))),
        "G": float(h.max() * radius + np.max(np.linalg.norm(dev, axis=1))),
        "G_radius": radius,
    }
    return prob
