"""Canaries inside real training (torch; import this module only when you train).

White-box gradient canaries (Steinke et al. 2023, Sec. 6 "gradient space"): canary ``i`` is a
per-example gradient ``norm * u_i`` that the clipped sum receives whenever the canary is in the
dataset *and* sampled in that step (Poisson at the run's rate, like any example).  ``u_i`` is a
Dirac direction (one parameter coordinate per canary, all distinct: exactly orthogonal) or a
random unit direction.  Score: ``<theta_0 - theta_T, u_i>``, the final model's movement along the
canary (for plain SGD, a positive multiple of the summed noisy gradients along ``u_i``).

Black-box input canaries: mislabelled copies of real inputs; score ``-loss`` of the final model.

Each canary is included independently with probability 1/2 (``included``), as both one-run
theorems require.  Hooks:

* :meth:`GradientCanaries.attach_opacus` wraps an Opacus ``DPOptimizer``'s ``add_noise``
  (plain ``opacus.PrivacyEngine`` and ``DptheoryPrivacyEngine`` alike): the canary gradients join
  ``summed_grad`` just before the noise, exactly where a real clipped gradient sits.
* :meth:`GradientCanaries.attach_dptheory` wraps a :class:`dptheory.optim` optimizer's clipped
  sum the same way.
* :func:`audit_training` runs a user's own training function with canaries attached and
  returns the auditor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from accounting.errors import InvalidParameter
from dptheory.auditing.auditor import CanaryScoreAuditor

__all__ = ["GradientCanaries", "InputCanaries", "audit_training", "RunAudit"]


def _flat(params: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).to(torch.float64).cpu() for p in params])


class GradientCanaries:
    """``m`` white-box gradient canaries over a parameter vector of size ``dim``.

    ``kind="dirac"`` needs ``m <= dim``; ``"random"`` draws Gaussian directions normalised to 1.
    ``norm`` is the canary's per-example gradient norm (set it to the clipping bound C, the
    largest a real example can have).  ``coords`` fixes the Dirac coordinates (default: random)."""

    def __init__(
        self,
        dim: int,
        m: int,
        *,
        norm: float,
        sample_rate: float,
        kind: str = "dirac",
        seed: int = 0,
        coords: Sequence[int] | None = None,
    ) -> None:
        if int(m) != m or m < 2:
            raise InvalidParameter("canaries", f"must be an integer >= 2, got {m!r}")
        if kind not in ("dirac", "random"):
            raise InvalidParameter("kind", f"must be 'dirac' or 'random', got {kind!r}")
        if kind == "dirac" and m > dim:
            raise InvalidParameter(
                "canaries", f"Dirac canaries need m <= number of parameters ({dim}), got {m}"
            )
        if not norm > 0:
            raise InvalidParameter("norm", f"must be > 0, got {norm!r}")
        if not 0 < sample_rate <= 1:
            raise InvalidParameter("sample_rate", f"must be in (0, 1], got {sample_rate!r}")
        rng = np.random.default_rng(seed)
        self.m, self.dim, self.kind = int(m), int(dim), kind
        self.norm, self.sample_rate = float(norm), float(sample_rate)
        self.included = rng.random(self.m) < 0.5
        if kind == "dirac":
            chosen = rng.choice(dim, size=self.m, replace=False) if coords is None else np.asarray(coords)
            if (
                chosen.shape != (self.m,)
                or np.unique(chosen).size != self.m
                or chosen.min() < 0
                or chosen.max() >= dim
            ):
                raise InvalidParameter("coords", f"must be {self.m} distinct indices in [0, {dim})")
            self.coords = torch.as_tensor(chosen)
            self.directions = None
        else:
            d = torch.as_tensor(rng.standard_normal((self.m, dim)))
            self.directions = d / d.norm(dim=1, keepdim=True)
        self._gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        self.sampled_total = 0
        self._trace: list[torch.Tensor] = []

    def record(self, flat_params: torch.Tensor) -> None:
        """White-box access to every iterate: store the model's position along each canary
        (call once before training and after every step)."""
        v = flat_params.detach().to(torch.float64).cpu()
        self._trace.append(v[self.coords] if self.kind == "dirac" else self.directions @ v)

    def likelihood_scores(self, step_scale: float, noise_multiplier: float) -> np.ndarray:
        """Per-step likelihood-ratio scores from the recorded iterates (the Neyman-Pearson
        statistic of the *claimed* mechanism): a step's movement along ``u_i`` divided by
        ``step_scale * norm`` (``step_scale = lr / B`` for SGD) is ``b + N(0, z^2)`` with
        ``b ~ Bern(q)`` when the canary is in, ``N(0, z^2)`` when out; the score sums
        ``log(1 - q + q exp((2x - 1) / (2 z^2)))`` over the steps."""
        if len(self._trace) < 2:
            raise InvalidParameter("record", "needs the iterates before and after at least one step")
        trace = torch.stack(self._trace)
        x = ((trace[:-1] - trace[1:]) / (step_scale * self.norm)).numpy()
        z2, q = noise_multiplier**2, self.sample_rate
        return np.logaddexp(np.log1p(-q), np.log(q) + (2 * x - 1) / (2 * z2)).sum(axis=0)

    def step_gradient(self) -> torch.Tensor:
        """Sum of this step's canary gradients (float64, flat): each included canary is sampled
        independently with the run's sample rate."""
        pick = torch.rand(self.m, generator=self._gen, dtype=torch.float64) < self.sample_rate
        pick &= torch.as_tensor(self.included)
        self.sampled_total += int(pick.sum())
        out = torch.zeros(self.dim, dtype=torch.float64)
        if self.kind == "dirac":
            out[self.coords[pick]] = self.norm
        else:
            out += self.norm * self.directions[pick].sum(dim=0)
        return out

    def scores(self, start: torch.Tensor, end: torch.Tensor) -> np.ndarray:
        """``<theta_0 - theta_T, u_i>`` for every canary (flat float64 parameter vectors)."""
        move = (start - end).to(torch.float64)
        s = move[self.coords] if self.kind == "dirac" else self.directions @ move
        return s.numpy().copy()

    def auditor(self, scores: np.ndarray) -> CanaryScoreAuditor:
        return CanaryScoreAuditor(scores[self.included], scores[~self.included])

    # -- hooks --------------------------------------------------------------------------------
    def attach_opacus(self, optimizer: Any) -> None:
        """Add the canary gradients to an Opacus ``DPOptimizer``'s clipped sum before its noise."""
        if not hasattr(optimizer, "add_noise") or not hasattr(optimizer, "params"):
            raise InvalidParameter("optimizer", "must be an Opacus DPOptimizer (from make_private)")
        original = optimizer.add_noise
        params = list(optimizer.params)

        def add_noise_with_canaries() -> None:
            g = self.step_gradient()
            offset = 0
            for p in params:
                n = p.numel()
                if p.summed_grad is not None:
                    p.summed_grad.add_(g[offset : offset + n].view_as(p).to(p.summed_grad))
                offset += n
            original()

        optimizer.add_noise = add_noise_with_canaries

    def attach_dptheory(self, optimizer: Any, *, raw_norm: float | None = None) -> None:
        """Add the canary gradients to a :mod:`dptheory.optim` optimizer's clipped sum (and, for
        DiceSGD, its raw sum, where a canary contributes ``raw_norm * u_i``: its unclipped
        gradient as the algorithm sees it, so ``raw_norm > norm`` feeds the error-feedback state)."""
        ratio = 1.0 if raw_norm is None else float(raw_norm) / self.norm

        def add(sums: dict, g: torch.Tensor, scale: float) -> dict:
            out, offset = {}, 0
            for k, v in sums.items():
                n = v.numel()
                out[k] = v + scale * g[offset : offset + n].view_as(v).to(v)
                offset += n
            return out

        original = optimizer._summed

        def summed_with_canaries(batch, b, fn, *, raw: bool = False):
            scaled, total = original(batch, b, fn, raw=raw)
            g = self.step_gradient()
            return add(scaled, g, 1.0), (None if total is None else add(total, g, ratio))

        optimizer._summed = summed_with_canaries
        if hasattr(optimizer, "_summed_pair"):  # DiceSGD with a residual clip
            original_pair = optimizer._summed_pair

            def pair_with_canaries(batch, b):
                scaled, total = original_pair(batch, b)
                g = self.step_gradient()
                return add(scaled, g, 1.0), add(total, g, ratio)

            optimizer._summed_pair = pair_with_canaries


