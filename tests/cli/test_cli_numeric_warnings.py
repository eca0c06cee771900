"""No numpy RuntimeWarning reaches stderr from a command (Python prints each with its source line).

Found at noise multipliers near the float limits: ``audit --algo dp2sgd --noise-multiplier 1e-300``
printed accounting/algorithms/d2p2.py's 'divide by zero', ``audit --algo dicesgd`` those of
accounting/hidden_state.py and accounting/audit/dicesgd.py, before or after the one-line answer.
"""

from __future__ import annotations

import warnings

import pytest

from dptheory.cli.main import main

COMMON = ["--noise-multiplier", "1e-300", "--delta", "1e-5", "--sample-rate", "0.01", "--steps", "10"]


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--algo", "dp2sgd", *COMMON[:-1], "1", "--projection-dim", "10", "--model-dim", "20"],
        ["audit", "--algo", "dicesgd", *COMMON, "--samples", "1000"],
        ["epsilon", "--algo", "dicesgd", *COMMON, "--grad-bound", "3"],
    ],
)
def test_no_runtime_warning_at_extreme_noise(argv, capsys):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert main(argv) == 0
    out, err = capsys.readouterr()
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)]
    assert "Warning:" not in err and out
