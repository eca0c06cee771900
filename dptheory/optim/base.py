"""Shared machinery of the private optimizers: devices, seeds, sampling, per-sample gradients.

Parameters are a ``dict[str, Tensor]`` (a pytree ``torch.func`` understands), and a loss is a
*per-sample* function ``loss_fn(params, sample) -> scalar`` where ``sample`` is a dict of
tensors without the batch dimension. Per-sample gradients come from
``vmap(grad(loss_fn), in_dims=(None, 0))``: one batched call per step, no Python loop over
samples. Every random draw (batch, noise, projection) goes through one ``torch.Generator``
owned by the optimizer, so a run is a pure function of its seed on CPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from accounting.errors import InvalidParameter

Params = dict[str, Tensor]
Batch = dict[str, Tensor]
LossFn = Callable[[Params, Batch], Tensor]

SAMPLINGS = ("poisson", "fixed")


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``auto`` -> CUDA when present, else CPU; ``cuda`` without CUDA is a usage error."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InvalidParameter("--device", "cuda requested but CUDA is not available (use auto or cpu)")
        return torch.device(device)
    raise InvalidParameter("--device", f"must be auto, cpu or cuda (got {device!r})")


def make_generator(device: torch.device, seed: int) -> torch.Generator:
    """One generator per run: all randomness of a run flows from ``seed``."""
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen


def per_sample_grad_fn(loss_fn: LossFn) -> Callable[[Params, Batch], Params]:
    """``(params, batch) -> {name: (B, *shape)}`` per-sample gradients via torch.func."""
    from torch.func import grad, vmap

    return vmap(grad(loss_fn), in_dims=(None, 0))


def batch_loss_fn(loss_fn: LossFn) -> Callable[[Params, Batch], Tensor]:
    """``(params, batch) -> (B,)`` per-sample losses (vectorised)."""
    from torch.func import vmap

    return vmap(loss_fn, in_dims=(None, 0))


def per_sample_norms(grads: Params) -> Tensor:
    """L2 norm of each sample's *whole* gradient (all tensors flattened together)."""
    sq = None
    for g in grads.values():
        s = g.reshape(g.shape[0], -1).pow(2).sum(dim=1)
        sq = s if sq is None else sq + s
    assert sq is not None
    return sq.sqrt()


def weighted_sum(grads: Params, weights: Tensor) -> Params:
    """``sum_i weights[i] * grads[i]`` per tensor (one tensordot per tensor)."""
    return {k: torch.tensordot(weights, g, dims=([0], [0])) for k, g in grads.items()}


def clip_factors(norms: Tensor, c: float, *, mode: str = "flat", gamma: float = 0.0) -> Tensor:
    """Per-sample scale factors.

    ``flat``: ``clip(g, C) = min(1, C/||g||) g`` (DiceSGD paper eq. (2)); a zero gradient keeps
    factor 1. ``automatic``: ``C g / (||g|| + gamma)`` (Bu et al.); its norm is < C, so the
    sensitivity (and hence the noise calibration) is the same as flat clipping at C.
    """
    if mode == "flat":
        return torch.clamp(c / norms, max=1.0)
    if mode == "automatic":
        return c / (norms + gamma)
    raise InvalidParameter("--clip-mode", f"must be flat or automatic (got {mode!r})")


def clip_vector(v: Params, c: float) -> Params:
    """``min(1, C/||v||) v`` on the whole pytree (used for DiceSGD's ``clip(e, C2)``)."""
    n = tree_norm(v)
    f = 1.0 if float(n) <= c else c / float(n)
    return {k: t * f for k, t in v.items()}


def tree_norm(v: Params) -> Tensor:
    return torch.sqrt(sum((t.pow(2).sum() for t in v.values()), torch.zeros((), dtype=_dtype(v))))


def tree_zeros(v: Params) -> Params:
    return {k: torch.zeros_like(t) for k, t in v.items()}


def tree_randn(v: Params, gen: torch.Generator, std: float) -> Params:
    """Isotropic Gaussian with the shapes of ``v`` (drawn even when std is 0: keeps streams aligned)."""
    return {
        k: torch.randn(t.shape, generator=gen, device=t.device, dtype=t.dtype) * std for k, t in v.items()
    }


def flatten(v: Params) -> Tensor:
    return torch.cat([t.reshape(-1) for t in v.values()])


def unflatten(flat: Tensor, like: Params) -> Params:
    out, i = {}, 0
    for k, t in like.items():
        n = t.numel()
        out[k] = flat[i : i + n].reshape(t.shape)
        i += n
    return out


def _dtype(v: Params) -> torch.dtype:
    return next(iter(v.values())).dtype


def to_device(data: Batch, device: torch.device) -> Batch:
    return {k: t.to(device) for k, t in data.items()}


def noise_schedule(noise_multiplier: float | Sequence[float] | np.ndarray, steps: int | None) -> np.ndarray:
    """Normalise a scalar or per-step multiplier into an array (scalar -> length-1, reused)."""
    z = np.atleast_1d(np.asarray(noise_multiplier, dtype=float))
    if z.ndim != 1 or z.size == 0:
        raise InvalidParameter("--noise-multiplier", "must be a number or a 1-D sequence")
    if not np.all(np.isfinite(z)) or np.any(z < 0):
        raise InvalidParameter("--noise-multiplier", "must be finite and >= 0")
    if steps is not None and z.size not in (1, steps):
        raise InvalidParameter("--noise-multiplier", f"schedule has {z.size} entries, expected {steps}")
    return z


@dataclass
class StepInfo:
    """What one step did: batch size drawn and the noise actually added (for audits/tests)."""

    batch_size: int
    noise: Params | None


