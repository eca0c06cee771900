"""DPSGD-GC: DP-SGD with per-sample gradient clipping (DiceSGD paper, Algorithm 1).

Zhang, Bu, Wu, Hong (arXiv 2311.14632), Alg. 1:

    3: draw minibatch B_t from D                      (here: Poisson sampling at rate q)
    4: g~_i = clip(grad f(x_t; xi_i), C)              clip(g, C) = min(1, C/||g||) g
    5: x_{t+1} = x_t - (eta_t / B) (sum_{i in B_t} g~_i + w_t)
    6: w_t ~ N(0, sigma1^2 I)

The noise is added to the *sum* of clipped gradients, whose add/remove sensitivity is C, so
the noise multiplier is ``z = sigma1 / C`` and the noise on the averaged update
``(1/B)(sum + w)`` has per-coordinate std ``z C / B`` (docs/architecture.md). ``B`` is the
expected batch size ``q N`` (Opacus' and dp-accounting's convention for Poisson sampling).
"""

from __future__ import annotations

from typing import Any

from dptheory.optim.base import PrivateOptimizer, StepInfo, clip_factors, tree_randn


class DPSGD(PrivateOptimizer):
    """DPSGD-GC (Alg. 1). ``clip_mode='automatic'`` swaps line 4 for ``C g/(||g||+gamma)``."""

    algo = "dpsgd"

    def __init__(
        self, params, loss_fn, data, *, c: float = 1.0, clip_mode: str = "flat", gamma: float = 0.01, **kw
    ):
        super().__init__(params, loss_fn, data, **kw)
        if not c > 0:
            from accounting.errors import InvalidParameter

            raise InvalidParameter("--c1", f"clipping threshold must be > 0 (got {c!r})")
        self.c = float(c)
        self.clip_mode = clip_mode
        self.gamma = float(gamma)

    def sigma1(self, t: int) -> float:
        """Std of ``w_t`` in Alg. 1 line 6: ``sigma1 = z_t C``."""
        return self.noise_multiplier_at(t) * self.c

    def noise_std(self, t: int = 0) -> float:
        return self.sigma1(t) / self.expected_batch_size

    def _step(self, batch, b) -> StepInfo:
        clipped, _ = self._summed(
            batch, b, lambda n: clip_factors(n, self.c, mode=self.clip_mode, gamma=self.gamma)
        )
        w = tree_randn(self.params, self.generator, self.sigma1(self.t))  # line 6
        scale = self.lr / self.expected_batch_size
        # line 5: x <- x - (eta/B)(sum clip + w)
        self.params = {k: p - scale * (clipped[k] + w[k]) for k, p in self.params.items()}
        self.last_noise = w
        return StepInfo(b, w)

    def mechanism(self) -> dict[str, Any]:
        return {
            "algo": "dpsgd",
            **self._noise_fields(),
            "sample_rate": self.sample_rate,
            "steps": self.steps,
            "dataset_size": self.dataset_size,
            "batch_size": self.expected_batch_size,
            "c1": self.c,
            "noise_std": self.noise_std(0),
            "noise_on": "sum of clipped per-sample gradients (sensitivity C)",
        }
