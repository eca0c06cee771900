"""DptheoryAccountant's inputs: the ``history`` setter, ``step_certified``'s mechanism dict, and
checkpoint states edited in one field.  Each case here once lowered epsilon or raised an untyped
error (held-out fuzz run): now each is refused with one InvalidParameter, or certifies the truth."""

from __future__ import annotations

import copy
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("opacus")

from accounting.accountant import RdpAccountant  # noqa: E402
from accounting.errors import InvalidParameter  # noqa: E402
from dptheory.integrations.opacus.accountant import DptheoryAccountant  # noqa: E402
from dptheory.integrations.opacus.state_checks import digest  # noqa: E402

DELTA = 1e-5
DICE = {"algo": "dicesgd", "sample_rate": 0.01, "dataset_size": 10000, "batch_size": 100,
        "c1": 1.0, "c2": 1.0, "grad_bound": None}  # fmt: skip


def _exact(z: float, q: float, n: int) -> float:
    ref = RdpAccountant()
    ref.step(noise_multiplier=z, sample_rate=q, count=n)
    return ref.get_epsilon(DELTA)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 10**6), z=st.floats(0.5, 5.0), q=st.floats(1e-4, 1.0))
def test_history_setter_certifies_exactly_its_counts(n: int, z: float, q: float) -> None:
    acc = DptheoryAccountant()
    acc.history = [(z, q, n)]
    assert acc.get_epsilon(DELTA) == _exact(z, q, n) and len(acc) == n
    acc.history = [(z, q, np.int64(n))]  # numpy integers are integers
    assert acc.get_epsilon(DELTA) == _exact(z, q, n)


@pytest.mark.parametrize(
    "count",
    [0.999, 2.7, Fraction(1, 2), 1.0, np.float32(1.0), Decimal("1"), True, "1", None,
     math.nan, math.inf, -1, 2**53 + 1, 10**400],
)  # fmt: skip
def test_history_setter_refuses_counts_that_are_not_exact_integers(count) -> None:
    """0.999 used to give epsilon 0 (int() truncated it), 2.7 gave 2 steps; None/nan raised raw."""
    acc = DptheoryAccountant()
    acc.history = [(1.0, 0.1, 5)]
    with pytest.raises(InvalidParameter) as info:
        acc.history = [(1.0, 0.1, count)]
    assert info.value.option == "history"
    assert acc.history == [(1.0, 0.1, 5)] and len(acc) == 5  # unchanged


@pytest.mark.parametrize(
    "entries",
    [[(1.0, 0.1)], "abc", {1: 2}, [(None, 0.1, 1)], [(math.nan, 0.1, 1)], [(1.0, 0.0, 1)],
     [(1.0, 1.5, 1)], [(True, 0.1, 1)], [("1", 0.1, 1)], None, [1, 2, 3]],
)  # fmt: skip
def test_history_setter_refuses_malformed_entries(entries) -> None:
    with pytest.raises(InvalidParameter) as info:
        DptheoryAccountant().history = entries
    assert info.value.option == "history"


@pytest.mark.parametrize(
    "mech",
    [{}, {"algo": "dicesgd", "sample_rate": 0.1}, {"algo": "bogus"}, {**DICE, "c1": -1.0},
     {**DICE, "c2": True}, {**DICE, "extra": 1}, {**DICE, "dataset_size": 2.5}, {**DICE, "batch_size": 10},
     {**DICE, "grad_bound": "1"},
     {"algo": "d2p2sgd", "sample_rate": 0.1, "batch_size": 10, "projection": "fixed", "layers": [],
      "fixed_factor": None}, None],
)  # fmt: skip
def test_step_certified_refuses_an_incomplete_or_bad_mechanism(mech) -> None:
    acc = DptheoryAccountant()
    with pytest.raises(InvalidParameter) as info:
        acc.step_certified(mech, 1.0)
    assert info.value.option == "mechanism"
    assert len(acc) == 0 and acc.get_epsilon(DELTA) == 0.0


