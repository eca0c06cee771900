"""What a user can train DiceSGD with, next to the certified number for the paper's DiceSGD.

Why: without a residual clip or a gradient bound, DiceSGD's certified noise is huge (z = 52467 at
the paper's defaults for eps = 2): one example can move the clipped error state by 2 C2 per step
(docs/hidden-state.md).  That number is honest but looks like a bug on the first screen.  The
usable alternative is computed in the same run by the same certified calibration, with a residual
clip R = C1 / 2: each example's error increment is clip(g, C1 + R) - clip(g, C1), the error state
is emptied every step on an event of probability >= 1 - P(E^c) (the flush regime), and DiceSGD is
accounted as DP-SGD clipped at C1 + R.  A per-example gradient bound G = C1 + R gives the same
residual bound rho = R, hence the same certified noise (the flush regime only uses rho).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accounting.algorithms.base import PrivacyReport

#: The residual clip suggested, as a fraction of C1 (the issue's example: C1 = 1, R = 0.5).
RESIDUAL_FRACTION = 0.5


def applies(report: PrivacyReport) -> bool:
    """A certified DiceSGD report with neither a residual clip nor a gradient bound."""
    par = report.parameters
    return (
        report.algo == "dicesgd"
        and report.mode == "certified"
        and par.get("residual_clip") is None
        and par.get("grad_bound") is None
    )


def trainable_alternative(
    report: PrivacyReport,
    *,
    calibrate: Callable[..., PrivacyReport],
    options: dict[str, Any],
    progress: Callable[[float, float], None] | None = None,
) -> dict[str, Any] | None:
    """Calibrate the same target with ``residual_clip = R`` (R = C1/2); None if it does not apply.

    ``calibrate(**kwargs)`` is :func:`dptheory.api.calibrate` bound to the caller's other arguments
    (eps, delta, mode, accountant, defaults); ``options`` are the caller's parameter options."""
    if not applies(report):
        return None
    c1 = float(report.parameters.get("c1") or 1.0)
    r = RESIDUAL_FRACTION * c1
    alt = calibrate(**dict(options, residual_clip=r), progress=progress)
    z = float(alt.noise_multiplier)
    if not z < report.noise_multiplier:
        return None
    flush = any("flush regime" in a for a in alt.assumptions)
    return {
        "residual_clip": r,
        "grad_bound": c1 + r,
        "noise_multiplier": z,
        "dpsgd_clip": c1 + r,
        "dpsgd_noise_multiplier": z * c1 / (c1 + r),
        "epsilon": float(alt.epsilon),
        "flush_regime": flush,
        "sentence": sentence(report.noise_multiplier, z, c1, r, flush=flush),
    }


def sentence(z_paper: float, z_usable: float, c1: float, r: float, *, flush: bool = True) -> str:
    """One sentence a practitioner understands (noise printed rounded up, as every noise is)."""
    from dptheory.cli.params import fmt_up

    return (
        f"to train, use z = {fmt_up(z_usable, 4)}: add --residual-clip {r:g} (or bound per-example gradients "
        f"by {c1 + r:g}, --grad-bound {c1 + r:g})"
        + (
            f" and DiceSGD is certified as DP-SGD clipped at C1 + R = {c1 + r:g} (flush regime)"
            if flush
            else ""
        )
        + f"; z = {fmt_up(z_paper, 5)} is the price of the paper's unbounded error feedback."
    )
