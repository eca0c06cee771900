"""Toy problems with known answers: the common :class:`Problem` record and the fixed-point solver.

A problem is a finite sum ``f(x) = (1/N) sum_j f(x; s_j)`` given as a *per-sample* torch loss
(usable by ``torch.func``), its data, a split of the samples across clients, the exact optimum
or stationary point, and constants (L, mu, G, sigma, d) computed from the data -- never typed in.

Fixed points of the *clipped* methods are found by root finding on the exact expected update
direction, evaluated in float64 with the same per-sample gradients the optimizers use:

* 1-D: the expected clipped direction is non-decreasing in x (convex per-sample losses, monotone
  clip), so its zero set is an interval [lo, hi]; we return it (a point when lo = hi, refined by
  ``scipy.optimize.brentq``). Clip-GD on clip21-example1 really has a whole interval of fixed
  points.
* d-D: ``scipy.optimize.root`` from x*, accepted only if the residual is below 1e-10.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from accounting.errors import InvalidParameter

Params = dict[str, Tensor]
LossFn = Callable[[Params, dict[str, Tensor]], Tensor]


@dataclass(frozen=True)
class FixedPoint:
    """Zero set of an expected update direction: ``[lo, hi]`` per coordinate (lo = hi for a point)."""

    lo: np.ndarray
    hi: np.ndarray
    kind: str
    residual: float

    @property
    def point(self) -> np.ndarray:
        return (self.lo + self.hi) / 2

    def distance(self, x: np.ndarray) -> float:
        """Euclidean distance from x to the box [lo, hi] (the point when lo = hi)."""
        x = np.asarray(x, dtype=float).reshape(-1)
        gap = np.maximum(self.lo - x, 0) + np.maximum(x - self.hi, 0)
        return float(np.linalg.norm(gap))

    def to_json(self) -> dict[str, Any]:
        is_point = bool(np.allclose(self.lo, self.hi, rtol=0, atol=1e-12))
        out: dict[str, Any] = {"kind": self.kind, "residual": self.residual}
        if is_point:
            out["point"] = self.point.tolist()
        else:
            out["interval"] = [self.lo.tolist(), self.hi.tolist()]
        return out


@dataclass
class Problem:
    """A finite-sum problem with its exact answer. ``x_star`` is flat (d,), float64."""

    name: str
    data: dict[str, Tensor]
    loss_fn: LossFn
    x0: Params
    clients: list[np.ndarray]
    x_star: np.ndarray
    f_star: float
    constants: dict[str, Any]
    optimum_kind: str
    default_sample_rate: float = 1.0
    default_lr: float = 0.1
    default_steps: int = 500
    notes: dict[str, Any] = field(default_factory=dict)
    # maps x - x_star to the part that measures distance to the *set* of optima (convex, mu = 0)
    opt_residual: Callable[[np.ndarray], np.ndarray] | None = None
    #: Closed forms, where the problem has them: ``x (..., d) -> (..., N, d)`` per-sample gradients
    #: and ``x (..., d) -> (..., N)`` per-sample losses, batched over any leading dimensions (seeds,
    #: recorded steps), float64. They must equal ``torch.func`` on ``loss_fn`` bit for bit
    #: (tests/optim/test_toy_runs_bit_equal.py); the seed-batched runner (dptheory.optim.batched) needs them.
    grads_closed_form: Callable[[Tensor], Tensor] | None = None
    losses_closed_form: Callable[[Tensor], Tensor] | None = None

    # -- basic quantities ---------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return sum(v.numel() for v in self.x0.values())

    @property
    def size(self) -> int:
        return int(next(iter(self.data.values())).shape[0])

    def client_data(self) -> list[dict[str, Tensor]]:
        out = []
        for idx in self.clients:
            t = torch.as_tensor(idx, dtype=torch.long)
            out.append({k: v.index_select(0, t) for k, v in self.data.items()})
        return out

    def params_from_flat(self, x: np.ndarray | Tensor) -> Params:
        flat = torch.as_tensor(np.asarray(x, dtype=np.float64)).reshape(-1)
        out, i = {}, 0
        for k, v in self.x0.items():
            n = v.numel()
            out[k] = flat[i : i + n].reshape(v.shape).to(torch.float64)
            i += n
        return out

    def flat(self, params: Params) -> np.ndarray:
        return torch.cat([v.detach().reshape(-1).to("cpu", torch.float64) for v in params.values()]).numpy()

    def _data64(self) -> dict[str, Tensor]:
        if not hasattr(self, "_d64"):
            self._d64 = {
                k: (v.to(torch.float64) if v.is_floating_point() else v) for k, v in self.data.items()
            }
        return self._d64

    def per_sample_grads(self, x: np.ndarray, *, reference: bool = False) -> np.ndarray:
        """(N, d) float64 per-sample gradients at flat x: the closed form where there is one (equal to
        torch.func bit for bit, tested), else torch.func, the same code as the optimizers."""
        if self.grads_closed_form is not None and not reference:
            flat = torch.as_tensor(np.asarray(x, dtype=np.float64)).reshape(-1)
            return self.grads_closed_form(flat).numpy()
        from torch.func import grad, vmap

        p = self.params_from_flat(x)
        g = vmap(grad(self.loss_fn), in_dims=(None, 0))(p, self._data64())
        return torch.cat([t.reshape(t.shape[0], -1) for t in g.values()], dim=1).numpy()

    def loss(self, x: np.ndarray, *, reference: bool = False) -> float:
        if self.losses_closed_form is not None and not reference:
            flat = torch.as_tensor(np.asarray(x, dtype=np.float64)).reshape(-1)
            return float(self.losses_closed_form(flat).mean())
        from torch.func import vmap

        p = self.params_from_flat(x)
        return float(vmap(self.loss_fn, in_dims=(None, 0))(p, self._data64()).mean())

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.per_sample_grads(x).mean(axis=0)

    def metrics(self, x: np.ndarray) -> dict[str, float]:
        x = np.asarray(x, dtype=float).reshape(-1)
        loss = self.loss(x)
        return {
            "loss": loss,
            "suboptimality": loss - self.f_star,
            "grad_norm": float(np.linalg.norm(self.grad(x))),
            "dist_to_opt": self.dist_to_opt(x),
        }

    def metrics_batched(self, xs: np.ndarray) -> dict[str, np.ndarray]:
        """:meth:`metrics` of every row of ``xs`` (..., d) at once (closed forms required)."""
        if self.grads_closed_form is None or self.losses_closed_form is None:
            raise ValueError(f"{self.name} has no closed-form loss and gradient")
        xt = torch.as_tensor(np.asarray(xs, dtype=np.float64))
        loss = self.losses_closed_form(xt).mean(dim=-1).numpy()
        gbar = self.grads_closed_form(xt).mean(dim=-2).numpy()
        r = np.asarray(xs, dtype=float) - self.x_star
        if self.opt_residual is not None:
            r = self.opt_residual(r)
        return {
            "loss": loss,
            "suboptimality": loss - self.f_star,
            "grad_norm": np.linalg.norm(gbar, axis=-1),
            "dist_to_opt": np.linalg.norm(r, axis=-1),
        }

    def dist_to_opt(self, x: np.ndarray) -> float:
        r = np.asarray(x, dtype=float).reshape(-1) - self.x_star
        if self.opt_residual is not None:
            r = self.opt_residual(r)
        return float(np.linalg.norm(r))

    # -- fixed points of the clipped methods ------------------------------------------------------
    def direction(
        self, algo: str, *, c1: float, c2: float | None, tau: float, gamma: float, client_batch: int | None
    ):
        """The exact expected update direction h(x) whose zeros are the fixed points, or None.

        Returns ``(h, kind)``; ``h`` maps flat x to a (d,) array.
        """
        if algo == "dpsgd":
            return (lambda x: _mean_clipped(self.per_sample_grads(x), c1)), f"mean_i clip(g_i, C={c1})"
        if algo in ("d2p2sgd", "d2psgd", "dp2sgd"):
            return (
                lambda x: _mean_normalised(self.per_sample_grads(x), gamma)
            ), f"mean_i g_i/(||g_i||+{gamma})"
        if algo == "clipsgd":
            if client_batch is None:
                return (
                    lambda x: np.mean(
                        [_clip(self._client_grad(x, i), tau) for i in range(len(self.clients))], axis=0
                    )
                ), f"mean over clients of clip(grad f_i, tau={tau})"
            if client_batch == 1:
                return (
                    lambda x: np.mean(
                        [_mean_clipped(self.per_sample_grads(x)[idx], tau) for idx in self.clients], axis=0
                    )
                ), f"mean over clients of E_xi clip(grad f_i(x; xi), tau={tau}), one sample per round"
            return None, "expected clipped minibatch mean has no closed form for this batch size"
        return None, ""

    def _client_grad(self, x: np.ndarray, i: int) -> np.ndarray:
        return self.per_sample_grads(x)[self.clients[i]].mean(axis=0)

    def clipped_fixed_point(
        self,
        algo: str,
        *,
        c1: float = 1.0,
        c2: float | None = None,
        tau: float = 1.0,
        gamma: float = 0.01,
        client_batch: int | None = None,
    ) -> FixedPoint | None:
        """Exact fixed point (set) of ``algo``'s expected iteration, or None where undefined.

        DiceSGD: at a fixed point ``mean g_i = 0`` (so x = x*) and ``clip(e, C2) = -mean clip(g_i, C1)``,
        solvable iff ``C2 >= ||mean clip(g_i(x*), C1)||``; otherwise there is no fixed point.
        Clip21-SGD / Clip21-SGD2M with full local gradients: ``clip(v_i - g_i) = 0`` forces
        g_i = grad f_i(x) and sum g_i = 0, i.e. x = x*. Stochastic Clip21 has none (None).
        """
        if algo == "dicesgd":
            need = float(np.linalg.norm(_mean_clipped(self.per_sample_grads(self.x_star), c1)))
            c2v = c1 if c2 is None else c2
            if c2v + 1e-12 < need:
                return None
            res = float(np.linalg.norm(self.grad(self.x_star)))
            return FixedPoint(self.x_star.copy(), self.x_star.copy(), f"x* (needs C2 >= {need:.6g})", res)
        if algo in ("clip21sgd", "clip21sgd2m"):
            if client_batch is not None:
                return None
            res = float(np.linalg.norm(self.grad(self.x_star)))
            return FixedPoint(self.x_star.copy(), self.x_star.copy(), "x* (error-feedback fixed point)", res)
        h, kind = self.direction(algo, c1=c1, c2=c2, tau=tau, gamma=gamma, client_batch=client_batch)
        if h is None:
            return None
        if self.dim == 1:
            return _zero_set_1d(lambda t: float(h(np.array([t]))[0]), float(self.x_star[0]), kind)
        return _root_nd(h, self.x_star, kind)


def _clip(v: np.ndarray, c: float) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v if n <= c else v * (c / n)


def _mean_clipped(g: np.ndarray, c: float) -> np.ndarray:
    n = np.linalg.norm(g, axis=1, keepdims=True)
    f = np.minimum(1.0, c / np.where(n > 0, n, np.inf))
    return (g * f).mean(axis=0)


def _mean_normalised(g: np.ndarray, gamma: float) -> np.ndarray:
    n = np.linalg.norm(g, axis=1, keepdims=True)
    return (g / (n + gamma)).mean(axis=0)


def _zero_set_1d(
    h: Callable[[float], float], center: float, kind: str, tol: float = 1e-13
) -> FixedPoint | None:
    """Zero set [lo, hi] of a non-decreasing h; None if h has no sign change on a wide bracket."""
    a, b, width = center - 1.0, center + 1.0, 1.0
    while (h(a) >= 0 or h(b) <= 0) and width < 1e8:
        width *= 2
        a, b = center - width, center + width
    if h(a) >= 0 or h(b) <= 0:
        return None

    def bisect(pred: Callable[[float], bool], lo: float, hi: float) -> float:
        # pred(lo) False, pred(hi) True; returns the boundary
        for _ in range(200):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            if pred(mid):
                hi = mid
            else:
                lo = mid
        return hi

    lo = bisect(lambda t: h(t) > -tol, a, b)
    hi = bisect(lambda t: h(t) >= tol, a, b)
    if hi - lo < 1e-9:
        lo = hi = _root_to_adjacent_doubles(h, a, b)
    res = max(abs(h(lo)), abs(h(hi)))
    return FixedPoint(np.array([lo]), np.array([hi]), kind, float(res))


def _root_to_adjacent_doubles(h: Callable[[float], float], a: float, b: float) -> float:
    """A zero of a non-decreasing h with h(a) < 0 < h(b), bisected until the bracket is two adjacent
    doubles (at most ~1100 halvings); returns the end with the smaller |h|. Finer than a brentq at
    xtol 1e-15, and it keeps scipy.optimize (0.8 s of CPU to import) off the path of a toy run."""
    fa, fb = h(a), h(b)
    while True:
        mid = a + (b - a) / 2
        if mid <= a or mid >= b:
            break
        fm = h(mid)
        if fm == 0:
            return mid
        if fm < 0:
            a, fa = mid, fm
        else:
            b, fb = mid, fm
    return a if abs(fa) <= abs(fb) else b


def _root_nd(h: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, kind: str) -> FixedPoint | None:
    from scipy.optimize import root

    sol = root(h, x0, method="hybr", tol=1e-14)
    r = float(np.linalg.norm(h(sol.x)))
    if not math.isfinite(r) or r > 1e-10:
        return None
    return FixedPoint(sol.x.copy(), sol.x.copy(), kind, r)


def check_positive(option: str, value: float) -> float:
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InvalidParameter(option, f"must be a finite number > 0 (got {value!r})")
    return v
