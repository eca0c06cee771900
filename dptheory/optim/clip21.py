"""Clip-SGD, Clip21-SGD and Clip21-SGD2M for n clients (Islamov et al., arXiv 2502.11682).

The paper's rendering lost its formulas; these are the equations of
docs/algorithms.md (Algorithm 3 of the paper, with its special cases):

    server:   x^{t+1}   = x^t - gamma g^t
    client i: v_i^{t+1} = (1 - beta) v_i^t + beta grad f_i(x^{t+1}; xi_i^{t+1})     (momentum)
              c_i^{t+1} = clip_tau(v_i^{t+1} - g_i^t)                             (clipped shift)
              g_i^{t+1} = g_i^t + beta_hat c_i^{t+1}                               (local, noise-free)
              sends     c_i^{t+1} + omega_i^{t+1},  omega ~ N(0, sigma_omega^2 I)   (local DP)
    server:   g^{t+1}   = g^t + (beta_hat / n) sum_i (c_i^{t+1} + omega_i^{t+1})

with v_i = g_i = g = 0 at the start. Clip21-SGD (Khirirat et al. 2023, EF21 with clipping) is
written separately -- ``g_i <- g_i + clip_tau(grad f_i(x) - g_i)``, ``g <- g + mean(sent)`` --
so that the test "Clip21-SGD2M with beta = beta_hat = 1 is Clip21-SGD" compares two codes.
Clip-SGD: ``x^{t+1} = x^t - gamma (1/n) sum_i (clip_tau(grad f_i(x^t; xi_i)) + omega_i)``.

Noise convention (docs/architecture.md): ``z = sigma_omega / tau``; every message has norm
<= tau before noise, whatever the local state. The client/server split is explicit: a
:class:`Client` turns the broadcast parameters and its own state into one message, the
:class:`Server` only sees messages. Each client owns a generator seeded from (seed, index),
so the clients could run as separate processes without changing a single draw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from accounting.errors import InvalidParameter
from dptheory.optim.base import (
    Batch,
    LossFn,
    Params,
    batch_loss_fn,
    flatten,
    make_generator,
    noise_schedule,
    resolve_device,
    to_device,
    unflatten,
)

RULES = ("clip", "clip21", "clip21-2m")


def clip_tau(v: Tensor, tau: float) -> Tensor:
    """``min(1, tau/||v||) v`` (zero stays zero)."""
    n = torch.linalg.vector_norm(v)
    return v * torch.clamp(tau / n, max=1.0)


class Client:
    """One client: local data, local state (v_i, g_i), its own generator; produces a message."""

    def __init__(
        self,
        index: int,
        data: Batch,
        loss_fn: LossFn,
        *,
        rule: str,
        tau: float,
        beta: float,
        beta_hat: float,
        batch_size: int | None,
        seed: int,
        device: torch.device,
    ) -> None:
        self.index = index
        self.data = to_device(data, device)
        self.m = int(next(iter(self.data.values())).shape[0])
        self.rule = rule
        self.tau, self.beta, self.beta_hat = tau, beta, beta_hat
        self.batch_size = batch_size
        self.device = device
        self.generator = make_generator(device, seed * 1_000_003 + index + 1)
        from torch.func import grad

        losses = batch_loss_fn(loss_fn)
        self._grad = grad(lambda p, b: losses(p, b).mean())
        self.v: Tensor | None = None  # client momentum (clip21-2m)
        self.g: Tensor | None = None  # local shift g_i (clip21, clip21-2m)
        self.last_noise: Tensor | None = None

    def local_gradient(self, params: Params) -> Tensor:
        """grad f_i(x; xi): full local gradient, or a uniform minibatch without replacement."""
        if self.batch_size is None or self.batch_size >= self.m:
            batch = self.data
        else:
            idx = torch.randperm(self.m, generator=self.generator, device=self.device)[: self.batch_size]
            batch = {k: v.index_select(0, idx) for k, v in self.data.items()}
        return flatten(self._grad(params, batch))

    def message(self, params: Params, noise_std: float) -> Tensor:
        grad = self.local_gradient(params)
        if self.g is None:
            self.g = torch.zeros_like(grad)
            self.v = torch.zeros_like(grad)
        if self.rule == "clip":
            c = clip_tau(grad, self.tau)
        elif self.rule == "clip21":
            c = clip_tau(grad - self.g, self.tau)
            self.g = self.g + c
        else:  # clip21-2m
            self.v = (1 - self.beta) * self.v + self.beta * grad
            c = clip_tau(self.v - self.g, self.tau)
            self.g = self.g + self.beta_hat * c
        omega = torch.randn(c.shape, generator=self.generator, device=self.device, dtype=c.dtype) * noise_std
        self.last_noise = omega
        return c + omega


class Server:
    """Holds x and the aggregated shift g; sees only the clients' messages."""

    def __init__(self, params: Params, *, rule: str, lr: float, beta_hat: float, n: int) -> None:
        self.params = params
        self.rule, self.lr, self.beta_hat, self.n = rule, lr, beta_hat, n
        self.g = torch.zeros_like(flatten(params))

    def pre_round(self) -> Params:
        """Clip21 family: ``x^{t+1} = x^t - gamma g^t`` before broadcasting; Clip-SGD: no-op."""
        if self.rule != "clip":
            self._move(self.g)
        return self.params

    def aggregate(self, messages: Sequence[Tensor]) -> None:
        mean = torch.stack(list(messages)).mean(dim=0)
        if self.rule == "clip":
            self._move(mean)
        elif self.rule == "clip21":
            self.g = self.g + mean
        else:
            self.g = self.g + self.beta_hat * mean

    def _move(self, direction: Tensor) -> None:
        flat = flatten(self.params) - self.lr * direction
        self.params = unflatten(flat, self.params)


