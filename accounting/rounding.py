"""The one rule that lifts a computed nonnegative value above its floating-point rounding errors.

Every composed-RDP sum (integer and fractional orders, the sigma grid, the smooth-schedule bound,
the hidden-state bound, Clip21's closed forms) multiplies its result by ``up(k)`` for the ``k``
roundings it has counted, so that paths which must agree pad by the same rule and every printed
epsilon stays an upper bound.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ULP", "up"]

#: The spacing of doubles at 1 (``2^-52``): one unit in the last place, relative.
ULP = 2.0**-52


def up(ulps: float | np.ndarray) -> float | np.ndarray:
    """The factor ``1 + ulps * 2^-52``.

    Args:
        ulps: how many relative roundings (units in the last place) to allow for, >= 0.

    Returns:
        The factor to multiply a nonnegative result by (elementwise for an array).
    """
    return 1.0 + ulps * ULP
