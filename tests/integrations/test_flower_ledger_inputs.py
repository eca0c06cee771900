"""LocalDpLedger and PrivacyLedgerMod inputs: a restored ledger keeps every message (duplicate z
entries compose, counts are never truncated) and odd Python values are refused with one
InvalidParameter naming the parameter (held-out fuzz run)."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.errors import InvalidParameter
from dptheory.integrations.flower.ledger import LocalDpLedger

DELTA = 1e-5


@settings(max_examples=20, deadline=None)
@given(runs=st.lists(st.tuples(st.sampled_from([0.8, 1.0, 2.5]), st.integers(1, 50)), min_size=1, max_size=5))
def test_from_config_keeps_every_message(runs: list[tuple[float, int]]) -> None:
    """{'z': [1, 1], 'count': [5, 5]} used to become 5 messages (48.8 -> 30.1): duplicates add up."""
    ledger = LocalDpLedger.from_config({"z": [z for z, _ in runs], "count": [k for _, k in runs]})
    ref = LocalDpLedger()
    for z, k in runs:
        for _ in range(k):
            ref.record(z)
    assert ledger.counts == ref.counts and ledger.messages == sum(k for _, k in runs)
    assert ledger.epsilon(DELTA) == ref.epsilon(DELTA)
    assert LocalDpLedger.from_config(ledger.to_config()).counts == ledger.counts


@pytest.mark.parametrize(
    "record",
    [{"z": [1.0], "count": [2.7]}, {"z": [1.0], "count": [True]}, {"z": [1.0], "count": [0]},
     {"z": [1.0], "count": [-3]}, {"z": [1.0], "count": [2.0]}, {"z": [1.0, 2.0], "count": [10]},
     {"z": [math.inf], "count": [10]}, {"z": [0.0], "count": [10]}, {"z": [math.nan], "count": [1]},
     {"z": ["1"], "count": [10]}, {"z": [True], "count": [1]}, {"z": [1.0]}, {}, None,
     {"z": 1.0, "count": 1}],
)  # fmt: skip
def test_from_config_refuses_what_would_lose_or_invent_messages(record) -> None:
    with pytest.raises(InvalidParameter) as info:
        LocalDpLedger.from_config(record)
    assert info.value.option == "record"


@pytest.mark.parametrize("z", [True, None, "1", math.nan, math.inf, 0.0, -1.0, 10**400])
def test_record_refuses_what_is_not_a_positive_number(z) -> None:
    ledger = LocalDpLedger()
    with pytest.raises(InvalidParameter) as info:
        ledger.record(z)
    assert info.value.option == "noise_multiplier" and ledger.messages == 0


@pytest.mark.parametrize("delta", [None, True, "1e-5", 0.0, 1.0, math.nan, 10**400])
def test_epsilon_refuses_a_bad_delta(delta) -> None:
    ledger = LocalDpLedger({1.0: 3})
    with pytest.raises(InvalidParameter) as info:
        ledger.epsilon(delta)
    assert info.value.option == "delta"


def test_exact_numbers_of_other_types_are_still_numbers() -> None:
    ref = LocalDpLedger()
    ref.record(1.0)
    for z in (Fraction(1), Decimal("1"), np.float32(1.0), np.int64(1)):
        ledger = LocalDpLedger()
        ledger.record(z)
        assert ledger.epsilon(DELTA) == ref.epsilon(DELTA)


flwr = pytest.importorskip("flwr")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"noise_multiplier": True}, "noise_multiplier"), ({"noise_multiplier": "1"}, "noise_multiplier"),
     ({"noise_multiplier": 10**400}, "noise_multiplier"), ({"clipping_norm": "1"}, "clipping_norm"),
     ({"target_delta": True}, "target_delta"), ({"max_epsilon": math.nan}, "max_epsilon"),
     ({"seed": "1"}, "seed"), ({"seed": Fraction(1, 2)}, "seed"), ({"seed": 10**400}, "seed"),
     ({"seed": math.nan}, "seed"), ({"seed": math.inf}, "seed"), ({"seed": -1}, "seed"),
     ({"seed": True}, "seed"), ({"seed": 1.0}, "seed")],
)  # fmt: skip
def test_mod_constructor_refuses_odd_values(kwargs, name) -> None:
    from dptheory.integrations.flower.mods import PrivacyLedgerMod

    args = {"clipping_norm": 1.0, "noise_multiplier": 1.0, "target_delta": DELTA, **kwargs}
    with pytest.raises(InvalidParameter) as info:
        PrivacyLedgerMod(**args)
    assert info.value.option == name


def test_mod_constructor_keeps_good_values() -> None:
    from dptheory.integrations.flower.mods import PrivacyLedgerMod

    mod = PrivacyLedgerMod(Fraction(1), np.float32(2.0), DELTA, 8, seed=np.int64(7))
    assert (mod.clipping_norm, mod.noise_multiplier, mod.max_epsilon, mod.seed) == (1.0, 2.0, 8.0, 7)
    assert PrivacyLedgerMod(seed=2**127).seed == 2**127
