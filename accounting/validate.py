"""Small range checks shared by every entry point; each raises :class:`InvalidParameter`."""

from __future__ import annotations

import math

from accounting.errors import InvalidParameter


def _finite(option: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(option, f"must be a number (got {value!r})") from None
    if math.isnan(v) or math.isinf(v):
        raise InvalidParameter(option, f"must be a finite number (got {value!r})")
    return v


def positive(option: str, value: float) -> float:
    """Finite and > 0."""
    v = _finite(option, value)
    if v <= 0:
        raise InvalidParameter(option, f"must be > 0 (got {value!r})")
    return v


def nonnegative(option: str, value: float) -> float:
    """Finite and >= 0."""
    v = _finite(option, value)
    if v < 0:
        raise InvalidParameter(option, f"must be >= 0 (got {value!r})")
    return v


def open_unit(option: str, value: float) -> float:
    """Finite and in the open interval (0, 1)."""
    v = _finite(option, value)
    if not 0 < v < 1:
        raise InvalidParameter(option, f"must be in (0, 1) (got {value!r})")
    return v


def rate(option: str, value: float) -> float:
    """A sampling rate in (0, 1]."""
    v = _finite(option, value)
    if not 0 < v <= 1:
        raise InvalidParameter(option, f"must be in (0, 1] (got {value!r})")
    return v


def positive_int(option: str, value: int | float) -> int:
    """An integer >= 1 (floats with an integral value are accepted)."""
    v = _finite(option, value)
    if v != int(v) or v < 1:
        raise InvalidParameter(option, f"must be an integer >= 1 (got {value!r})")
    return int(v)
