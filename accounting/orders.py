"""Grids of Renyi orders.

The default grid contains every order of dp-accounting's ``RdpAccountant`` default grid (so our
epsilon can never be worse than theirs on the same mechanism) plus a denser and longer tail of
large integer orders (useful when epsilon is small; integer orders are cheap).  Fractional
orders below 1.1 are deliberately not added: they only help when epsilon is huge, and their
series converge slowly (hundreds to thousands of terms per step); pass ``--orders`` to add them.
"""

from __future__ import annotations

import math

import numpy as np

from accounting.errors import InvalidParameter

#: dp-accounting's ``DEFAULT_RDP_ORDERS`` (rdp_privacy_accountant.py), rebuilt here so that
#: importing :mod:`accounting` does not import dp-accounting.
DP_ACCOUNTING_ORDERS: np.ndarray = np.array(
    [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024], dtype=float
)

_EXTRA_ORDERS = [64, 80, 96, 112, 160, 192, 320, 384, 768, 1536, 2048]

#: Default grid: a strict superset of :data:`DP_ACCOUNTING_ORDERS`, sorted, unique.
DEFAULT_ORDERS: np.ndarray = np.unique(np.concatenate([DP_ACCOUNTING_ORDERS, _EXTRA_ORDERS]))
DEFAULT_ORDERS.setflags(write=False)

_MAX_RANGE_LENGTH = 100_000
#: Largest Renyi order accepted anywhere (integer orders cost O(alpha) terms per step).
MAX_ORDER = 1_000_000


def _number(token: str, text: str) -> float:
    try:
        v = float(token)
    except ValueError:
        raise InvalidParameter(
            "--orders", f"{token!r} is not a number (expected e.g. '1.5,2,4-64'; got {text!r})"
        ) from None
    if not math.isfinite(v):
        raise InvalidParameter("--orders", f"orders must be finite numbers > 1 (got {token!r})")
    return v


def _range_values(lo_txt: str, hi_txt: str, step_txt: str, item: str) -> list[float]:
    """``lo, lo + step, ..., <= hi`` computed in decimal from the typed strings, then rounded once
    to float: ``1.2-12:0.2`` gives 6.0, not ``1.2 + 24 * 0.2 = 6.000000000000001`` (which the
    fractional series cannot evaluate), and a fine step is never merged or moved out of range."""
    from decimal import ROUND_FLOOR, Decimal, InvalidOperation

    try:
        lo, hi, step = Decimal(lo_txt), Decimal(hi_txt), Decimal(step_txt)
    except InvalidOperation:  # spellings float() takes but Decimal does not (e.g. "1_000")
        lo, hi, step = (Decimal(float(t)) for t in (lo_txt, hi_txt, step_txt))
    n = int(((hi - lo) / step).to_integral_value(rounding=ROUND_FLOOR)) + 1
    if n > _MAX_RANGE_LENGTH:
        raise InvalidParameter("--orders", f"range {item!r} has more than {_MAX_RANGE_LENGTH} orders")
    return [float(lo + i * step) for i in range(n)]


def parse_orders(text: str) -> np.ndarray:
    """Parse a CLI ``--orders`` string into a sorted array of unique orders (all > 1).

    Syntax: comma-separated items, each a number (``1.5``), an integer range ``lo-hi`` (every
    integer from lo to hi inclusive), a stepped range ``lo-hi:step``, or the word ``default``
    (the :data:`DEFAULT_ORDERS` grid), e.g. ``"1.5,2,4-64"`` or ``"default,4096"``.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidParameter("--orders", "must be a non-empty list such as '1.5,2,4-64'")
    values: list[float] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise InvalidParameter("--orders", f"empty item in {text!r} (expected e.g. '1.5,2,4-64')")
        if item.lower() == "default":
            values.extend(DEFAULT_ORDERS.tolist())
            continue
        if "-" in item.lstrip("-+"):
            body, _, step_txt = item.partition(":")
            lo_txt, _, hi_txt = body.partition("-")
            lo, hi = _number(lo_txt.strip(), text), _number(hi_txt.strip(), text)
            if step_txt:
                step = _number(step_txt.strip(), text)
                if step <= 0:
                    raise InvalidParameter("--orders", f"range step must be > 0 in {item!r}")
            else:
                step = 1.0
                if lo != int(lo) or hi != int(hi):
                    raise InvalidParameter(
                        "--orders", f"range {item!r} needs integer ends, or a step as 'lo-hi:step'"
                    )
            if hi < lo:
                raise InvalidParameter("--orders", f"range {item!r} is empty (hi < lo)")
            values.extend(_range_values(lo_txt.strip(), hi_txt.strip(), step_txt.strip() or "1", item))
        else:
            values.append(_number(item, text))
    arr = np.unique(np.asarray(values, dtype=float))
    return check_orders(arr)


def check_orders(orders: object) -> np.ndarray:
    """Sorted unique orders, each finite, > 1 and <= :data:`MAX_ORDER` (else InvalidParameter)."""
    try:
        arr = np.unique(np.asarray(orders, dtype=float).reshape(-1))
    except (TypeError, ValueError):
        raise InvalidParameter("--orders", "must be numbers > 1") from None
    if arr.size == 0:
        raise InvalidParameter("--orders", "must not be empty")
    bad = arr[~np.isfinite(arr) | (arr <= 1) | (arr > MAX_ORDER)]
    if bad.size:
        raise InvalidParameter("--orders", f"orders must be in (1, {MAX_ORDER:g}] (got {bad[0]:g})")
    return arr