class FederatedClipping:
    """Driver: one ``step()`` = one communication round over all clients (simulated in-process)."""

    algo_of_rule = {"clip": "clipsgd", "clip21": "clip21sgd", "clip21-2m": "clip21sgd2m"}

    def __init__(
        self,
        params: Params,
        loss_fn: LossFn,
        client_data: Sequence[Batch],
        *,
        rule: str = "clip21-2m",
        lr: float,
        tau: float = 1.0,
        beta: float = 1.0,
        beta_hat: float = 1.0,
        noise_multiplier: float | Sequence[float] | np.ndarray = 0.0,
        steps: int | None = None,
        sample_rate: float = 1.0,
        seed: int = 0,
        device: str | torch.device = "auto",
    ) -> None:
        if rule not in RULES:
            raise InvalidParameter("--algo", f"rule must be one of {RULES} (got {rule!r})")
        for opt, val in (("--tau", tau), ("--beta", beta), ("--beta-hat", beta_hat)):
            if not math.isfinite(val) or val <= 0 or (opt != "--tau" and val > 1):
                allowed = "> 0" if opt == "--tau" else "in (0, 1]"
                raise InvalidParameter(opt, f"must be {allowed} (got {val!r})")
        if not (0 < sample_rate <= 1):
            raise InvalidParameter("--sample-rate", f"must be in (0, 1] (got {sample_rate!r})")
        if not lr > 0 or not math.isfinite(lr):
            raise InvalidParameter("--lr", f"must be a finite number > 0 (got {lr!r})")
        if len(client_data) < 1:
            raise InvalidParameter("--clients", "need at least one client")
        self.device = resolve_device(device)
        self.rule, self.tau, self.beta, self.beta_hat = rule, float(tau), float(beta), float(beta_hat)
        self.lr, self.sample_rate, self.steps, self.seed = float(lr), float(sample_rate), steps, int(seed)
        self.z = noise_schedule(noise_multiplier, steps)
        p0 = {k: v.detach().to(self.device).clone() for k, v in params.items()}
        self.clients = []
        for i, d in enumerate(client_data):
            m = int(next(iter(d.values())).shape[0])
            b = None if sample_rate >= 1 else max(1, round(sample_rate * m))
            self.clients.append(
                Client(
                    i,
                    d,
                    loss_fn,
                    rule=rule,
                    tau=self.tau,
                    beta=self.beta,
                    beta_hat=self.beta_hat,
                    batch_size=b,
                    seed=self.seed,
                    device=self.device,
                )
            )
        self.server = Server(p0, rule=rule, lr=self.lr, beta_hat=self.beta_hat, n=len(self.clients))
        self.t = 0
        self.last_noise: Tensor | None = None

    @property
    def algo(self) -> str:
        return self.algo_of_rule[self.rule]

    @property
    def params(self) -> Params:
        return self.server.params

    def noise_std(self, t: int = 0) -> float:
        """sigma_omega = z tau (per coordinate of each client's message)."""
        z = float(self.z[0]) if self.z.size == 1 else float(self.z[t])
        return z * self.tau

    def step(self) -> None:
        x = self.server.pre_round()
        std = self.noise_std(self.t)
        messages = [c.message(x, std) for c in self.clients]  # each could be a remote call
        self.server.aggregate(messages)
        self.last_noise = torch.stack([c.last_noise for c in self.clients])
        self.t += 1

    def mechanism(self) -> dict[str, Any]:
        return {
            # all three send one message of norm <= tau plus N(0, sigma_omega^2 I) per client and
            # round: the accounting registry's clip21sgd2m mechanism covers each of them
            "algo": "clip21sgd2m",
            "variant": self.algo,
            "noise_multiplier": float(self.z[0]),
            "schedule_values": None if self.z.size == 1 else self.z.tolist(),
            "tau": self.tau,
            "clients": len(self.clients),
            "rounds": self.steps,
            "steps": self.steps,
            "noise_std": self.noise_std(0),
            "noise_on": "each client's message (norm <= tau before noise), local DP",
        }