@pytest.mark.parametrize("z", [0.0, -1.0, math.nan, math.inf, None, True])
def test_step_certified_refuses_a_bad_noise_multiplier(z) -> None:
    with pytest.raises(InvalidParameter) as info:
        DptheoryAccountant().step_certified(dict(DICE), z)
    assert info.value.option == "noise_multiplier"


def _dice(steps: int = 100, z: float = 3.0) -> DptheoryAccountant:
    acc = DptheoryAccountant()
    for _ in range(steps):
        acc.step_certified(dict(DICE), z)
    return acc


EDITS = [("c2", 1e-9), ("c2", 0.01), ("grad_bound", 1.0), ("c1", 100.0), ("batch_size", 1000),
         ("dataset_size", 10**9), ("sample_rate", 0.001), ("algo", "d2p2sgd"), ("extra", 1)]  # fmt: skip


@pytest.mark.parametrize(("key", "value"), EDITS)
def test_certified_checkpoint_edited_in_one_field_is_refused(key, value) -> None:
    """c2 = 1e-9 or grad_bound = 1 turned 242713 into 0.13; algo = d2p2sgd loaded, then raised."""
    acc = _dice()
    eps = acc.get_epsilon(DELTA)
    state = copy.deepcopy(dict(acc.state_dict()))
    restored = DptheoryAccountant()
    restored.load_state_dict(copy.deepcopy(state))
    assert restored.get_epsilon(DELTA) == eps and len(restored) == 100
    state["dptheory"]["certified"][key] = value
    target = DptheoryAccountant()
    with pytest.raises(InvalidParameter, match="digest") as info:
        target.load_state_dict(state)
    assert info.value.option == "state_dict" and len(target) == 0


@pytest.mark.parametrize(("key", "value"), EDITS)
def test_recomputed_digest_still_meets_the_field_checks(key, value) -> None:
    """A forger who recomputes the digest is not stopped (docs/api.md); ill-typed or unknown fields
    still are, so get_epsilon never raises an untyped error after a load."""
    state = copy.deepcopy(dict(_dice(5).state_dict()))
    state["dptheory"]["certified"][key] = value
    state["dptheory"]["digest"] = digest(state)
    target = DptheoryAccountant()
    try:
        target.load_state_dict(state)
    except InvalidParameter as err:
        assert err.option == "state_dict"
        return
    assert key not in ("algo", "extra")
    assert target.get_epsilon(DELTA) > 0


def test_certified_checkpoint_without_digest_is_refused() -> None:
    state = copy.deepcopy(dict(_dice(5).state_dict()))
    del state["dptheory"]["digest"]
    with pytest.raises(InvalidParameter, match="digest"):
        DptheoryAccountant().load_state_dict(state)


def test_digest_survives_a_plain_data_round_trip() -> None:
    """Tuples become lists in JSON; the digest does not change (a genuine checkpoint still loads)."""
    import json

    for acc in (_dice(7), DptheoryAccountant()):
        if not acc._certified:
            for _ in range(4):
                acc.step(noise_multiplier=1.1, sample_rate=0.02)
        state = json.loads(json.dumps(dict(acc.state_dict())))
        restored = DptheoryAccountant()
        restored.load_state_dict(state)
        assert restored.get_epsilon(DELTA) == acc.get_epsilon(DELTA)


def test_dptheory_state_relabelled_as_an_opacus_checkpoint_is_refused() -> None:
    """mechanism 'rdp' + history count 1 was replayed as Opacus's, ignoring the dptheory record
    (7.90 -> 2.13)."""
    acc = DptheoryAccountant()
    acc.history = [(1.0, 0.1, 100)]
    for history in ([(1.0, 0.1, 1)], [(1.0, 0.1, 100)]):
        state = copy.deepcopy(dict(acc.state_dict()))
        state["mechanism"], state["history"] = "rdp", history
        with pytest.raises(InvalidParameter) as info:
            DptheoryAccountant().load_state_dict(state)
        assert info.value.option == "state_dict"
    # a genuine Opacus checkpoint (no dptheory entry) is still replayed
    plain = DptheoryAccountant()
    plain.load_state_dict({"history": [(1.0, 0.1, 100)], "mechanism": "rdp"})
    assert plain.get_epsilon(DELTA) == acc.get_epsilon(DELTA)


