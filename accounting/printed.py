"""Numbers as text on their safe side: the one formatting rule of every printed privacy number.

It lives in ``accounting`` because the accounting layer's own notes (e.g. DiceSGD's P(E^c)) print
bounds too, and ``accounting`` may not import ``dptheory``; ``dptheory.cli.numbers`` re-exports it.
"""

from __future__ import annotations

import math

__all__ = ["UP", "DOWN", "fmt"]


#: Rounding directions of :func:`fmt`: the side on which a printed number is safe.
UP, DOWN = "up", "down"


def fmt(x: object, direction: str, digits: int = 6) -> str:
    """``x`` to ``digits`` significant digits, rounded toward the safe side: the one formatting
    rule of every printed privacy number (tables, audit, compare, run summaries).

    * ``UP``: upper bounds (certified or claimed epsilon), calibrated noise multipliers and
      delta: the printed value is >= the computed one, so copying it never gives a smaller
      epsilon or a noise whose epsilon is above the target (1.5131228 is printed 1.51313, not
      the nearest 1.51312, at which epsilon is 1.0000021 > 1).
    * ``DOWN``: lower bounds (audits) and sample rates: the printed value is <= the computed one.

    Non-floats (ints, None, text) are shown as they are; inf and NaN as ``inf`` / ``nan``."""
    if direction not in (UP, DOWN):
        raise ValueError(f"direction must be {UP!r} or {DOWN!r} (got {direction!r})")
    if isinstance(x, bool) or not isinstance(x, float | int):
        return "-" if x is None else str(x)
    if isinstance(x, int):
        return str(x)
    text = f"{x:.{digits}g}"
    if not math.isfinite(x) or float(text) == x:  # shown exactly (1e-5, an input z = 1.1): no rounding
        return text
    # Decimal(x) is exact; rounding it toward the safe side at ``digits`` significant digits gives
    # d on that side of x, and parsing d back rounds to nearest, which is monotone, so float(text)
    # is on that side too.  (Adding one unit in the last digit to a nearest-rounded float could
    # round back at 16+ digits, where the decimal step is below the float spacing.)
    from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal

    rounding = ROUND_CEILING if direction == UP else ROUND_FLOOR
    d = Context(prec=digits, rounding=rounding).plus(Decimal(x))
    text = f"{float(d):.{digits}g}"  # the usual float layout; exact round trip for <= 15 digits
    back = float(text)
    if (back < x) if direction == UP else (back > x):  # 16-17 digits
        text = str(d)
    return text
