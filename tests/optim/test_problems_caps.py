"""A toy problem's size follows from its options: each is capped before anything is allocated."""

from __future__ import annotations

import pytest

from accounting.errors import InvalidParameter
from dptheory.cli.main import main
from dptheory.problems import get_problem
from dptheory.problems.dicesgd_b1 import MAX_SAMPLES


@pytest.mark.parametrize("c", [1e300, 1e9, MAX_SAMPLES - 1.5])
def test_dicesgd_b1_refuses_a_threshold_whose_instance_is_too_large(c: float) -> None:
    """The instance has ceil(C) + 2 samples: --c1 1e300 was a traceback (a list of 1e300 entries)."""
    with pytest.raises(InvalidParameter, match="--c1"):
        get_problem("dicesgd-b1", c=c)


def test_dicesgd_b1_at_the_cap_is_built() -> None:
    assert get_problem("dicesgd-b1", c=MAX_SAMPLES - 2).size == MAX_SAMPLES


def test_the_cli_names_the_option(capsys) -> None:
    argv = ["run", "--algo", "dpsgd", "--problem", "dicesgd-b1", "--c1", "1e300", "--steps", "40"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--c1" in err and "4094" in err, err
