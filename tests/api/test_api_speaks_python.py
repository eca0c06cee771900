"""Issue 18 section 3: the Python API speaks Python.

Every public function checks its arguments with the command line's validators, raises
:class:`InvalidParameter` naming the *Python* keyword, and returns a number (or a report) or
raises: strings, bools and containers are not numbers, and nothing becomes an 'n/a' string.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dptheory
from accounting.accountant import RdpAccountant
from accounting.algorithms.base import PrivacyParams
from accounting.errors import InvalidParameter
from dptheory import api

DELTA = 1e-5
BASE = dict(delta=DELTA, algo="dpsgd", sample_rate=0.01, steps=100)

#: (keyword, a good value) of the numeric keywords of dptheory.epsilon on dpsgd / d2p2sgd
NUMERIC = {
    "dpsgd": {"noise_multiplier": 1.0, "delta": DELTA, "sample_rate": 0.01, "steps": 100, "c1": 1.0},
    "dicesgd": {"noise_multiplier": 1.0, "delta": DELTA, "sample_rate": 0.01, "steps": 100, "c2": 1.0},
    "d2p2sgd": {"noise_multiplier": 2.0, "delta": DELTA, "batch_size": 100, "dataset_size": 10000,
                "epochs": 1, "projection_dim": 10, "model_dim": 20},
    "clip21sgd2m": {"noise_multiplier": 2.0, "delta": DELTA, "rounds": 10, "clients": 3, "tau": 1.0},
}  # fmt: skip

NOT_NUMBERS = st.one_of(
    st.just(True),
    st.just(False),
    st.just(np.bool_(True)),
    st.from_regex(r"[0-9]{1,3}(\.[0-9])?", fullmatch=True),  # '2', '1e-5'-like text
    st.just(b"1"),
    st.just({"a": 1}),
    st.just([1.0]),
    st.just(None).map(lambda _: object()),
)


@settings(max_examples=60, deadline=None)
@given(algo=st.sampled_from(sorted(NUMERIC)), data=st.data(), bad=NOT_NUMBERS)
def test_numbers_must_be_numbers(algo, data, bad):
    good = NUMERIC[algo]
    key = data.draw(st.sampled_from(sorted(good)))
    kwargs = dict(good, **{key: bad})
    with pytest.raises(InvalidParameter) as info:
        dptheory.epsilon(algo=algo, **kwargs)
    assert info.value.option == key, (key, info.value)
    assert "--" not in str(info.value)  # Python spelling in the message too


@settings(max_examples=30, deadline=None)
@given(bad=NOT_NUMBERS)
def test_eps_must_be_a_number(bad):
    with pytest.raises(InvalidParameter) as info:
        dptheory.calibrate(eps=bad, **BASE)
    assert info.value.option == "eps"


@pytest.mark.parametrize(
    "values", ["123", b"123", {1.0: 2, 3.0: 4}, {1.0, 2.0}, [1.0, "2"], [1.0, True], 3.0, [[1.0, 2.0]]]
)
def test_schedule_values_must_be_a_sequence_of_numbers(values):
    with pytest.raises(InvalidParameter) as info:
        dptheory.epsilon(noise_multiplier=1.0, delta=DELTA, algo="d2p2sgd", sample_rate=0.01,
                         schedule_values=values)  # fmt: skip
    assert info.value.option == "schedule_values"


def test_schedule_values_accepts_sequences_and_arrays():
    a = dptheory.epsilon(noise_multiplier=1.0, delta=DELTA, algo="d2psgd", sample_rate=0.01,
                         schedule_values=[1.0, 2.0, 3.0])  # fmt: skip
    b = dptheory.epsilon(noise_multiplier=1.0, delta=DELTA, algo="d2psgd", sample_rate=0.01,
                         schedule_values=np.array([1, 2, 3]))  # fmt: skip
    assert a.epsilon == b.epsilon and a.steps == 3


def test_c2_text_other_than_auto_is_refused():
    with pytest.raises(InvalidParameter) as info:
        dptheory.epsilon(
            noise_multiplier=1.0, delta=DELTA, algo="dicesgd", sample_rate=0.01, steps=10, c2="1.5"
        )
    assert info.value.option == "c2"


def test_counts_zero_are_typed_errors_not_zero_division():
    for kwargs, key in (
        (dict(algo="dpsgd", batch_size=10, dataset_size=0, steps=10), "dataset_size"),
        (dict(algo="d2p2sgd", sample_rate=0.01, steps=10, projection_dim=0), "projection_dim"),
        (dict(algo="d2p2sgd", sample_rate=0.01, steps=10, model_dim=0), "model_dim"),
        (dict(algo="clip21sgd2m", rounds=0), "rounds"),
    ):
        with pytest.raises(InvalidParameter) as info:
            dptheory.epsilon(noise_multiplier=1.0, delta=DELTA, **kwargs)
        assert info.value.option == key


# --------------------------------------------------------------------------------- compare
def test_compare_is_public_and_raises_on_bad_input():
    assert dptheory.compare is api.compare
    bad = [
        (dict(noise_multiplier=math.nan), "noise_multiplier"),
        (dict(noise_multiplier=-1.0), "noise_multiplier"),
        (dict(noise_multiplier=1.0, audit_samples=-1), "audit_samples"),
        (dict(noise_multiplier=1.0, audit_samples=2.5), "audit_samples"),
        (dict(noise_multiplier=1.0, audit_confidence=2), "audit_confidence"),
        (dict(noise_multiplier=1.0, audit_confidence="0.9"), "audit_confidence"),
        (dict(noise_multiplier=1.0, audit_seed=-1), "audit_seed"),
        (dict(noise_multiplier=1.0, audit_seed=1.5), "audit_seed"),
        (dict(eps=2.0, noise_multiplier=1.0), "eps"),  # z was silently ignored
        (dict(), "noise_multiplier"),
        (dict(noise_multiplier=1.0, steps=True), "steps"),
    ]
    for kwargs, key in bad:
        with pytest.raises(InvalidParameter) as info:
            dptheory.compare(**dict(BASE, **kwargs))
        assert info.value.option == key, (kwargs, info.value)


def test_compare_returns_reports_not_placeholders():
    out = dptheory.compare(noise_multiplier=1.0, audit_samples=200, **BASE)
    assert out["noise_multiplier"] == 1.0
    for key in ("claimed", "certified"):
        assert out[key].epsilon == dptheory.epsilon(noise_multiplier=1.0, mode=key, **BASE).epsilon
    assert out["audit"].epsilon_lower <= out["certified"].epsilon


# ------------------------------------------------------------------------------ accountant
@pytest.mark.parametrize(
    "orders", [[1e9], [2.0, 1e6 + 1], [1.0], [np.nan], "2,3", ["2", "3"], [True], {2.0: 1}]
)
def test_accountant_orders_respect_the_cap_and_types(orders):
    with pytest.raises(InvalidParameter) as info:
        RdpAccountant(orders=orders)
    assert info.value.option == "orders"


def test_accountant_methods_name_their_keywords():
    a = RdpAccountant()
    cases = [
        (lambda: a.get_epsilon("1e-5"), "delta"),
        (lambda: a.get_epsilon(True), "delta"),
        (lambda: a.step(noise_multiplier=1.0, sample_rate=0.1, count=True), "count"),
        (lambda: a.step(noise_multiplier=1.0, sample_rate=0.1, count=2.5), "count"),
        (lambda: a.step(noise_multiplier=1.0, sample_rate=0.1, count=2**53 + 1), "count"),
        (lambda: a.step(noise_multiplier="1", sample_rate=0.1), "noise_multiplier"),
        (lambda: a.step(noise_multiplier=1.0, sample_rate="0.1"), "sample_rate"),
    ]
    for call, key in cases:
        with pytest.raises(InvalidParameter) as info:
            call()
        assert info.value.option == key
    assert a.steps == 0


def test_audit_names_its_keywords():
    p = PrivacyParams(algo="dpsgd", noise_multiplier=1.0, delta=DELTA, sample_rate=0.01, steps=10)
    for kwargs, key in ((dict(samples="10"), "samples"), (dict(confidence=2), "confidence"),
                        (dict(seed=1.5), "seed")):  # fmt: skip
        with pytest.raises(InvalidParameter) as info:
            dptheory.audit(p, **kwargs)
        assert info.value.option == key


def test_the_command_line_keeps_its_spelling():
    """The same validators, called by the CLI, still name --options (one line, exit 2)."""
    proc = subprocess.run(
        [sys.executable, "-m", "dptheory.cli.main", "epsilon", "--algo", "dpsgd", "--noise-multiplier", "1",
         "--delta", "1e-5", "--sample-rate", "0.01", "--steps", "10.5"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "dptheory epsilon: error: --steps: must be an integer >= 1 (got 10.5)"
    ]


@pytest.mark.parametrize("orders", [["2", "3"], [2.0, True], {2.0: 1}, [1e9], [[2.0, 3.0]]])
def test_api_orders_are_numbers_within_the_cap(orders):
    with pytest.raises(InvalidParameter) as info:
        dptheory.epsilon(noise_multiplier=1.0, orders=orders, **BASE)
    assert info.value.option == "orders"


def test_no_untyped_exceptions_on_odd_values():
    """TypeError/ValueError/OverflowError leaked from clip21's steps and a non-path schedule_file."""
    cases = [
        (dict(algo="clip21sgd2m", rounds=10, steps=object()), "steps"),
        (dict(algo="clip21sgd2m", rounds=10, steps=math.nan), "steps"),
        (dict(algo="clip21sgd2m", rounds=10, steps=10.9), "steps"),  # was cut to 10 == rounds
        (dict(algo="dpsgd", sample_rate=0.01, steps=10, schedule_file=object()), "schedule_file"),
    ]
    for kwargs, key in cases:
        with pytest.raises(InvalidParameter) as info:
            dptheory.epsilon(noise_multiplier=1.0, delta=DELTA, **kwargs)
        assert info.value.option == key
