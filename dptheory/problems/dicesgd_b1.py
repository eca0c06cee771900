"""``dicesgd-b1``: the constant-clipping-bias instance of the DiceSGD paper, Appendix B.1.

For a clipping threshold C, with C' = ceil(C) + 1, the per-sample loss is Huber-like:

    f(x, xi) = -C'(x - xi + C'/2)   if x <= xi - C'
               (1/2)(x - xi)^2      if |x - xi| <= C'
               C'(x - xi - C'/2)    if x >= xi + C'

so grad f(x, xi) = -C', x - xi, C' on the three pieces (continuous, 1-smooth, |grad| <= C').
Data: N = C' + 1 samples, C' of them at xi = -1 and one at xi = C'. Then x* = 0 (sum of xi is 0
and every sample is in its quadratic piece at 0).

The paper states that clipped SGD's stationary point is ``x~ = C'/(C' + C) >= 1/2``. Solving
``sum_i clip(grad f(x, xi_i), C) = 0`` exactly gives something else: the xi = C' sample is at
its linear piece for x < 0 (gradient -C', clipped to -C), the C' samples at xi = -1 have
gradient x + 1 <= C unclipped near the root, hence ``C'(x + 1) - C = 0``, i.e.
``x~ = C/C' - 1`` in (-1, 0), bias ``|x~ - x*| = (C' - C)/C'`` (1/(C+1) for integer C).
:meth:`Problem.clipped_fixed_point` computes the root numerically (brentq); the paper's
formula is kept in ``notes['paper_claimed_fixed_point']`` for the verification layer.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from accounting.errors import InvalidParameter
from dptheory.problems.base import Problem, check_positive
from dptheory.runner import MAX_DIM


def huber_of_residual(r: torch.Tensor, cp: float) -> torch.Tensor:
    """The three pieces of f as a function of ``r = x - xi`` (elementwise)."""
    return torch.where(r <= -cp, -cp * (r + cp / 2), torch.where(r >= cp, cp * (r - cp / 2), 0.5 * r * r))


def huber_loss(cp: float):
    def loss(params, sample):
        return huber_of_residual(params["x"][0] - sample["xi"], cp)

    return loss


def huber_grads(cp: float, xi: torch.Tensor):
    """Closed form ``x (..., 1) -> (..., N, 1)``: ``clamp(x - xi, -C', C')`` (torch.func's value: the
    derivative of ``r^2/2`` comes out as ``r/2 + r/2 = r`` exactly, and the linear pieces give +-C')."""

    col = xi[:, None]

    def grads(x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x.unsqueeze(-2) - col, -cp, cp)

    return grads


def huber_losses(cp: float, xi: torch.Tensor):
    """Closed form ``x (..., 1) -> (..., N)`` of :func:`huber_loss`."""

    def losses(x: torch.Tensor) -> torch.Tensor:
        return huber_of_residual(x[..., 0:1] - xi, cp)

    return losses


#: The instance has ceil(C) + 2 samples: C is capped where that reaches the toy problems' size cap
#: (``dptheory run``'s, as for ``--dim``).  Uncapped, ``--c1 1e300`` asked for a list of 1e300
#: entries (a traceback) and ``--c1 1e9`` for 8 GB.
MAX_SAMPLES = MAX_DIM


def build(*, c: float = 1.0, x0: float = 1.0) -> Problem:
    c = check_positive("--c1", c)
    if c > MAX_SAMPLES - 2:
        raise InvalidParameter(
            "--c1",
            f"must be at most {MAX_SAMPLES - 2} for --problem dicesgd-b1, whose ceil(C) + 2 samples "
            f"are capped at {MAX_SAMPLES} (got {c:g})",
        )
    cp = float(math.ceil(c) + 1)
    n = int(cp) + 1
    xi = np.array([-1.0] * int(cp) + [cp])
    data = {"xi": torch.tensor(xi, dtype=torch.float64)}
    x_star = np.array([0.0])
    prob = Problem(
        name="dicesgd-b1",
        data=data,
        loss_fn=huber_loss(cp),
        x0={"x": torch.tensor([float(x0)], dtype=torch.float64)},
        clients=[np.arange(n)],
        grads_closed_form=huber_grads(cp, data["xi"]),
        losses_closed_form=huber_losses(cp, data["xi"]),
        x_star=x_star,
        f_star=0.0,
        constants={},
        optimum_kind="global minimizer (closed form: mean of xi = 0, all samples quadratic at 0)",
        default_sample_rate=1.0,
        default_lr=0.1,
        default_steps=500,
        notes={
            "C": c,
            "C_prime": cp,
            "paper_claimed_fixed_point": cp / (cp + c),
            "exact_clipped_fp_formula": c / cp - 1,
        },
    )
    prob.f_star = prob.loss(x_star)
    g = prob.per_sample_grads(x_star)[:, 0]
    prob.constants = {
        "d": 1,
        "N": n,
        "L": 1.0,  # each piece has second derivative 0 or 1
        "mu": 0.0,  # linear pieces: convex, not strongly convex globally
        "mu_local": 1.0,  # strongly convex on [-1 + ... ] where all samples are quadratic
        "G": cp,  # |grad f(x, xi)| <= C' everywhere
        "sigma": float(np.sqrt(np.mean((g - g.mean()) ** 2))),  # per-sample std at x*
    }
    return prob
