"""DiceSGD and D2P2-SGD as Opacus ``DPOptimizer`` subclasses on the per-sample gradients of
``GradSampleModule``; only dptheory's certified accountant may account them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from opacus.optimizers import DPOptimizer

from accounting.errors import InvalidParameter

from .d2p2_accounting import d2p2_layers


class _PerSampleOptimizer(DPOptimizer):
    """Shared part: per-sample gradients from ``p.grad_sample``, own noise, certified hooks only."""

    algo = "base"

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        noise_multiplier: float,
        max_grad_norm: float,
        expected_batch_size: int | None,
        loss_reduction: str = "mean",
        generator: torch.Generator | None = None,
        secure_mode: bool = False,
        sample_rate: float,
        dataset_size: int,
        **kwargs: Any,
    ) -> None:
        if secure_mode:
            raise NotImplementedError(f"{type(self).__name__} does not implement Opacus's secure_mode noise")
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected options {sorted(kwargs)}")
        super().__init__(
            optimizer,
            noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm,
            expected_batch_size=expected_batch_size,
            loss_reduction=loss_reduction,
            generator=generator,
            secure_mode=False,
        )
        from accounting import validate

        self.sample_rate = validate.rate("sample_rate", sample_rate)
        # an integer (200.9 is refused: int() would silently account a smaller dataset)
        self.dataset_size = validate.positive_int("dataset_size", dataset_size)
        #: B = q N, the expected batch size the algorithm averages by (float, as dptheory.optim).
        self.batch_size = self.sample_rate * self.dataset_size
        self.t = 0
        self.last_noise: list[torch.Tensor] | None = None

    # soundness: only dptheory's certified accountant may account these optimizers
    def attach_step_hook(self, fn) -> None:
        if getattr(fn, "_dptheory_accountant", None) is None:
            raise TypeError(
                f"{type(self).__name__} must be accounted by dptheory's certified {self.algo} accountant: "
                "set privacy_engine.accountant = DptheoryAccountant() (or use DptheoryPrivacyEngine)"
            )
        super().attach_step_hook(fn)

    def _per_sample(self) -> list[torch.Tensor]:
        gs = []
        for p in self.params:
            g = getattr(p, "grad_sample", None)
            if g is None:
                raise ValueError(
                    "per-sample gradients not found: wrap the model in Opacus's GradSampleModule"
                )
            if isinstance(g, list):
                raise ValueError(
                    f"{type(self).__name__}: gradient accumulation ({len(g)} batches per step) changes the "
                    "sample rate the certified accountant assumes; take one optimizer step per batch"
                )
            if getattr(g, "_dptheory_used", False):
                raise RuntimeError(
                    "step() called twice on the same per-sample gradients; run backward() first"
                )
            gs.append(g.to(p.dtype))
        for p in self.params:
            p.grad_sample._dptheory_used = True
        return gs

    @staticmethod
    def _norms(gs: list[torch.Tensor]) -> torch.Tensor:
        sq = None
        for g in gs:
            s = g.reshape(g.shape[0], -1).pow(2).sum(dim=1)
            sq = s if sq is None else sq + s
        return sq.sqrt()

    def _randn(self, shape, like: torch.Tensor) -> torch.Tensor:
        return torch.randn(shape, generator=self.generator, device=like.device, dtype=like.dtype)

    def pre_step(self, closure=None) -> bool:
        if len(self.params) == 0:
            return True
        self._update(self._per_sample())
        if self.step_hook:
            self.step_hook(self)
        self._is_last_step_skipped = False
        self.t += 1
        return True

    def _update(self, gs: list[torch.Tensor]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def dptheory_mechanism(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def noise_std(self) -> float:  # pragma: no cover - abstract
        """Per-coordinate std of the noise on the averaged update at the current step."""
        raise NotImplementedError

    def state_dict(self):
        sd = dict(self.original_optimizer.state_dict())
        sd["dptheory"] = self._own_state()
        return sd

    def load_state_dict(self, state_dict) -> None:
        sd = dict(state_dict)
        own = sd.pop("dptheory", None)
        self.original_optimizer.load_state_dict(sd)
        if own is not None:
            self._load_own_state(own)

    def _own_state(self) -> dict[str, Any]:
        return {"t": self.t}

    def _load_own_state(self, own: dict[str, Any]) -> None:
        self.t = int(own["t"])


def residual_clip_as_grad_bound(
    c1: float, grad_bound: float | None, residual_clip: float | None
) -> float | None:
    """DiceSGD's residual clip R as the enforced gradient bound G = C1 + R.

    With flat clipping, pre-clipping every per-sample gradient to C1 + R and then to C1 leaves the
    error increment clip(g, C1 + R) - clip(g, C1), of norm <= R: exactly the residual clip of
    ``dptheory.optim``, and the certified accountant's rho = G - C1 = R.
    """
    if residual_clip is None:
        return grad_bound
    if grad_bound is not None:
        raise InvalidParameter("--residual-clip", "give either grad_bound or residual_clip, not both")
    if not (isinstance(residual_clip, int | float) and math.isfinite(residual_clip) and residual_clip >= 0):
        raise InvalidParameter("--residual-clip", f"must be a finite number >= 0 (got {residual_clip!r})")
    return float(c1) + float(residual_clip)


class DiceSGDOptimizer(_PerSampleOptimizer):
    """DiceSGD (DiceSGD paper, Alg. 2) on Opacus's per-sample gradients.

    With the wrapped optimizer ``torch.optim.SGD(lr=eta)`` (no momentum) one step is exactly
    :class:`dptheory.optim.DiceSGD`'s::

        v = (1/B) sum_i clip(g_i, C1) + clip(e, C2);   p.grad = v + w,  w ~ N(0, sigma1^2 I)
        x <- x - eta p.grad;                           e <- e + (1/B) sum_i g_i - v

    with ``C1 = max_grad_norm``, ``sigma1 = z C1 / B`` (z = ``noise_multiplier``, dptheory's
    convention, docs/architecture.md) and ``B = q N``. Any other wrapped optimizer (e.g. Adam) is
    post-processing of ``v + w`` (Alg. 3 for Adam). The error buffer ``e`` (one tensor per
    parameter) is part of ``state_dict()``.

    ``grad_bound=G`` first clips every per-sample gradient to norm G (enforced, so the certified
    accountant's gradient-bound assumption holds by construction); with ``G >= C1`` this only
    changes the error feedback. Without it the certified noise is very large unless C2 is tiny
    (``c2="auto"`` in :meth:`DptheoryPrivacyEngine.make_private_with_epsilon`).
    """

    algo = "dicesgd"

    def __init__(
        self,
        optimizer,
        *,
        c2: float | None = None,
        grad_bound: float | None = None,
        residual_clip: float | None = None,
        **kw,
    ):
        super().__init__(optimizer, **kw)
        self.c1 = float(self.max_grad_norm)
        self.c2 = self.c1 if c2 is None else float(c2)
        if not (self.c1 > 0 and self.c2 > 0):
            raise InvalidParameter("--c2", "C1 (max_grad_norm) and C2 must be > 0")
        grad_bound = residual_clip_as_grad_bound(self.c1, grad_bound, residual_clip)
        if grad_bound is not None and not grad_bound >= self.c1:
            raise InvalidParameter("--grad-bound", f"must be >= C1 = {self.c1:g} (got {grad_bound!r})")
        self.grad_bound = None if grad_bound is None else float(grad_bound)
        self.error = [torch.zeros_like(p) for p in self.params]  # e_0 = 0

    def noise_std(self) -> float:
        return float(self.noise_multiplier) * self.c1 / self.batch_size

    def _update(self, gs: list[torch.Tensor]) -> None:
        b_inv = 1.0 / self.batch_size
        if gs[0].shape[0] == 0:
            clipped = [torch.zeros_like(p) for p in self.params]
            raw = [torch.zeros_like(p) for p in self.params]
        else:
            n = self._norms(gs)
            if self.grad_bound is not None:
                pre = torch.clamp(self.grad_bound / n, max=1.0)
                gs = [torch.einsum("i,i...->i...", pre, g) for g in gs]
                n = torch.minimum(n, torch.full_like(n, self.grad_bound))
            f = torch.clamp(self.c1 / n, max=1.0)
            clipped = [torch.tensordot(f, g, dims=([0], [0])) for g in gs]
            raw = [g.sum(dim=0) for g in gs]
        e_norm = math.sqrt(sum(float(e.pow(2).sum()) for e in self.error))
        ce = 1.0 if e_norm <= self.c2 else self.c2 / e_norm
        std = self.noise_std()
        noise = []
        for p, cl, r, i in zip(self.params, clipped, raw, range(len(self.error)), strict=True):
            v = b_inv * cl + self.error[i] * ce
            w = self._randn(p.shape, p) * std
            p.grad = (v + w).view_as(p)
            self.error[i] = self.error[i] + b_inv * r - v
            noise.append(w)
        self.last_noise = noise

    def dptheory_mechanism(self) -> dict[str, Any]:
        return {
            "algo": "dicesgd",
            "sample_rate": self.sample_rate,
            "dataset_size": self.dataset_size,
            "batch_size": self.batch_size,
            "c1": self.c1,
            "c2": self.c2,
            "grad_bound": self.grad_bound,
        }

    def _own_state(self) -> dict[str, Any]:
        return {"t": self.t, "error": [e.detach().clone() for e in self.error]}

    def _load_own_state(self, own: dict[str, Any]) -> None:
        self.t = int(own["t"])
        self.error = [e.to(p.device, p.dtype).clone() for e, p in zip(own["error"], self.params, strict=True)]


class D2P2Optimizer(_PerSampleOptimizer):
    """D2P2-SGD (Jiang et al., Alg. 1; Alg. 2 with ``projection="none"``) on Opacus's per-sample gradients.

    Exactly :class:`dptheory.optim.D2P2SGD`'s step (per-layer projection, same draw order from
    ``generator``), with the wrapped ``torch.optim.SGD(lr=alpha)``::

        g = (1/B) sum_i g_i / (||g_i|| + gamma);  per tensor l: A_l (d_l x p_l, N(0, sigma_l^2)),
        p.grad = A_l ((1/sqrt(p_l)) A_l^T g_l + eps_l),  eps_l ~ N(0, (z_k / B)^2 I)

    ``noise_multipliers`` is the per-step schedule z_1..z_T (``noise_multiplier`` for a constant
    one); ``optimizer.noise_multiplier`` is the current step's z_k. ``max_grad_norm`` is unused: the
    per-sample normalisation bounds the sensitivity by 1. ``projection="fresh"`` redraws A every
    step, ``"fixed"`` draws it once (its exact factor is certified), ``"none"`` is D2P-SGD.
    """

    algo = "d2p2sgd"

    def __init__(
        self,
        optimizer,
        *,
        noise_multipliers: Sequence[float] | None = None,
        gamma: float = 0.01,
        projection_dim: int | None = None,
        projection: str = "fresh",
        sigma_a: float | None = None,
        **kw,
    ):
        super().__init__(optimizer, **kw)
        if projection not in ("fresh", "fixed", "none"):
            raise InvalidParameter("--projection", f"must be fresh, fixed or none (got {projection!r})")
        if not (gamma > 0 and math.isfinite(gamma)):
            raise InvalidParameter("--gamma", f"must be a finite number > 0 (got {gamma!r})")
        self.gamma = float(gamma)
        self.projection = projection
        self.algo = "d2psgd" if projection == "none" else "d2p2sgd"
        z0 = float(self.noise_multiplier)
        self.schedule = np.asarray([z0] if noise_multipliers is None else noise_multipliers, dtype=float)
        if self.schedule.ndim != 1 or self.schedule.size == 0 or np.any(~(self.schedule > 0)):
            raise InvalidParameter("--noise-multiplier", "the schedule must be a list of numbers > 0")
        self.noise_multiplier = float(self.schedule[0])
        self.layers = d2p2_layers(self.params, projection_dim, sigma_a) if projection != "none" else []
        self.A: list[torch.Tensor] | None = None
        self.fixed_factor: float | None = None
        if projection == "fixed":
            self.A = self._draw_projection()
            self.fixed_factor = max(
                float(torch.linalg.matrix_norm(a.double(), ord=2)) / math.sqrt(pl)
                for a, (pl, _) in zip(self.A, self.layers, strict=True)
            ) * (1.0 + 1e-9)  # singular values to ~1e-15 relative; round the factor up

    def _draw_projection(self) -> list[torch.Tensor]:
        return [
            self._randn((p.numel(), pl), p) * s for p, (pl, s) in zip(self.params, self.layers, strict=True)
        ]

    def z_at(self, t: int) -> float:
        if self.schedule.size == 1:
            return float(self.schedule[0])
        if t >= self.schedule.size:
            raise InvalidParameter("--steps", f"the noise schedule has only {self.schedule.size} steps")
        return float(self.schedule[t])

    def noise_std(self) -> float:
        return self.z_at(self.t) / self.batch_size

    def _update(self, gs: list[torch.Tensor]) -> None:
        self.noise_multiplier = self.z_at(self.t)  # what hooks (and the accountant) see for this step
        b_inv = 1.0 / self.batch_size
        if gs[0].shape[0] == 0:
            g = [torch.zeros_like(p) for p in self.params]
        else:
            f = 1.0 / (self._norms(gs) + self.gamma)
            g = [b_inv * torch.tensordot(f, x, dims=([0], [0])) for x in gs]
        std = self.noise_std()
        noise = []
        if self.projection == "none":
            for p, gl in zip(self.params, g, strict=True):
                e = self._randn(p.shape, p) * std
                p.grad = (gl + e).view_as(p)
                noise.append(e)
        else:
            A = self._draw_projection() if self.projection == "fresh" else self.A
            for p, gl, a in zip(self.params, g, A, strict=True):
                e = self._randn(a.shape[1], p) * std
                proj = a.T @ gl.reshape(-1) / math.sqrt(a.shape[1]) + e
                p.grad = (a @ proj).view_as(p)
                noise.append(e)
        self.last_noise = noise

    def dptheory_mechanism(self) -> dict[str, Any]:
        return {
            "algo": self.algo,
            "sample_rate": self.sample_rate,
            "batch_size": self.batch_size,
            "projection": self.projection,
            "layers": [list(x) for x in self.layers],
            "fixed_factor": self.fixed_factor,
        }

    def _own_state(self) -> dict[str, Any]:
        return {"t": self.t, "A": None if self.A is None else [a.detach().clone() for a in self.A]}

    def _load_own_state(self, own: dict[str, Any]) -> None:
        self.t = int(own["t"])
        if own.get("A") is not None:
            self.A = [a.to(p.device, p.dtype) for a, p in zip(own["A"], self.params, strict=True)]


#: the optimizer class behind each ``DptheoryPrivacyEngine`` algorithm name (the engine builds it).
OPTIMIZER_CLASSES = {"dicesgd": DiceSGDOptimizer, "d2p2sgd": D2P2Optimizer, "d2psgd": D2P2Optimizer}
