"""Noise multiplier for an optimizer: given explicitly, or calibrated from (eps, delta).

Calibration goes through :func:`dptheory.api.calibrate` with the *accounting* name of the
algorithm and the mechanism parameters the optimizer will realise, so that the z the code uses
is the z the accountant certified. ``mode`` is the accountant's mode (``certified`` by default).
"""

from __future__ import annotations

from typing import Any

from accounting.errors import InvalidParameter


def resolve_noise_multiplier(
    algo: str,
    *,
    noise_multiplier: float | None = None,
    eps: float | None = None,
    delta: float | None = None,
    mode: str = "certified",
    **options: Any,
) -> tuple[float, Any]:
    """``(z, report)``: z as given (report None), or the smallest z with epsilon <= eps."""
    if noise_multiplier is not None and eps is not None:
        raise InvalidParameter("--eps", "give either --noise-multiplier or --eps/--delta, not both")
    if eps is None:
        if delta is not None:
            raise InvalidParameter("--eps", "--eps and --delta go together")
        return (0.0 if noise_multiplier is None else float(noise_multiplier)), None
    if delta is None:
        raise InvalidParameter("--delta", "--eps and --delta go together")
    from dptheory import api

    report = api.calibrate(eps=eps, delta=delta, algo=algo, mode=mode, defaults="paper", **options)
    return float(report.noise_multiplier), report