class PrivateOptimizer:
    """Common part of the single-server per-sample-gradient methods (DPSGD-GC, DiceSGD, D2P2).

    The optimizer owns the dataset so that the *sampling* (Poisson at rate q, as the accountant
    assumes; or fixed-size uniform batches) is part of the algorithm, like line 3 of each paper's
    pseudo-code. ``B`` below is always the expected batch size ``q N`` (docs/architecture.md).
    """

    algo: str = "base"

    def __init__(
        self,
        params: Params,
        loss_fn: LossFn,
        data: Batch,
        *,
        lr: float,
        sample_rate: float = 1.0,
        noise_multiplier: float | Sequence[float] | np.ndarray = 0.0,
        steps: int | None = None,
        seed: int = 0,
        device: str | torch.device = "auto",
        sampling: str = "poisson",
        schedule: str | None = None,
        compile: bool = False,
    ) -> None:
        self.device = resolve_device(device)
        self.params: Params = {k: v.detach().to(self.device).clone() for k, v in params.items()}
        self.data = to_device(data, self.device)
        self.loss_fn = loss_fn
        self.dataset_size = int(next(iter(self.data.values())).shape[0])
        if not (0 < sample_rate <= 1) or math.isnan(sample_rate):
            raise InvalidParameter("--sample-rate", f"must be in (0, 1] (got {sample_rate!r})")
        if sampling not in SAMPLINGS:
            raise InvalidParameter("--sampling", f"must be one of {SAMPLINGS} (got {sampling!r})")
        if not lr > 0 or not math.isfinite(lr):
            raise InvalidParameter("--lr", f"must be a finite number > 0 (got {lr!r})")
        self.lr = float(lr)
        self.sample_rate = float(sample_rate)
        self.sampling = sampling
        self.steps = steps
        self.z = noise_schedule(noise_multiplier, steps)
        self.schedule = schedule or ("constant" if self.z.size == 1 else "custom")
        # torch.compile the per-sample-gradient + clip + sum kernel (dynamic batch size). Same
        # numbers as eager up to float rounding; the first call compiles (tens of seconds).
        self.compile = bool(compile)
        self._kernels: dict[bool, Callable[..., Any]] = {}
        self.expected_batch_size = self.sample_rate * self.dataset_size
        self.seed = int(seed)
        self.generator = make_generator(self.device, seed)
        self.t = 0  # number of steps taken
        self._psg = per_sample_grad_fn(loss_fn)
        self.last_noise: Params | None = None

    # -- randomness -------------------------------------------------------------------------
    def noise_multiplier_at(self, t: int) -> float:
        """Base multiplier times the schedule entry of step ``t`` (0-based)."""
        if self.z.size == 1:
            return float(self.z[0])
        if t >= self.z.size:
            raise InvalidParameter("--steps", f"noise schedule has only {self.z.size} steps")
        return float(self.z[t])

    def sample_batch(self) -> Batch:
        """Poisson: each example independently with prob. q. Fixed: round(qN) without replacement."""
        n = self.dataset_size
        if self.sample_rate >= 1.0:
            return self.data
        if self.sampling == "poisson":
            mask = torch.rand(n, generator=self.generator, device=self.device) < self.sample_rate
            idx = mask.nonzero().squeeze(1)
        else:
            b = max(1, round(self.sample_rate * n))
            idx = torch.randperm(n, generator=self.generator, device=self.device)[:b]
        return {k: v.index_select(0, idx) for k, v in self.data.items()}

    def per_sample_grads(self, batch: Batch) -> Params:
        return self._psg(self.params, batch)

    # -- API ----------------------------------------------------------------------------------
    def step(self, batch: Batch | None = None) -> StepInfo:
        """One iteration. ``batch`` overrides the optimizer's own sampling (benchmarks)."""
        if batch is None:
            batch = self.sample_batch()
        b = int(next(iter(batch.values())).shape[0])
        info = self._step(batch, b)
        self.t += 1
        return info

    def _step(self, batch: Batch, b: int) -> StepInfo:  # pragma: no cover - abstract
        raise NotImplementedError

    def _summed(
        self, batch: Batch, b: int, fn: Callable[[Tensor], Tensor], *, raw: bool = False
    ) -> tuple[Params, Params | None]:
        """``(sum_i fn(||g_i||) g_i, sum_i g_i if raw)``; an empty Poisson batch sums to zero.

        ``fn`` must be the same function of the norms at every call of a given optimizer (the
        kernel is built, and compiled when asked, once per ``raw``).
        """
        if b == 0:
            return tree_zeros(self.params), (tree_zeros(self.params) if raw else None)
        kernel = self._kernels.get(raw)
        if kernel is None:
            psg = self._psg

            def kernel(params: Params, batch: Batch) -> tuple[Params, Params | None]:
                g = psg(params, batch)
                scaled = weighted_sum(g, fn(per_sample_norms(g)))
                total = {k: t.sum(dim=0) for k, t in g.items()} if raw else None
                return scaled, total

            if self.compile:
                kernel = torch.compile(kernel, dynamic=True)
            self._kernels[raw] = kernel
        return kernel(self.params, batch)

    def mechanism(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """The mechanism this code realises, with PrivacyParams field names (see subclasses)."""
        raise NotImplementedError

    def noise_std(self, t: int = 0) -> float:  # pragma: no cover - abstract
        """Std of each coordinate of the noise the code adds at step ``t``, in update units."""
        raise NotImplementedError

    def _noise_fields(self) -> dict[str, Any]:
        """Noise part of ``mechanism()``: base multiplier, schedule name, per-step values."""
        return {
            "noise_multiplier": float(self.z[0]),
            "schedule": self.schedule,
            "schedule_values": None if self.z.size == 1 else self.z.tolist(),
        }

    @property
    def model_dim(self) -> int:
        return sum(v.numel() for v in self.params.values())
