"""Per-step noise-multiplier schedules (D2P-SGD, DP2-SGD, D2P2-SGD and dynamic DP-SGD).

``base`` is the base noise multiplier sigma; step k = 1..T gets sigma_k:

* ``constant``:   sigma_k = sigma (DP2-SGD, plain DP-SGD);
* ``inv-k``:      sigma_k^2 = sigma^2 / k -- D2P2-SGD's text (Sec. 3, "sigma_{eps,k} = sigma_eps/sqrt(k)")
  and its Theorem 1;
* ``inv-sqrt-k``: sigma_k^2 = sigma^2 / sqrt(k) -- D2P2-SGD's Table 3 ("sigma^2_eps / sqrt(k)") and
  the authors' released code;
* ``exp``:        sigma_k = sigma * rho^(-k/T) -- the exponentially decaying noise of dynamic
  DP-SGD (Du et al. 2021, arXiv:2111.00173, cited by D2P2-SGD as involving "an exponential
  function").  Neither the D2P2-SGD text nor this repository's sources give a value for rho,
  so the default ``rho = 2`` (the last step's noise is half the first's, sigma_T = sigma/rho)
  is *our* documented choice; pass ``rho`` explicitly to reproduce a specific experiment.

Decreasing noise spends more privacy per step late in training; every schedule here is
accounted exactly by composing the per-step RDP (:mod:`accounting.rdp`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter

__all__ = ["DEFAULT_RHO", "SCHEDULES", "noise_multipliers", "read_schedule_file"]

SCHEDULES: tuple[str, ...] = ("constant", "inv-k", "inv-sqrt-k", "exp")
DEFAULT_RHO = 2.0


def noise_multipliers(name: str, base: float, steps: int, *, rho: float = DEFAULT_RHO) -> np.ndarray:
    """Per-step noise multipliers ``sigma_1..sigma_T`` (shape ``(T,)``) of schedule ``name``."""
    if name not in SCHEDULES:
        raise InvalidParameter("--schedule", f"must be one of {', '.join(SCHEDULES)} (got {name!r})")
    sigma = validate.positive("--noise-multiplier", base)
    t = validate.positive_int("--steps", steps)
    k = np.arange(1, t + 1, dtype=float)
    if name == "constant":
        return np.full(t, sigma)
    if name == "inv-k":
        return sigma / np.sqrt(k)
    if name == "inv-sqrt-k":
        return sigma / k**0.25
    r = validate.positive("--rho", rho)
    return sigma * np.exp(-(k / t) * math.log(r))


def read_schedule_file(path: str | Path) -> np.ndarray:
    """Read one positive noise multiplier per line; blank lines and ``#`` comments are ignored.

    Raises ``InvalidParameter('--schedule-file', ...)`` for an unreadable or empty file and for
    any entry that is not a finite number > 0 (the message names the line).
    """
    opt = "--schedule-file"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InvalidParameter(opt, f"cannot read {str(path)!r}: {reason}") from None
    values: list[float] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        item = raw.split("#", 1)[0].strip()
        if not item:
            continue
        try:
            v = float(item)
        except ValueError:
            raise InvalidParameter(opt, f"line {lineno}: {item!r} is not a number") from None
        if not math.isfinite(v) or v <= 0:
            raise InvalidParameter(
                opt, f"line {lineno}: noise multipliers must be finite and > 0 (got {item})"
            )
        values.append(v)
    if not values:
        raise InvalidParameter(opt, f"{str(path)!r} contains no noise multipliers (one number per line)")
    return np.asarray(values, dtype=float)
