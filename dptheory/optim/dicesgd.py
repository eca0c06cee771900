"""DiceSGD and its Adam variant (DiceSGD paper, Algorithms 2 and 3).

Zhang, Bu, Wu, Hong (arXiv 2311.14632), Alg. 2 (e_0 = 0):

    4: draw minibatch B_t                                   (here: Poisson sampling at rate q)
    5: v_t = (1/B) sum_{i in B_t} clip(grad f(x_t; xi_i), C1) + clip(e_t, C2)
    6: x_{t+1} = x_t - eta (v_t + w_t),   w_t ~ N(0, sigma1^2 I)
    7: e_{t+1} = e_t + (1/B) sum_{i in B_t} grad f(x_t; xi_i) - v_t

Noise convention (docs/architecture.md): ``z = sigma1 B / C1``, i.e. sigma1 = z C1 / B, the
std relative to the add/remove sensitivity C1/B of the averaged clipped gradient. The hidden
state e is never released; its privacy cost is the accountant's business
(accounting/hidden_state.py), not this module's.

Alg. 3 (Adam variant), lines 5-9:

    5: v_t = (1/B) sum clip(g_i, C1) + clip(e_t, C2) + w_t
    6: m1_t = beta1 m1_{t-1} + (1 - beta1) v_t
    7: m2_t = beta2 m2_{t-1} + (1 - beta2) v_t^2
    8: x_{t+1} = x_t - eta (m1_t / (1 - beta1^t)) / (sqrt(m2_t / (1 - beta2^t)) + eps1)
    9: e_{t+1} = e_t + (1/B) sum g_i - ((1/B) sum clip(g_i, C1) + clip(e_t, C2))   (no w_t)

Residual clip (``residual_clip=R``, this package's addition, not in the paper): line 7's error increment
of each example, ``g_i - clip(g_i, C1)``, is replaced by ``clip(g_i - clip(g_i, C1), R)``, i.e.

    7': e_{t+1} = e_t - clip(e_t, C2) + (1/B) sum_{i in B_t} clip(g_i - c_i, R),   c_i = clip(g_i, C1)

For flat clipping ``g - clip(g, C1)`` is parallel to g with norm ``max(0, ||g|| - C1)``, so this is
``clip(g_i, C1 + R) - clip(g_i, C1)``. Every increment then has norm <= R by construction, which
is what the flush-regime accountant needs (docs/hidden-state.md). ``residual_clip=None`` is Alg. 2.

Reading: the loop runs from t = 0, where ``1 - beta^0 = 0`` would divide by zero; we use the
usual Adam bias correction with the 1-based count ``t + 1``.
"""

from __future__ import annotations

from typing import Any

import torch

from accounting.errors import InvalidParameter
from dptheory.optim.base import (
    PrivateOptimizer,
    StepInfo,
    TracedKernel,
    clip_factors,
    clip_vector,
    per_sample_norms,
    tree_randn,
    tree_zeros,
    weighted_sum,
)


