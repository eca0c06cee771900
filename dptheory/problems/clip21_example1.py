"""``clip21-example1``: Example 1 of the Clip21-SGD2M paper (after Chen, Wu, Hong 2020).

Two clients, one sample each: f_1(x) = (L/2)(x - a)^2, f_2(x) = (L/2)(x + a)^2 (1-D).
f = (f_1 + f_2)/2 has x* = 0, f* = L a^2 / 2. Clip-GD at level tau < L a started with
|x0| <= a - tau/L receives clipped gradients -tau and +tau and never moves: its fixed-point
set is the whole interval [-(a - tau/L), a - tau/L], which :meth:`clipped_fixed_point` returns.
"""

from __future__ import annotations

import numpy as np
import torch

from dptheory.problems.base import Problem, check_positive


def build(*, a: float = 3.0, L: float = 1.0, x0: float = 1.0) -> Problem:
    a = check_positive("--a", a)
    L = check_positive("--L", L)
    data = {"a": torch.tensor([a, -a], dtype=torch.float64)}

    def loss(params, sample):
        r = params["x"][0] - sample["a"]
        return 0.5 * L * r * r

    a_t = data["a"]
    a_col = a_t[:, None]

    def grads(x: torch.Tensor) -> torch.Tensor:
        """``(..., 1) -> (..., 2, 1)``: torch.func differentiates ``((L/2) r) r`` into
        ``(L/2) r + r (L/2)``, two equal roundings, so ``2 ((L/2) r)`` is its exact value."""
        h = 0.5 * L * (x.unsqueeze(-2) - a_col)
        return h + h

    def losses(x: torch.Tensor) -> torch.Tensor:
        r = x[..., 0:1] - a_t
        return 0.5 * L * r * r

    prob = Problem(
        name="clip21-example1",
        data=data,
        loss_fn=loss,
        x0={"x": torch.tensor([float(x0)], dtype=torch.float64)},
        clients=[np.array([0]), np.array([1])],
        grads_closed_form=grads,
        losses_closed_form=losses,
        x_star=np.array([0.0]),
        f_star=0.5 * L * a * a,
        constants={},
        optimum_kind="global minimizer (closed form x* = 0)",
        default_sample_rate=1.0,
        default_lr=0.1,
        default_steps=300,
        notes={"a": a},
    )
    r = abs(float(x0)) + a  # ball around x* containing x0, radius |x0|; gradient bound on it
    prob.constants = {
        "d": 1,
        "N": 2,
        "clients": 2,
        "L": L,
        "mu": L,
        "G": L * r,
        "G_radius": abs(float(x0)),
        "sigma": L * a,  # per-client gradient deviation from grad f: |L(x - a) - Lx| = L a
    }
    return prob