@dataclasses.dataclass
class InputCanaries:
    """``m`` mislabelled inputs: ``x`` (features), ``y`` (a wrong label), ``included`` mask."""

    x: torch.Tensor
    y: torch.Tensor
    included: np.ndarray

    @classmethod
    def from_data(
        cls, x: torch.Tensor, y: torch.Tensor, m: int, classes: int, *, seed: int = 0
    ) -> InputCanaries:
        """Draw ``m`` inputs (with replacement if needed) and give each a uniformly random wrong label."""
        if int(m) != m or m < 2:
            raise InvalidParameter("canaries", f"must be an integer >= 2, got {m!r}")
        rng = np.random.default_rng(seed)
        idx = torch.as_tensor(rng.integers(0, x.shape[0], size=m))
        shift = torch.as_tensor(rng.integers(1, classes, size=m))
        return cls(x[idx].clone(), (y[idx] + shift) % classes, rng.random(m) < 0.5)

    def training_set(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        keep = torch.as_tensor(self.included)
        return torch.cat([x, self.x[keep]]), torch.cat([y, self.y[keep]])

    def scores(self, loss_per_example: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> np.ndarray:
        with torch.no_grad():
            return (-loss_per_example(self.x, self.y)).to(torch.float64).cpu().numpy()

    def auditor(self, scores: np.ndarray) -> CanaryScoreAuditor:
        return CanaryScoreAuditor(scores[self.included], scores[~self.included])


@dataclasses.dataclass
class RunAudit:
    """What :func:`audit_training` found: the auditor and the canaries' scores."""

    auditor: CanaryScoreAuditor
    scores: np.ndarray
    included: np.ndarray
    canaries: GradientCanaries


def audit_training(
    train: Callable[[], Any],
    model: torch.nn.Module,
    optimizer: Any,
    *,
    canaries: int,
    clip_norm: float,
    sample_rate: float,
    kind: str = "dirac",
    seed: int = 0,
) -> RunAudit:
    """Audit a user's own training: attach ``canaries`` white-box canaries to ``optimizer`` (an
    Opacus ``DPOptimizer``), call ``train()`` (the user's loop over their data loader, which must
    step that optimizer with plain SGD updates), score the canaries on the final ``model``.

    ``clip_norm`` is the optimizer's ``max_grad_norm`` and ``sample_rate`` the rate the
    accountant assumes: the canaries are then worst-case examples of the accounted mechanism, and
    any estimate above the accountant's epsilon means the code leaks more than it accounts for."""
    params = [p for p in model.parameters() if p.requires_grad]
    start = _flat(params)
    gc = GradientCanaries(
        start.numel(), canaries, norm=clip_norm, sample_rate=sample_rate, kind=kind, seed=seed
    )
    gc.attach_opacus(optimizer)
    train()
    scores = gc.scores(start, _flat(params))
    return RunAudit(gc.auditor(scores), scores, gc.included, gc)