class DiceSGD(PrivateOptimizer):
    """DiceSGD (Alg. 2); ``clip_mode='automatic'`` uses ``C1 g/(||g||+gamma)`` per sample."""

    algo = "dicesgd"

    def __init__(
        self,
        params,
        loss_fn,
        data,
        *,
        c1: float = 1.0,
        c2: float | None = None,
        clip_mode: str = "flat",
        gamma: float = 0.01,
        residual_clip: float | None = None,
        **kw,
    ):
        super().__init__(params, loss_fn, data, **kw)
        if residual_clip is not None and not residual_clip > 0:
            raise InvalidParameter("--residual-clip", f"must be > 0 (got {residual_clip!r})")
        self.residual_clip = None if residual_clip is None else float(residual_clip)
        if not c1 > 0:
            raise InvalidParameter("--c1", f"must be > 0 (got {c1!r})")
        c2 = c1 if c2 is None else c2
        if not c2 > 0:
            raise InvalidParameter("--c2", f"must be > 0 (got {c2!r})")
        self.c1, self.c2 = float(c1), float(c2)
        self.clip_mode = clip_mode
        self.gamma = float(gamma)
        self.e = tree_zeros(self.params)  # line 2: e_0 = 0

    def sigma1(self, t: int) -> float:
        """Std of ``w_t``: ``z_t C1 / B``."""
        return self.noise_multiplier_at(t) * self.c1 / self.expected_batch_size

    def noise_std(self, t: int = 0) -> float:
        return self.sigma1(t)

    def _factor_c1(self, n):
        return clip_factors(n, self.c1, mode=self.clip_mode, gamma=self.gamma)

    def _factor_raw(self, n):
        """Per-example factor f with ``c_i + r_i = f g_i`` (line 7's ``g_i``; line 7' with R).

        ``r_i = clip(g_i - c_i, R)`` and ``g_i - c_i = (1 - s) g_i`` for the clip factor s, so
        ``c_i + r_i = (s + (1 - s) min(1, R / (|1 - s| ||g_i||))) g_i``.
        """
        if self.residual_clip is None:
            return torch.ones_like(n)
        s = self._factor_c1(n)
        rn = torch.abs(1.0 - s) * n
        keep = torch.clamp(self.residual_clip / rn, max=1.0)
        keep = torch.where(rn > 0, keep, torch.ones_like(keep))
        return s + (1.0 - s) * keep

    def _summed_pair(self, batch, b):
        """``(sum_i s_i g_i, sum_i f_i g_i)`` (clip factors and :meth:`_factor_raw`) in one kernel."""
        if b == 0:
            return tree_zeros(self.params), tree_zeros(self.params)
        kernel = self._kernels.get("residual-clip")
        if kernel is None:
            psg = self._psg

            def kernel(params, batch):
                g = psg(params, batch)
                norms = per_sample_norms(g)
                return weighted_sum(g, self._factor_c1(norms)), weighted_sum(g, self._factor_raw(norms))

            if self.compile:
                kernel = torch.compile(kernel, dynamic=True)
            elif self.kernel != "vmap":
                kernel = TracedKernel(kernel, trace_at=self._trace_at())
            self._kernels["residual-clip"] = kernel
        return kernel(self.params, batch)

    def _direction(self, batch, b):
        """Returns ``(v_t without noise, (1/B) sum (c_i + r_i))`` -- lines 5 and 7's ingredients."""
        if self.residual_clip is None:
            clipped, raw = self._summed(batch, b, self._factor_c1, raw=True)
        else:
            clipped, raw = self._summed_pair(batch, b)
        inv_b = 1.0 / self.expected_batch_size
        ce = clip_vector(self.e, self.c2)
        v = {k: inv_b * clipped[k] + ce[k] for k in self.params}
        mean_g = {k: inv_b * raw[k] for k in self.params}
        return v, mean_g

    def _step(self, batch, b) -> StepInfo:
        v, mean_g = self._direction(batch, b)  # line 5
        w = tree_randn(self.params, self.generator, self.sigma1(self.t))
        self.params = {k: p - self.lr * (v[k] + w[k]) for k, p in self.params.items()}  # line 6
        self.e = {k: self.e[k] + mean_g[k] - v[k] for k in self.params}  # line 7
        self.last_noise = w
        return StepInfo(b, w)

    def mechanism(self) -> dict[str, Any]:
        return {
            "algo": "dicesgd",
            **self._noise_fields(),
            "sample_rate": self.sample_rate,
            "steps": self.steps,
            "dataset_size": self.dataset_size,
            "batch_size": self.expected_batch_size,
            "c1": self.c1,
            "c2": self.c2,
            **({} if self.residual_clip is None else {"residual_clip": self.residual_clip}),
            **({"clip_mode": "automatic", "gamma": self.gamma} if self.clip_mode == "automatic" else {}),
            "noise_std": self.noise_std(0),
            "noise_on": "averaged clipped gradient + clipped feedback (sensitivity C1/B released; e hidden)",
        }


class DiceAdam(DiceSGD):
    """Adam variant of DiceSGD (Alg. 3); same mechanism as DiceSGD (noise enters v_t)."""

    algo = "dicesgd-adam"

    def __init__(
        self, params, loss_fn, data, *, beta1: float = 0.9, beta2: float = 0.999, eps1: float = 1e-8, **kw
    ):
        super().__init__(params, loss_fn, data, **kw)
        self.beta1, self.beta2, self.eps1 = float(beta1), float(beta2), float(eps1)
        self.m1 = tree_zeros(self.params)
        self.m2 = tree_zeros(self.params)

    def _step(self, batch, b) -> StepInfo:
        v, mean_g = self._direction(batch, b)
        w = tree_randn(self.params, self.generator, self.sigma1(self.t))
        vn = {k: v[k] + w[k] for k in v}  # line 5 (noise inside v_t)
        k1 = self.t + 1
        bc1, bc2 = 1 - self.beta1**k1, 1 - self.beta2**k1
        new = {}
        for k, p in self.params.items():
            self.m1[k] = self.beta1 * self.m1[k] + (1 - self.beta1) * vn[k]  # line 6
            self.m2[k] = self.beta2 * self.m2[k] + (1 - self.beta2) * vn[k] ** 2  # line 7
            new[k] = p - self.lr * (self.m1[k] / bc1) / (torch.sqrt(self.m2[k] / bc2) + self.eps1)  # line 8
        self.params = new
        self.e = {k: self.e[k] + mean_g[k] - v[k] for k in self.params}  # line 9
        self.last_noise = w
        return StepInfo(b, w)
