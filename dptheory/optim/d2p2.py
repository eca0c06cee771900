"""D2P2-SGD, D2P-SGD and DP2-SGD (Jiang et al., "Balancing Utility and Privacy", Algs. 1-3).

Alg. 1 (D2P2-SGD), iteration k = 1..K:

    3: sample a minibatch B                                  (here: Poisson at rate q by default)
    4: g^_k^s = grad f(x_k; s) / (||grad f(x_k; s)|| + gamma)  (per-sample normalisation)
    5: g_k = (1/B) sum_s g^_k^s
    6: g~_k = A_k ((1/sqrt p) A_k^T g_k + eps_k),  eps_k ~ N(0, sigma_{eps,k}^2 I_p)
    7: x_{k+1} = x_k - alpha g~_k

Alg. 2 (D2P-SGD): line 6 is ``g~_k = g_k + eps_k`` with eps_k ~ N(0, sigma_{eps,k}^2 I_d)
(no projection). Alg. 3 (DP2-SGD): Alg. 1 with a constant sigma_eps.

Readings of the paper, stated because they change numbers:

* Scaling of A. Lemma 2 draws A_ij ~ N(0, 1); the analysis uses N(0, sigma_A^2) and
  E[A A^T] = p sigma_A^2 I, so E[g~] = sqrt(p) sigma_A^2 g: with sigma_A = 1 the projected step is
  sqrt(p) times the plain one. ``sigma_a=None`` (default) picks sigma_A = p^(-1/4), which makes
  line 6 unbiased (E[g~] = g); pass ``sigma_a=1.0`` for the literal Lemma 2 scaling.
* Per layer. "In practice, the implementation is layer-wise": each parameter tensor l of size
  d_l gets its own A_l of shape (d_l, p_l) with p_l = min(p, d_l), and its own noise eps_l.
* Fresh or fixed A. ``projection='fresh'`` redraws A_k every step (the paper: "A_k is regenerated
  per iteration"); ``'fixed'`` draws it once; ``'none'`` is Alg. 2's line 6 (D2P-SGD).
* Noise. sigma_{eps,k} = z_k / B where z_k is the per-step noise multiplier from
  ``accounting.schedules`` (its ``inv-k`` is the text's sigma_{eps,k}^2 = sigma_eps^2 / k, its
  ``inv-sqrt-k`` Table 3's sigma_eps^2 / sqrt(k)) and 1/B is the add/remove sensitivity of g_k
  (each normalised per-sample gradient has norm < 1), as in accounting/algorithms/d2p2.py. What
  the projection does to that sensitivity is the accountant's business (certified mode there);
  ``mechanism()`` reports p and the projection mode.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from accounting.errors import InvalidParameter
from dptheory.optim.base import PrivateOptimizer, StepInfo, tree_randn

PROJECTIONS = ("fresh", "fixed", "none")


class D2P2SGD(PrivateOptimizer):
    """Alg. 1 (and, via ``projection='none'``, Alg. 2). Pass a schedule as ``noise_multiplier``."""

    algo = "d2p2sgd"

    def __init__(
        self,
        params,
        loss_fn,
        data,
        *,
        gamma: float = 0.01,
        projection_dim: int | None = None,
        projection: str = "fresh",
        sigma_a: float | None = None,
        **kw,
    ):
        super().__init__(params, loss_fn, data, **kw)
        if not gamma > 0 or not math.isfinite(gamma):
            raise InvalidParameter("--gamma", f"must be a finite number > 0 (got {gamma!r})")
        if projection not in PROJECTIONS:
            raise InvalidParameter("--projection", f"must be one of {PROJECTIONS} (got {projection!r})")
        self.gamma = float(gamma)
        self.projection = projection
        d = self.model_dim
        if projection != "none":
            if projection_dim is None:
                projection_dim = max(1, d // 2)
            if int(projection_dim) != projection_dim or projection_dim < 1:
                raise InvalidParameter(
                    "--projection-dim", f"must be an integer >= 1 (got {projection_dim!r})"
                )
        self.p = int(projection_dim) if projection_dim is not None else None
        self.p_layer = {k: min(self.p, v.numel()) for k, v in self.params.items()} if self.p else {}
        self.sigma_a = {
            k: (float(sigma_a) if sigma_a is not None else pl ** (-0.25)) for k, pl in self.p_layer.items()
        }
        self.A: dict[str, torch.Tensor] | None = None
        if projection == "fixed":
            self.A = self._draw_projection()

    def _draw_projection(self) -> dict[str, torch.Tensor]:
        out = {}
        for k, v in self.params.items():
            a = torch.randn(
                (v.numel(), self.p_layer[k]), generator=self.generator, device=self.device, dtype=v.dtype
            )
            out[k] = a * self.sigma_a[k]
        return out

    def sigma_eps(self, t: int) -> float:
        """sigma_{eps,k} for 0-based step t (k = t + 1): ``z_t / B``."""
        return self.noise_multiplier_at(t) / self.expected_batch_size

    def noise_std(self, t: int = 0) -> float:
        return self.sigma_eps(t)

    def _step(self, batch, b) -> StepInfo:
        normed, _ = self._summed(batch, b, lambda n: 1.0 / (n + self.gamma))  # line 4 (summed)
        inv_b = 1.0 / self.expected_batch_size
        g = {k: inv_b * t for k, t in normed.items()}  # line 5
        std = self.sigma_eps(self.t)
        if self.projection == "none":  # Alg. 2, line 6
            eps = tree_randn(self.params, self.generator, std)
            gt = {k: g[k] + eps[k] for k in g}
        else:  # Alg. 1, line 6, per layer
            A = self._draw_projection() if self.projection == "fresh" else self.A
            assert A is not None
            eps, gt = {}, {}
            for k, gk in g.items():
                a = A[k]
                e = (
                    torch.randn(a.shape[1], generator=self.generator, device=self.device, dtype=gk.dtype)
                    * std
                )
                proj = a.T @ gk.reshape(-1) / math.sqrt(a.shape[1]) + e
                gt[k] = (a @ proj).reshape(gk.shape)
                eps[k] = e
        self.params = {k: p - self.lr * gt[k] for k, p in self.params.items()}  # line 7
        self.last_noise = eps
        return StepInfo(b, eps)

    def mechanism(self) -> dict[str, Any]:
        projection = (
            {}  # D2P-SGD has no projection: its accountant refuses projection options
            if self.projection == "none"
            else {"projection_dim": self.p, "model_dim": self.model_dim, "projection": self.projection}
        )
        return {
            "algo": self.algo,
            **self._noise_fields(),
            "sample_rate": self.sample_rate,
            "steps": self.steps,
            "dataset_size": self.dataset_size,
            "batch_size": self.expected_batch_size,
            **projection,
            "noise_std": self.noise_std(0),
            "noise_on": "averaged normalised gradient (sensitivity 1/B), projected coordinates when p is set",
        }


class D2PSGD(D2P2SGD):
    """Alg. 2: D2P2-SGD without projection (dynamic noise on the d-dimensional gradient)."""

    algo = "d2psgd"

    def __init__(self, params, loss_fn, data, **kw):
        kw["projection"] = "none"
        kw.pop("projection_dim", None)
        super().__init__(params, loss_fn, data, **kw)


class DP2SGD(D2P2SGD):
    """Alg. 3: projection with a *constant* noise level (a scalar noise_multiplier is enforced)."""

    algo = "dp2sgd"

    def __init__(self, params, loss_fn, data, **kw):
        super().__init__(params, loss_fn, data, **kw)
        if self.z.size != 1 and not bool((self.z == self.z[0]).all()):
            raise InvalidParameter("--schedule", "dp2sgd uses a constant noise level (schedule constant)")
