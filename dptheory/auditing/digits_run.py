"""One audited training run on sklearn's digits (the ``dptheory audit-run`` demonstration).

A one-hidden-layer MLP trained by a :mod:`dptheory.optim` optimizer (DP-SGD, DiceSGD or D2P2-SGD)
with Poisson sampling, plus ``m`` canaries (:mod:`dptheory.auditing.canaries`).  The run adds
``noise_scale`` times the noise its accountant assumes: ``noise_scale < 1`` is the bug that the
audit must catch (noise computed for one mechanism, a smaller one added).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from dptheory.auditing.canaries import GradientCanaries, InputCanaries

EXPECTED_BATCH = 64
EPOCHS = 4
LR = 0.5
RAW_NORM = 4.0  # DiceSGD canaries' unclipped gradient norm, in units of C1


def load_digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits as sk_digits

    d = sk_digits()
    return torch.as_tensor(d.data / 16.0, dtype=torch.float32), torch.as_tensor(d.target, dtype=torch.long)


def schedule(dataset_size: int) -> tuple[float, int]:
    """(sample rate, steps) of the demo: expected batch 64, 4 epochs."""
    q = EXPECTED_BATCH / dataset_size
    return q, int(math.ceil(EPOCHS / q))


def _init(hidden: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "w1": torch.randn(64, hidden, generator=g) / 8.0,
        "b1": torch.zeros(hidden),
        "w2": torch.randn(hidden, 10, generator=g) / math.sqrt(hidden),
        "b2": torch.zeros(10),
    }


def _forward(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def _loss(p: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> torch.Tensor:
    logits = _forward(p, batch["x"].unsqueeze(0))
    return torch.nn.functional.cross_entropy(logits, batch["y"].unsqueeze(0))


def _optimizer(algo: str, params, data, **kw):
    from dptheory.optim import D2P2SGD, DPSGD, DiceSGD

    if algo == "dpsgd":
        return DPSGD(params, _loss, data, c=1.0, **kw)
    if algo == "dicesgd":
        return DiceSGD(params, _loss, data, c1=1.0, c2=1.0, **kw)
    return D2P2SGD(params, _loss, data, projection="none", **kw)


def train_audited(
    *,
    algo: str,
    noise_multiplier: float,
    canaries: int,
    mode: str = "white-box",
    noise_scale: float = 1.0,
    residual_clip: float | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Train once; return the canaries' in/out scores, the run's (q, T) and test accuracy."""
    torch.manual_seed(seed)
    x, y = load_digits()
    n_real = x.shape[0]
    q, steps = schedule(n_real)
    white = mode == "white-box"
    params = _init(32, seed)
    if white:
        # The canaries' coordinates: a block the loss never reads.  Its data gradient is exactly
        # 0, so a score there sees only the run's noise and the canaries (the sharpest white-box
        # audit of noise, clipping bound and accounting; it does not exercise the data loader).
        params["audit"] = torch.zeros(canaries)
    input_canaries = None
    if not white:
        input_canaries = InputCanaries.from_data(x, y, canaries, 10, seed=seed + 1)
        x, y = input_canaries.training_set(x, y)
    kw: dict[str, Any] = dict(
        lr=LR,
        sample_rate=q,
        noise_multiplier=noise_multiplier * noise_scale,
        steps=steps,
        seed=seed,
        device="cpu",
        expected_batch_size=EXPECTED_BATCH,
    )
    if algo == "dicesgd" and residual_clip is not None:
        kw["residual_clip"] = residual_clip
    opt = _optimizer(algo, params, {"x": x, "y": y}, **kw)
    start = torch.cat([v.reshape(-1) for v in opt.params.values()]).to(torch.float64)
    gc = None
    if white:
        norm = 1.0 if algo != "d2p2sgd" else 1.0 / (1.0 + opt.gamma)
        # DiceSGD: a large-gradient canary (norm 4 C1) whose clipping residual enters the hidden
        # error-feedback state; with a residual clip R the algorithm keeps only clip(g, C1 + R).
        raw_norm = None
        if algo == "dicesgd":
            raw_norm = RAW_NORM if residual_clip is None else min(RAW_NORM, 1.0 + residual_clip)
        off = start.numel() - canaries  # "audit" is the last block
        gc = GradientCanaries(
            start.numel(), canaries, norm=norm, sample_rate=q, seed=seed + 1, coords=range(off, start.numel())
        )
        gc.attach_dptheory(opt, raw_norm=raw_norm)
        gc.record(start)
    for t in range(steps):
        opt.step()
        if gc is not None:
            gc.record(torch.cat([v.reshape(-1) for v in opt.params.values()]))
        if progress is not None:
            progress(t + 1, steps)
    if gc is not None:
        # x_{t+1} = x_t - (lr / B)(sum + noise): step scale lr / B; claimed noise multiplier
        scores = gc.likelihood_scores(LR / EXPECTED_BATCH, noise_multiplier)
        included = gc.included
    else:
        p = opt.params

        def losses(cx, cy):
            return torch.nn.functional.cross_entropy(_forward(p, cx), cy, reduction="none")

        scores, included = input_canaries.scores(losses), input_canaries.included
    with torch.no_grad():
        xr, yr = load_digits()
        acc = float((_forward(opt.params, xr).argmax(1) == yr).float().mean())
    return {
        "in_scores": np.asarray(scores[included]),
        "out_scores": np.asarray(scores[~included]),
        "sample_rate": q,
        "steps": steps,
        "dataset_size": n_real,
        "accuracy": acc,
    }
