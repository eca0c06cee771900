"""Small range checks shared by every entry point; each raises :class:`InvalidParameter`."""

from __future__ import annotations

import math

import numpy as np

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


def _finite_array(option: str, values: object) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameter(option, "must be numbers") from None
    if arr.size == 0:
        raise InvalidParameter(option, "must not be empty")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameter(option, "must be finite numbers (got NaN or inf)")
    return arr


def positive_array(option: str, values: object) -> np.ndarray:
    """Every entry finite and > 0 (per-step arrays such as noise schedules)."""
    arr = _finite_array(option, values)
    bad = arr[arr <= 0]
    if bad.size:
        raise InvalidParameter(option, f"must be > 0 (got {float(bad.reshape(-1)[0])!r})")
    return arr


def rate_array(option: str, values: object) -> np.ndarray:
    """Every entry a sampling rate in (0, 1]."""
    arr = _finite_array(option, values)
    bad = arr[(arr <= 0) | (arr > 1)]
    if bad.size:
        raise InvalidParameter(option, f"must be in (0, 1] (got {float(bad.reshape(-1)[0])!r})")
    return arr
