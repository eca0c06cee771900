"""Fractions and Decimals are checked as the numbers they are, not as the floats they round to.

``Decimal('1.0000000000000000001')`` is the float 1.0 and ``Fraction(10**20 + 1, 10**17)`` the float
1000.0: a rate just above 1 or a step count just off an integer was accepted as the nearby valid
value.  Counts must be integers and rates lie in (0, 1], exactly; values that are exactly valid
(``Decimal('0.01')``, ``Fraction(2000, 2)``) keep working.  A schedule event's sequences hold
numbers, not text or bools, as every other public function's do.
"""

from __future__ import annotations

from collections import deque
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import dptheory
from accounting import validate
from accounting.errors import InvalidParameter
from accounting.events import ScheduleEvent
from accounting.rdp import gaussian_rdp, subsampled_gaussian_rdp

BASE = dict(noise_multiplier=1.0, delta=1e-5, algo="dpsgd", sample_rate=0.01, steps=1000)


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("steps", Decimal("1000.0000000000000000001")),
        ("steps", Decimal("999.99999999999999999")),
        ("steps", Fraction(10**20 + 1, 10**17)),
        ("sample_rate", Fraction(10**30 + 1, 10**30)),
        ("sample_rate", Decimal("1.0000000000000000001")),
        ("noise_multiplier", Decimal("-1e-400")),
        ("delta", Decimal("1e-400")),
    ],
)
def test_near_valid_exact_values_are_refused(keyword: str, value) -> None:
    assert float(value) in (1000.0, 1.0, 0.0)  # what the old float check saw: a valid value or 0
    with pytest.raises(InvalidParameter) as err:
        dptheory.epsilon(**{**BASE, keyword: value})
    assert err.value.option == keyword


def test_dataset_size_is_an_exact_integer() -> None:
    base = {**BASE, "sample_rate": None, "batch_size": 10}
    with pytest.raises(InvalidParameter) as err:
        dptheory.epsilon(**{**base, "dataset_size": Decimal("1000.0000000000000000001")})
    assert err.value.option == "dataset_size"
    exact = dptheory.epsilon(**{**base, "dataset_size": Decimal("1000")})
    assert exact.epsilon == dptheory.epsilon(**{**base, "dataset_size": 1000}).epsilon


@pytest.mark.parametrize(
    ("keyword", "value", "plain"),
    [
        ("steps", Decimal("1000"), 1000),
        ("steps", Fraction(2000, 2), 1000),
        ("sample_rate", Decimal("0.01"), 0.01),
        ("sample_rate", Fraction(1, 1), 1.0),
    ],
)
def test_exactly_valid_values_give_the_plain_result(keyword: str, value, plain) -> None:
    got = dptheory.epsilon(**{**BASE, keyword: value}).epsilon
    assert got == dptheory.epsilon(**{**BASE, keyword: plain}).epsilon


def test_schedule_rates_and_noises_are_checked_exactly() -> None:
    with pytest.raises(InvalidParameter, match=r"step 1: must be in \(0, 1\]"):
        ScheduleEvent((Fraction(10**30 + 1, 10**30), 0.5), (1.0, 2.0))
    with pytest.raises(InvalidParameter, match=r"step 2: must be in \(0, 1\]"):
        ScheduleEvent((Decimal("0.5"), Decimal("1.0000000000000000001")), (1.0, 2.0))
    with pytest.raises(InvalidParameter, match="step 2: must be > 0"):
        ScheduleEvent(0.5, (1.0, Decimal("-1e-400")))
    assert ScheduleEvent((Fraction(1, 2), Fraction(1, 1)), (1.0, 2.0)).sample_rate == (0.5, 1.0)


def test_arrays_of_exact_values_are_checked_exactly() -> None:
    with pytest.raises(InvalidParameter, match="sample"):
        validate.rate_array("sample_rate", [Fraction(1, 2), Fraction(10**30 + 1, 10**30)])
    with pytest.raises(InvalidParameter, match="noise"):
        validate.positive_array("noise", [Decimal("1"), Decimal("-1e-400")])
    assert validate.rate_array("sample_rate", [Fraction(1, 2), 1]).tolist() == [0.5, 1.0]


@pytest.mark.parametrize("values", [["1.5", "2"], [True, 2.0], ("1", 2.0), [1.0, None]])
def test_schedule_values_are_numbers_not_text(values) -> None:
    """A schedule event takes numbers, as every public function does: ``"1.5"`` was parsed."""
    with pytest.raises(InvalidParameter, match="must be a sequence of numbers"):
        ScheduleEvent(0.01, values)
    with pytest.raises(InvalidParameter, match="must be a sequence of numbers"):
        ScheduleEvent(values, (1.0, 2.0))


@pytest.mark.parametrize(
    "values",
    [[Decimal("sNaN"), 1.0], [10**400], [True, 2], deque([True, 2.0]), (v for v in [1.0])],
)
def test_sequences_that_are_not_float_numbers_name_the_parameter(values) -> None:
    """A signalling NaN, an int beyond any float, a bool among ints (numpy makes them int64) or
    in a deque, a generator: each an InvalidParameter, not numpy's ValueError or OverflowError."""
    with pytest.raises(InvalidParameter, match="--noise-multiplier"):
        ScheduleEvent(0.5, values)


def test_the_rdp_functions_check_what_they_are_given() -> None:
    """accounting.rdp is public: its inputs are checked before they become floats."""
    orders = np.array([2.0, 8.0])
    with pytest.raises(InvalidParameter, match="sample-rate"):
        subsampled_gaussian_rdp(Decimal("1.0000000000000000001"), 1.0, orders)
    with pytest.raises(InvalidParameter, match="sample-rate"):
        subsampled_gaussian_rdp([Fraction(10**20 + 1, 10**20)], [1.0], orders)
    with pytest.raises(InvalidParameter, match="noise-multiplier"):
        gaussian_rdp("2", orders)
    exact = subsampled_gaussian_rdp(Fraction(1, 2), Decimal(2), orders).rdp
    assert np.array_equal(exact, subsampled_gaussian_rdp(0.5, 2.0, orders).rdp)


def test_a_value_that_rounds_onto_a_bound_says_so() -> None:
    """Decimal('0.9999999999999999999999') is in (0, 1) but its float is 1.0: refused, and the
    message shows the float, so that it does not read as a wrong refusal."""
    with pytest.raises(InvalidParameter, match=r"whose float is 1\.0"):
        validate.open_unit("delta", Decimal("0.9999999999999999999999"))
