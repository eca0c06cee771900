"""Certified epsilon of a D2P2 run (per-layer projection) and the calibration of its base noise."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from accounting.errors import InvalidParameter


def d2p2_layers(params: Sequence[torch.Tensor], projection_dim: int | None, sigma_a: float | None = None):
    """``[(p_l, sigma_l)]`` of the per-layer projection dptheory.optim.d2p2 uses: ``p_l = min(p, d_l)``,
    ``sigma_l = p_l^(-1/4)`` unless ``sigma_a`` is given; ``p`` defaults to ``max(1, d // 2)``."""
    d = sum(int(p.numel()) for p in params)
    p = max(1, d // 2) if projection_dim is None else int(projection_dim)
    out = []
    for t in params:
        pl = min(p, int(t.numel()))
        out.append((pl, float(sigma_a) if sigma_a is not None else pl ** (-0.25)))
    return out


def d2p2_certified_epsilon(
    *,
    multipliers: Sequence[float],
    counts: Sequence[int] | None = None,
    sample_rate: float,
    delta: float,
    projection: str,
    layers: Sequence[Sequence[float]] | None = None,
    fixed_factor: float | None = None,
    orders: Sequence[float] | np.ndarray | None = None,
) -> tuple[float, float]:
    """Certified ``(epsilon, order)`` of a D2P2 run with per-step multipliers ``multipliers``.

    ``projection="none"`` (D2P-SGD): subsampled Gaussian steps with sensitivity 1. ``"fixed"``:
    multipliers divided by the exact factor ``max_l sigma_max(A_l) / sqrt(p_l)`` of the drawn
    matrices (``fixed_factor``). ``"fresh"``: divided by
    :func:`accounting.projection.layerwise_fresh_factor_x`,
    which holds with probability ``1 - beta`` per run; ``e^eps beta`` is charged to delta exactly as
    :func:`accounting.projection.epsilon_with_failure` does for the single-matrix case.
    """
    from accounting.conversion import rdp_to_epsilon
    from accounting.orders import DEFAULT_ORDERS
    from accounting.projection import epsilon_with_failure, layerwise_fresh_factor_x
    from accounting.rdp import subsampled_gaussian_rdp

    z = np.asarray(multipliers, dtype=float)
    c = np.ones(z.size, dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    if z.size == 0:
        return 0.0, math.nan
    o = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=float)

    def eps_of(factor: float, d: float) -> tuple[float, float | None]:
        curve = subsampled_gaussian_rdp(sample_rate, z / factor, o, counts=c)
        r = rdp_to_epsilon(curve, d, method="improved")
        return float(r.epsilon), (float(r.order) if math.isfinite(r.order) else None)

    if projection == "none":
        e, order = eps_of(1.0, delta)
    elif projection == "fixed":
        if fixed_factor is None:
            raise InvalidParameter("--projection", "fixed projection needs the matrices' factor")
        e, order = eps_of(float(fixed_factor), delta)
    elif projection == "fresh":
        lay = [(int(p), float(s)) for p, s in (layers or ())]
        r = epsilon_with_failure(
            eps_of,
            delta=delta,
            projection="fresh",
            d=1,
            p=1,
            steps=int(c.sum()),
            factor_fn=lambda x: layerwise_fresh_factor_x(lay, x),
        )
        e, order = r.epsilon, r.order
    else:
        raise InvalidParameter("--projection", f"must be fresh, fixed or none (got {projection!r})")
    return float(e), (math.nan if order is None else float(order))


@dataclass(frozen=True)
class D2P2Calibration:
    """What :func:`calibrate_d2p2` certified (the fields :func:`lint_setup` and reports read)."""

    algo: str
    noise_multiplier: float
    epsilon: float
    delta: float
    order: float
    sample_rate: float
    steps: int
    schedule: str
    projection: str
    noise_std: float
    parameters: dict[str, Any]
    calibration: dict[str, Any]


def calibrate_d2p2(
    *,
    eps: float,
    delta: float,
    sample_rate: float,
    dataset_size: int,
    steps: int,
    schedule: str,
    projection: str,
    layers: Sequence[tuple[int, float]],
    orders: Sequence[float] | None = None,
) -> D2P2Calibration:
    """Smallest base z whose per-layer certified D2P2 epsilon (:func:`d2p2_certified_epsilon`) is <= eps,
    by the same Brent calibration as :func:`dptheory.calibrate` (result always meets the target)."""
    from accounting.calibration import calibrate_decreasing
    from accounting.schedules import noise_multipliers
    from dptheory.api import CALIBRATION_RTOL

    def eps_of(z: float) -> float:
        zs = noise_multipliers(schedule, z, int(steps))
        return d2p2_certified_epsilon(
            multipliers=zs,
            sample_rate=sample_rate,
            delta=delta,
            projection=projection,
            layers=layers,
            orders=orders,
        )[0]

    res = calibrate_decreasing(eps_of, eps, option="--eps", rtol=CALIBRATION_RTOL)
    z = float(res.value)
    zs = noise_multipliers(schedule, z, int(steps))
    e, order = d2p2_certified_epsilon(
        multipliers=zs,
        sample_rate=sample_rate,
        delta=delta,
        projection=projection,
        layers=layers,
        orders=orders,
    )
    if not e <= eps:
        from accounting.errors import UnreachableTarget

        raise UnreachableTarget("--eps", f"calibration could not certify eps <= {eps:g} (got {e:.6g})")
    b = sample_rate * dataset_size
    return D2P2Calibration(
        algo="d2psgd" if projection == "none" else "d2p2sgd",
        noise_multiplier=z,
        epsilon=e,
        delta=delta,
        order=order,
        sample_rate=sample_rate,
        steps=int(steps),
        schedule=schedule,
        projection=projection,
        noise_std=z / b,
        parameters={"batch_size": b, "dataset_size": dataset_size, "layers": [list(x) for x in layers]},
        calibration={"iterations": getattr(res, "iterations", None), "rtol": CALIBRATION_RTOL},
    )