def test_dpsgd_checkpoint_edited_in_one_field_is_refused() -> None:
    acc = DptheoryAccountant()
    acc.history = [(1.0, 0.1, 100)]
    state = copy.deepcopy(dict(acc.state_dict()))
    state["dptheory"]["rdp"]["evaluation"] = (
        "bound" if state["dptheory"]["rdp"]["evaluation"] != "bound" else "exact"
    )
    with pytest.raises(InvalidParameter, match="digest"):
        DptheoryAccountant().load_state_dict(state)


def test_get_epsilon_names_method() -> None:
    acc = DptheoryAccountant()
    acc.history = [(1.0, 0.1, 10)]
    for bad in ("bogus", None):
        with pytest.raises(InvalidParameter) as info:
            acc.get_privacy_spent(delta=DELTA, method=bad)
        assert info.value.option == "method"


def test_history_edited_in_place_is_what_epsilon_certifies() -> None:
    """``history`` is the live list, as in Opacus, where code appends to it.  An append, a replaced
    entry or a clear() used to change the history but not the RDP total: 1010 steps certified as
    the first 10 (epsilon 1.04 where Opacus gives 136), a z = 0 step as private, and cleared steps
    coming back at the next step.  Each now rebuilds the total from the history, as the setter does."""
    acc = DptheoryAccountant()
    for _ in range(10):
        acc.step(noise_multiplier=1.0, sample_rate=0.01)
    acc.history.append((0.5, 0.1, 1000))
    whole = RdpAccountant()
    whole.step(noise_multiplier=1.0, sample_rate=0.01, count=10)
    whole.step(noise_multiplier=0.5, sample_rate=0.1, count=1000)
    assert acc.get_epsilon(DELTA) == whole.get_epsilon(DELTA) > 100
    acc.history[-1] = (1.0, 0.01, 10000)
    assert acc.get_epsilon(DELTA) == _exact(1.0, 0.01, 10 + 10000)
    acc.history.append((0.0, 0.01, 1))
    assert acc.get_epsilon(DELTA) == math.inf
    acc.history.clear()
    assert acc.get_epsilon(DELTA) == 0.0
    acc.step(noise_multiplier=1.0, sample_rate=0.01)
    assert acc.get_epsilon(DELTA) == _exact(1.0, 0.01, 1)
    acc.history.append(("x", 0.01, 1))
    with pytest.raises(InvalidParameter, match="history"):
        acc.get_epsilon(DELTA)


@pytest.mark.parametrize("other", [dict(noise_multiplier=100.0), dict(sample_rate=1e-6)])
def test_checkpoint_with_another_rdp_record_of_as_many_steps_is_refused(other) -> None:
    """The history and the RDP record were compared by step count only: a record of 100 steps at
    z = 100 (digest removed: optional for DP-SGD) loaded beside a history of 100 steps at z = 1,
    and epsilon came out 0.0024 instead of 1.21."""
    acc = DptheoryAccountant()
    acc.history = [(1.0, 0.01, 100)]
    state = copy.deepcopy(dict(acc.state_dict()))
    del state["dptheory"]["digest"]
    swapped = RdpAccountant()
    swapped.step(**{"noise_multiplier": 1.0, "sample_rate": 0.01, **other}, count=100)
    state["dptheory"]["rdp"] = swapped.state_dict()
    with pytest.raises(InvalidParameter, match="different steps"):
        DptheoryAccountant().load_state_dict(state)
    del state["dptheory"]["rdp"]
    state["dptheory"]["rdp"] = copy.deepcopy(dict(acc.state_dict()))["dptheory"]["rdp"]
    restored = DptheoryAccountant()
    restored.load_state_dict(state)  # the true record, digest still removed: loads
    assert restored.get_epsilon(DELTA) == _exact(1.0, 0.01, 100)
