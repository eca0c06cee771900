"""``logreg-nonconvex``: logistic regression with the non-convex regulariser of Clip21-SGD2M.

Per sample: ``log(1 + exp(-y a^T x)) + lambda sum_j x_j^2 / (1 + x_j^2)``, y in {-1, +1},
rows of the feature matrix normalised to unit norm (as in the paper's experiments, App. H.1).

Datasets: ``synthetic`` (Gaussian features, labels from a random linear model with logistic
noise) or ``breast-cancer`` (scikit-learn's bundled copy: nothing is downloaded; columns
standardised, then rows normalised). Heterogeneous split: samples sorted by label, then cut
into n contiguous parts (label skew).

The stationary point is found numerically (L-BFGS, then a Newton-type root solve of grad f = 0)
and accepted only if ``||grad f|| < 1e-10``; f is non-convex, so it is *a* stationary point
(the one reached from x = 0), not necessarily unique. Constants: per-sample smoothness bound
``L <= max ||a||^2 / 4 + 2 lambda`` (|d^2/dt^2 t^2/(1+t^2)| <= 2), gradient bound
``G <= max ||a|| + lambda (3 sqrt(3)/8) sqrt(d)`` (max |2t/(1+t^2)^2| = 3 sqrt(3)/8), and the
per-sample gradient std at the stationary point.
"""

from __future__ import annotations

import numpy as np
import torch

from accounting.errors import InvalidParameter
from dptheory.problems.base import Problem

DATASETS = ("synthetic", "breast-cancer")


def load(dataset: str, *, n_samples: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if dataset == "synthetic":
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((n_samples, d))
        w = rng.standard_normal(d) * 2
        p = 1 / (1 + np.exp(-a @ w / np.sqrt(d)))
        y = np.where(rng.random(n_samples) < p, 1.0, -1.0)
    elif dataset == "breast-cancer":
        from sklearn.datasets import load_breast_cancer

        ds = load_breast_cancer()
        a = ds.data.astype(float)
        a = (a - a.mean(axis=0)) / a.std(axis=0)
        y = np.where(ds.target == 1, 1.0, -1.0)
    else:
        raise InvalidParameter("--dataset", f"must be one of {DATASETS} (got {dataset!r})")
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    return a, y


def build(
    *,
    dataset: str = "synthetic",
    clients: int = 4,
    lam: float = 0.1,
    n_samples: int = 200,
    d: int = 10,
    seed: int = 0,
) -> Problem:
    if lam < 0:
        raise InvalidParameter("--lam", f"must be >= 0 (got {lam})")
    a, y = load(dataset, n_samples=n_samples, d=d, seed=seed)
    n, dim = a.shape
    if not 1 <= clients <= n:
        raise InvalidParameter("--clients", f"must be in [1, {n}] (got {clients})")
    order = np.argsort(y, kind="stable")

    def loss(params, sample):
        x = params["x"]
        margin = sample["y"] * (sample["a"] * x).sum()
        return torch.nn.functional.softplus(-margin) + lam * (x * x / (1 + x * x)).sum()

    prob = Problem(
        name="logreg-nonconvex",
        data={"a": torch.tensor(a, dtype=torch.float64), "y": torch.tensor(y, dtype=torch.float64)},
        loss_fn=loss,
        x0={"x": torch.zeros(dim, dtype=torch.float64)},
        clients=[np.sort(part) for part in np.array_split(order, clients)],
        x_star=np.zeros(dim),
        f_star=0.0,
        constants={},
        optimum_kind="stationary point (numerical, ||grad f|| < 1e-10; non-convex: not unique)",
        default_sample_rate=0.1,
        default_lr=1.0,
        default_steps=500,
        notes={"dataset": dataset, "lambda": lam},
    )
    prob.x_star = _stationary_point(prob)
    prob.f_star = prob.loss(prob.x_star)
    g = prob.per_sample_grads(prob.x_star)
    rn = np.linalg.norm(a, axis=1)
    prob.constants = {
        "d": dim,
        "N": n,
        "clients": clients,
        "L": float(rn.max() ** 2 / 4 + 2 * lam),
        "mu": None,
        "G": float(rn.max() + lam * 3 * np.sqrt(3) / 8 * np.sqrt(dim)),
        "sigma": float(np.sqrt(np.mean(np.sum((g - g.mean(axis=0)) ** 2, axis=1)))),
    }
    return prob


def _stationary_point(prob: Problem) -> np.ndarray:
    from scipy.optimize import minimize, root

    x0 = np.zeros(prob.dim)
    res = minimize(
        lambda x: (prob.loss(x), prob.grad(x)),
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "maxiter": 5000},
    )
    sol = root(prob.grad, res.x, method="hybr", tol=1e-15)
    x = sol.x if np.linalg.norm(prob.grad(sol.x)) <= np.linalg.norm(prob.grad(res.x)) else res.x
    gn = float(np.linalg.norm(prob.grad(x)))
    if gn > 1e-10:
        raise RuntimeError(f"logreg-nonconvex: stationary point not found (||grad|| = {gn:.3g})")
    return x
