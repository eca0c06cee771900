"""The one parser of numeric command-line values (every subcommand's ``type=``).

argparse's ``float`` accepts ``nan``, ``inf`` and ``1e-400`` (which silently becomes 0.0), and
``int`` rejects ``1e6``.  These parsers reject, at parse time, anything that is not a finite
number representable as given: NaN, infinities, and literals that overflow to inf or underflow
to 0.  argparse then prints ``argument --OPTION: <message>``, one line (``OneLineParser``), exit 2.
Range checks (``> 0``, ``in (0, 1)``) stay with the accounting layer, which knows each option's
meaning and names it in the same one-line form.
"""

from __future__ import annotations

import argparse
import math
import re
from decimal import Decimal, InvalidOperation

from accounting.printed import DOWN, UP, fmt  # re-exported: the one formatting rule of printed numbers

__all__ = ["number", "integer", "count", "fmt", "UP", "DOWN"]

# The largest integer option value we accept: steps/rounds/samples are bounded by the documented
# envelope (T <= 1e9), with headroom; beyond 2**53 floats no longer represent integers exactly.
_MAX_INT = 2**53
_NONZERO_DIGIT = re.compile(r"[1-9]")


def number(text: str) -> float:
    """A finite float; NaN, inf and literals that overflow or underflow are errors."""
    raw = text.strip() if isinstance(text, str) else str(text)
    try:
        v = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number (got {text!r})") from None
    if math.isnan(v):
        raise argparse.ArgumentTypeError(f"must be a finite number (got {text!r})")
    if math.isinf(v):
        if re.search(r"inf", raw, re.IGNORECASE):
            raise argparse.ArgumentTypeError(f"must be a finite number (got {text!r})")
        raise argparse.ArgumentTypeError(f"{text!r} overflows double precision (|x| < 1.8e308)")
    mantissa = re.split(r"[eE]", raw, maxsplit=1)[0]
    if v == 0.0 and _NONZERO_DIGIT.search(mantissa):
        raise argparse.ArgumentTypeError(f"{text!r} underflows to 0 in double precision (|x| > 2.2e-308)")
    if v != 0.0 and abs(v) < 2.2250738585072014e-308:
        raise argparse.ArgumentTypeError(f"{text!r} is subnormal in double precision (|x| > 2.2e-308)")
    if v == math.floor(v) and abs(v) < _MAX_INT and not _names_the_integer(raw, v):
        # '1.0000000000000000001' is the float 1.0: a rate that passes (0, 1], a count that passes
        # "integral", although the number typed is neither.  The Python API checks such a
        # Decimal exactly; here the text is the exact value.
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an integer but rounds to {int(v)} in double precision; write {int(v)}"
        )
    return v


def _names_the_integer(raw: str, v: float) -> bool:
    """Whether the literal ``raw`` is exactly the integer ``v`` (``1e3``, ``1000.000``), read as a
    decimal; text that ``float`` reads and ``Decimal`` does not is taken as meant."""
    try:
        return Decimal(raw) == int(v)
    except InvalidOperation:
        return True


def integer(text: str) -> int:
    """An integer, also written as ``1e6`` or ``1000.0``; non-integral values are errors.
    Integer literals are read exactly (:func:`count`), so 2**53 + 1 is refused, not rounded."""
    v = count(text)
    if v != math.floor(v):
        raise argparse.ArgumentTypeError(f"must be an integer (got {text!r})")
    if abs(v) > _MAX_INT:
        raise argparse.ArgumentTypeError(
            f"must be at most 2**53 = {_MAX_INT} in absolute value (got {text!r})"
        )
    return int(v)


_INT_LITERAL = re.compile(r"[+-]?[0-9]+")


def count(text: str) -> int | float:
    """A count option (``--steps``, ``--dataset-size``, ...): an integer literal is read exactly as
    an ``int`` (``9007199254740993`` stays itself, where ``float`` would make it ``2**53``; the
    accounting layer then refuses it above its cap); anything else is a :func:`number`, which
    the accounting layer accepts only when integral (``1e6``)."""
    raw = text.strip() if isinstance(text, str) else str(text)
    if _INT_LITERAL.fullmatch(raw):
        if len(raw.lstrip("+-0")) > 30:  # far past every cap; int() of 10^7 digits is slow
            raise argparse.ArgumentTypeError(f"must be at most 2**53 (got a {len(raw)}-digit integer)")
        return int(raw)
    v = number(text)
    if abs(v) >= _MAX_INT:  # a non-integer literal this large was already rounded by float()
        raise argparse.ArgumentTypeError(f"must be below 2**53 = {_MAX_INT} when not written as an integer")
    return v
