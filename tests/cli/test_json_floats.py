"""One JSON encoding of floats: non-finite values as strings that float() reads back."""

from __future__ import annotations

import json
import math

import numpy as np

from accounting.json_floats import json_float, json_tree


def test_json_float_round_trips_every_float() -> None:
    for x in (0.0, -0.0, 1.5, 1e-300, np.float64(2.5), np.float32(0.25), math.inf, -math.inf, np.inf):
        y = json_float(x)
        assert float(json.loads(json.dumps(y, allow_nan=False))) == float(x)
    assert json_float(math.nan) == "nan" and math.isnan(float(json_float(math.nan)))
    assert (json_float(math.inf), json_float(-np.inf)) == ("inf", "-inf")
    assert json_float(None) is None and json_float(3) == 3 and json_float("x") == "x"


def test_json_tree_reaches_nested_values_and_keeps_none() -> None:
    tree = {"a": [1.0, math.inf, (None, -math.inf)], 2: {"b": np.float64("nan")}}
    out = json_tree(tree)
    assert out == {"a": [1.0, "inf", [None, "-inf"]], "2": {"b": "nan"}}
    json.dumps(out, allow_nan=False)


def test_every_encoder_of_the_package_agrees() -> None:
    from accounting.events import _float_to_json
    from dptheory.cli.run_cmd import _jsonable
    from verification.claims._util import g

    for x in (math.inf, -math.inf, math.nan):
        assert _float_to_json(x) == g(x) == _jsonable(x) == json_float(x)
    assert _jsonable({"e": np.array([1.0, np.inf]), "n": np.int64(3)}) == {"e": [1.0, "inf"], "n": 3}
