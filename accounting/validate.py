"""Small range checks shared by every entry point; each raises :class:`InvalidParameter`."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence, Set
from decimal import Decimal
from fractions import Fraction

import numpy as np

from accounting.errors import InvalidParameter

#: The largest count (steps, dataset size, samples, ...) accepted: above 2**53 a float no longer
#: holds every integer, so ``9007199254740993`` would silently become ``2**53``.
MAX_COUNT = 2**53


def is_real(value: object) -> bool:
    """A real number as Python means it: ``int``, ``float``, numpy scalars (and 0-d arrays) of an
    integer or floating dtype, ``Fraction``, ``Decimal``.  Not ``bool`` (``steps=True`` is a
    mistake, not 1), not ``str`` (``eps='2'``): the API speaks Python, it does not parse text."""
    if isinstance(value, bool | np.bool_):
        return False
    if isinstance(value, numbers.Real | Decimal):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _finite(option: str, value: float) -> float:
    if not is_real(value):
        raise InvalidParameter(option, f"must be a number, not {type(value).__name__} (got {_shown(value)})")
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter(option, f"must be a finite number (got {_shown(value)})") from None
    if math.isnan(v) or math.isinf(v):
        raise InvalidParameter(option, f"must be a finite number (got {value!r})")
    return v


def _exact(value: object, v: float) -> object:
    """The value to range-check besides its float ``v``: an ``int``, ``Fraction`` or ``Decimal``
    itself, since its float may round into the range (``Decimal('1.0000000000000000001')`` is the
    float 1.0, and ``Fraction(10**20 + 1, 10**17)`` the float 1000.0); ``v`` for binary floats."""
    if isinstance(value, numbers.Integral | Fraction | Decimal) and not isinstance(value, bool | np.bool_):
        return value
    return v


def _got(value: object, v: float) -> str:
    """``value``'s repr, and its float where that differs (a Decimal that rounds onto a bound)."""
    if isinstance(value, Fraction | Decimal) and value != v:
        return f"{value!r}, whose float is {v!r}"
    return repr(value)


def positive(option: str, value: float) -> float:
    """Finite and > 0."""
    v = _finite(option, value)
    if v <= 0 or _exact(value, v) <= 0:
        raise InvalidParameter(option, f"must be > 0 (got {_got(value, v)})")
    return v


def nonnegative(option: str, value: float) -> float:
    """Finite and >= 0."""
    v = _finite(option, value)
    if v < 0 or _exact(value, v) < 0:
        raise InvalidParameter(option, f"must be >= 0 (got {_got(value, v)})")
    return v


def open_unit(option: str, value: float) -> float:
    """Finite and in the open interval (0, 1)."""
    v = _finite(option, value)
    if not (0 < v < 1 and 0 < _exact(value, v) < 1):
        raise InvalidParameter(option, f"must be in (0, 1) (got {_got(value, v)})")
    return v


def rate(option: str, value: float) -> float:
    """A sampling rate in (0, 1]."""
    v = _finite(option, value)
    if not (0 < v <= 1 and 0 < _exact(value, v) <= 1):
        raise InvalidParameter(option, f"must be in (0, 1] (got {_got(value, v)})")
    return v


