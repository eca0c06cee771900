"""The one JSON encoding of floats used by every ``--json`` output, report and checkpoint.

JSON has no infinity or NaN.  An epsilon can be ``inf`` (a target out of reach, an order that
cannot be evaluated), so each such float is written as the string ``"inf"``, ``"-inf"`` or
``"nan"``: ``float()`` reads all three back, and ``json.dumps(..., allow_nan=False)`` accepts the
result.  ``null`` is kept for "no value" (``None``), which is a different statement from
"infinitely large".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["json_float", "json_tree"]


def json_float(x: Any) -> Any:
    """A float (Python or numpy) as JSON: finite floats unchanged, the rest as strings.

    Args:
        x: any value; only floats are changed (numpy floats become Python floats).

    Returns:
        ``x`` itself unless it is a float; ``"inf"``, ``"-inf"`` or ``"nan"`` for non-finite floats.
    """
    if isinstance(x, float | np.floating):
        x = float(x)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


def json_tree(x: Any) -> Any:
    """:func:`json_float` applied through mappings (keys made strings), lists and tuples; other
    values unchanged."""
    if isinstance(x, Mapping):
        return {str(k): json_tree(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_tree(v) for v in x]
    return json_float(x)
