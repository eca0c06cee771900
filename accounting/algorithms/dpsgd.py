"""DP-SGD with gradient clipping (DPSGD-GC; DiceSGD paper, Alg. 1).

Mechanism: at each of T steps a Poisson sample of rate q is drawn, per-example gradients are
clipped to norm C and summed, and ``w ~ N(0, sigma1^2 I)`` is added to the *sum*:
``x <- x - (eta/B) (sum_i clip(g_i, C) + w)``. Under add/remove adjacency the sum has L2
sensitivity C, so the noise multiplier is ``z = sigma1 / C`` and the std on the averaged update
is ``noise_std = z C / B``.

certified
    The RDP of the Poisson-subsampled Gaussian (Mironov, Talwar, Zhang 2019) composed over T
    steps (``accounting.rdp``), converted with the improved conversion (or ``--conversion
    classic``); with ``--accountant pld`` dp-accounting's pessimistic PLD accountant. Both are
    upper bounds on the true epsilon of the mechanism.

claimed
    The DiceSGD paper only cites Abadi et al.'s existence theorem (its Theorem 2.3: constants
    u, v unspecified), which gives no number. We therefore define ``claimed`` as the standard
    *moments accountant* of Abadi et al. (2016) -- the computation their Theorem 1 rests on:
    log-moments at integer lambda = 1..255 (Renyi orders 2..256) and the tail bound
    ``delta = min_lambda exp(alpha(lambda) - lambda eps)``, i.e. Mironov's classic conversion on
    integer orders. It is labelled "moments accountant (Abadi et al. 2016)" and is never below
    ``certified`` (fewer orders, weaker conversion).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.algorithms.base import (
    Algorithm,
    Default,
    EpsilonValue,
    PrivacyParams,
    curve_epsilon,
    orders_of,
    pld_event_epsilon,
)
from accounting.errors import InvalidParameter

#: Integer Renyi orders of the moments accountant (lambda = order - 1 = 1..255).
MOMENTS_ACCOUNTANT_ORDERS = np.arange(2, 257, dtype=float)

_SRC = "DiceSGD paper Sec. 4 / Table 2: CIFAR-10 baseline DPSGD-GC"


class DPSGD(Algorithm):
    name = "dpsgd"
    title = "DP-SGD with gradient clipping (DPSGD-GC)"
    paper = "Zhang et al., arXiv 2311.14632, Alg. 1"
    unused_options = (
        "evaluation",
        "c2",
        "grad_bound",
        "schedule",
        "schedule_values",
        "projection_dim",
        "model_dim",
        "projection",
        "clients",
        "tau",
        "rounds",
        "schedule_rho",
        "projection_sigma_max",
    )
    shown_parameters = ("c1",)
    claimed_accountant = "moments accountant (Abadi et al. 2016)"

    def defaults(self) -> dict[str, Default]:
        return {
            "dataset_size": Default(50_000, _SRC + " (N = 50000)"),
            "batch_size": Default(1000, _SRC + " (B = 1000)"),
            "epochs": Default(3, _SRC + " (3 epochs)"),
            "c1": Default(1.0, _SRC + " (C = 1.0)"),
        }

    def _resolve_specific(self, p, d, assumed, warns):
        c = self._take(p, "c1", d, assumed)
        from accounting import validate

        return p.with_(c1=validate.positive("--c1", c))

    def noise_std(self, p: PrivacyParams) -> float | None:
        return float(p.noise_multiplier) * float(p.c1) / float(p.batch_size)

    def event(self, p: PrivacyParams) -> Any:
        from accounting.events import SelfComposedEvent, SubsampledGaussianEvent

        return SelfComposedEvent(SubsampledGaussianEvent(p.sample_rate, p.noise_multiplier), p.steps)

    def _epsilon_certified(self, p: PrivacyParams, accountant: str) -> EpsilonValue:
        if accountant == "pld":
            return pld_event_epsilon(self.event(p), p.delta)
        from accounting.rdp import subsampled_gaussian_rdp

        curve = subsampled_gaussian_rdp(p.sample_rate, p.noise_multiplier, orders_of(p), steps=p.steps)
        return curve_epsilon(curve, p.delta, p.conversion)

    def _epsilon_claimed(self, p: PrivacyParams, accountant: str) -> EpsilonValue:
        if accountant == "pld":
            raise InvalidParameter(
                "--accountant",
                "pld is not available for dpsgd in claimed mode because the claimed number is "
                "Abadi et al.'s moments accountant by definition; use --mode certified for PLD",
            )
        from accounting.rdp import subsampled_gaussian_rdp

        curve = subsampled_gaussian_rdp(
            p.sample_rate, p.noise_multiplier, MOMENTS_ACCOUNTANT_ORDERS, steps=p.steps
        )
        v = curve_epsilon(curve, p.delta, "classic")
        return EpsilonValue(v.epsilon, v.order, (), v.warnings)

    def assumptions(self, p: PrivacyParams, mode: str) -> list[str]:
        out = [
            "adjacency: add/remove one example",
            "Poisson sampling with rate q = B/N each step (fixed-size or shuffled batches are not covered)",
            "noise w ~ N(0, (z C)^2 I) added to the sum of clipped gradients (noise_std = z C / B)",
        ]
        if mode == "claimed":
            out.append(
                "claimed: the paper gives no constants (Thm 2.3 cites Abadi et al.); this is Abadi et "
                "al.'s moments accountant (integer orders 2..256, classic conversion)"
            )
        else:
            out.append(f"certified: subsampled-Gaussian RDP over T steps, {p.conversion} conversion")
        return out