def positive_int(option: str, value: int | float) -> int:
    """An integer in [1, :data:`MAX_COUNT`] (floats with an integral value are accepted).

    Integers are checked exactly (``float(2**53 + 1)`` is ``2**53``); a count is never rounded
    here: a caller that derives one (steps from epochs) rounds up itself."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        n = int(value)
    else:
        v = _finite(option, value)
        x = _exact(value, v)
        if v != math.floor(v) or x != math.floor(x):
            raise InvalidParameter(option, f"must be an integer >= 1 (got {_shown(value)})")
        if abs(v) >= MAX_COUNT:  # a float this large may already be a rounded integer
            raise InvalidParameter(
                option, f"must be below 2**53 = {MAX_COUNT} unless given as an int (got {_shown(value)})"
            )
        n = int(v)
    if n < 1:
        raise InvalidParameter(option, f"must be an integer >= 1 (got {_shown(value)})")
    if n > MAX_COUNT:
        raise InvalidParameter(
            option, f"must be at most 2**53 = {MAX_COUNT}, where floats stop holding every integer (got {n})"
        )
    return n


def real_array(option: str, values: object) -> np.ndarray:
    """:func:`real_values`, one-dimensional."""
    return real_array_exact(option, values)[0]


def real_array_exact(option: str, values: object) -> tuple[np.ndarray, list[tuple[int, object]]]:
    """:func:`real_values` (both parts), one-dimensional."""
    arr, exact = real_values(option, values)
    if arr.ndim != 1:
        raise InvalidParameter(option, f"must be one-dimensional (got shape {arr.shape})")
    return arr, exact


#: what numpy's dtype kinds that are not numbers hold, for messages
_KIND_NAMES = {"b": "bools", "U": "text", "S": "bytes", "c": "complex numbers", "M": "dates", "m": "times"}


def real_values(option: str, values: object) -> tuple[np.ndarray, list[tuple[int, object]]]:
    """A sequence of real numbers as a float array, and ``(index, entry)`` (flattened order) for
    its entries that are neither binary floats nor ints (``Fraction``, ``Decimal``): their floats
    may round into a range they are outside (see :func:`_exact`), so range checks look at them
    too.  A ``str`` is not a sequence of digits, a dict is not its keys, a set has no order and
    ``True`` is not 1.

    The types of a list's entries are read once (``set(map(type, ...))``, about 20 ms for a
    million entries), not tested entry by entry."""
    if isinstance(values, str | bytes | Mapping | Set | bool | np.bool_):
        raise InvalidParameter(option, f"must be a sequence of numbers (got {type(values).__name__})")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter(option, "must be a sequence of numbers") from None
    kind = arr.dtype.kind
    exact: list[tuple[int, object]] = []
    if kind == "O":
        flat = arr.reshape(-1)
        kinds = set(map(type, flat))
        for t in kinds:
            if t is np.ndarray:  # 0-d arrays as entries: a number or not by their dtype
                entries = (v for v in flat if type(v) is np.ndarray)
            elif issubclass(t, numbers.Real | Decimal) and not issubclass(t, bool | np.bool_):
                continue
            else:
                entries = (v for v in flat if type(v) is t)
            if not all(is_real(v) for v in entries):
                raise InvalidParameter(option, f"must be a sequence of numbers (got {t.__name__})")
        if kinds - {float, int, np.float64, np.int64, np.ndarray}:
            exact = [(k, v) for k, v in enumerate(flat) if isinstance(v, Fraction | Decimal)]
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError, OverflowError):  # Decimal('sNaN'), an int beyond 1.8e308
            raise InvalidParameter(option, "must be finite numbers a float can hold") from None
    elif kind not in "iuf":
        what = _KIND_NAMES.get(kind, f"{arr.dtype} entries")
        raise InvalidParameter(option, f"must be a sequence of numbers (got {what})")
    elif isinstance(values, Sequence) and not {bool, np.bool_}.isdisjoint(map(type, values)):
        raise InvalidParameter(option, "must be a sequence of numbers (got a bool)")
    return arr.astype(float, copy=False), exact


def _finite_array(option: str, values: object) -> tuple[np.ndarray, list[tuple[int, object]]]:
    arr, exact = real_values(option, values)
    if arr.size == 0:
        raise InvalidParameter(option, "must not be empty")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameter(option, "must be finite numbers (got NaN or inf)")
    return arr, exact


def positive_array(option: str, values: object) -> np.ndarray:
    """Every entry finite and > 0 (per-step arrays such as noise schedules)."""
    arr, exact = _finite_array(option, values)
    bad = arr[arr <= 0]
    if bad.size:
        raise InvalidParameter(option, f"must be > 0 (got {float(bad.reshape(-1)[0])!r})")
    for _, x in exact:
        positive(option, x)
    return arr


def rate_array(option: str, values: object) -> np.ndarray:
    """Every entry a sampling rate in (0, 1]."""
    arr, exact = _finite_array(option, values)
    bad = arr[(arr <= 0) | (arr > 1)]
    if bad.size:
        raise InvalidParameter(option, f"must be in (0, 1] (got {float(bad.reshape(-1)[0])!r})")
    for _, x in exact:
        rate(option, x)
    return arr
