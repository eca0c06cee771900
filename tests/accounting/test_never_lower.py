"""Issue 18 section 1: nothing a user passes or restores may lower a reported epsilon.

Each test is one reproduced way to get an epsilon below the truth (or a count silently changed)
and checks that it is now refused, or rounded to the safe side, with one typed error.
"""

from __future__ import annotations

import copy
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting import validate
from accounting.accountant import RdpAccountant
from accounting.errors import InvalidParameter
from accounting.events import RdpCurveEvent, SelfComposedEvent, event_from_dict
from accounting.rdp import RdpCurve
from dptheory import api

DELTA = 1e-5


def _busy() -> RdpAccountant:
    a = RdpAccountant()
    a.step(noise_multiplier=1, sample_rate=0.1, count=100)
    return a


# ---------------------------------------------------------------- negative or NaN RDP curves
def test_negative_curve_is_refused_by_compose():
    a = _busy()
    before = a.get_epsilon(DELTA)
    assert before == pytest.approx(7.90, abs=0.01)  # issue 18's case A
    with pytest.raises(InvalidParameter) as info:
        a.compose(RdpCurve(a.orders, -100 * np.ones(a.orders.size)))  # case B gave eps = 0.0
    assert info.value.option == "curve" and "lower epsilon" in info.value.message
    assert a.get_epsilon(DELTA) == before
    # and the refused curve is not in the checkpoint either
    assert RdpAccountant.from_state_dict(a.state_dict()).get_epsilon(DELTA) == before


@settings(max_examples=40, deadline=None)
@given(
    where=st.integers(0, 10**6),
    bad=st.one_of(st.floats(max_value=-1e-300, allow_infinity=False), st.just(math.nan)),
    count=st.integers(1, 5),
    wrap=st.sampled_from(["curve", "event", "self_composed", "foreign"]),
)
def test_any_negative_or_nan_entry_is_refused_wherever_it_enters(where, bad, count, wrap):
    a = _busy()
    before = a.get_epsilon(DELTA)
    rdp = np.full(a.orders.size, 0.25)
    rdp[where % rdp.size] = bad
    curve = RdpCurve(a.orders, rdp)

    class Foreign:
        def rdp(self, orders):
            return curve

    with pytest.raises(InvalidParameter):
        if wrap == "curve":
            a.compose(curve, count)
        elif wrap == "event":
            a.compose(RdpCurveEvent(curve), count)
        elif wrap == "self_composed":
            a.compose(SelfComposedEvent(Foreign(), count))
        else:
            a.compose(Foreign(), count)
    assert a.get_epsilon(DELTA) == before


def test_negative_curve_in_a_restored_state_is_refused():
    a = _busy()
    state = a.state_dict()
    bad = copy.deepcopy(state)
    bad["history"].append(
        {"kind": "rdp_curve", "label": "x",
         "curve": {"orders": state["orders"], "rdp": [-100.0] * len(state["orders"]), "dropped": []}}
    )  # fmt: skip
    bad["total"]["rdp"] = [-100.0] * len(state["orders"])
    with pytest.raises(InvalidParameter) as info:
        RdpAccountant.from_state_dict(bad)
    assert info.value.option == "state"
    nan_total = copy.deepcopy(state)
    nan_total["total"]["rdp"] = ["nan"] * len(state["orders"])
    with pytest.raises(InvalidParameter):
        RdpAccountant.from_state_dict(nan_total)


def test_malformed_states_raise_one_typed_error():
    """KeyError, IndexError, TypeError and RecursionError used to leak out of a restore."""
    state = _busy().state_dict()
    cases = []
    for key in set(state) - {"evaluation"}:  # without it a state reads as version 1 (exact, "auto")
        s = copy.deepcopy(state)
        del s[key]
        cases.append(s)
    s = copy.deepcopy(state)
    s["history"][0] = {"kind": "self_composed"}  # KeyError
    cases.append(s)
    s = copy.deepcopy(state)
    s["total"]["dropped"] = [[1.5]]  # IndexError / ValueError
    cases.append(s)
    s = copy.deepcopy(state)
    s["history"] = 3  # TypeError
    cases.append(s)
    deep = {"kind": "gaussian", "noise_multiplier": 1.0, "sensitivity": 1.0}
    for _ in range(5000):  # RecursionError
        deep = {"kind": "self_composed", "event": deep, "count": 1}
    s = copy.deepcopy(state)
    s["history"].append(deep)
    cases.append(s)
    cases += [None, [], "state", {"format": "x"}]
    a = _busy()
    before = a.get_epsilon(DELTA)
    for bad in cases:
        with pytest.raises(InvalidParameter) as info:
            a.load_state_dict(bad)
        assert info.value.option == "state", bad
        assert a.get_epsilon(DELTA) == before  # a refused restore changes nothing
    with pytest.raises(InvalidParameter):
        event_from_dict(deep)


# --------------------------------------------------------------------- counts are never cut
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 2**53))
def test_integer_counts_are_exact_up_to_2_53(n):
    assert validate.positive_int("steps", n) == n


@settings(max_examples=60, deadline=None)
@given(st.integers(2**53 + 1, 2**80))
def test_counts_above_2_53_are_refused_not_rounded(n):
    with pytest.raises(InvalidParameter, match="2\\*\\*53"):
        validate.positive_int("steps", n)
    with pytest.raises(InvalidParameter):  # a float this large may already be rounded
        validate.positive_int("steps", float(n))


@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 1e6).filter(lambda x: x != math.floor(x)))
def test_non_integral_steps_are_refused_by_the_api(steps):
    with pytest.raises(InvalidParameter) as info:
        api.epsilon(noise_multiplier=1.0, delta=DELTA, algo="dpsgd", sample_rate=0.01, steps=steps)
    assert info.value.option == "steps"


@settings(max_examples=20, deadline=None)
@given(epochs=st.floats(0.05, 20.0), batches=st.integers(1, 500))
def test_epochs_are_rounded_up_to_whole_steps(epochs, batches):
    """steps = ceil(E / q) (API) and ceil(E x len(loader)) (Opacus engine): never fewer steps."""
    q = 1.0 / batches
    r = api.epsilon(noise_multiplier=2.0, delta=DELTA, algo="dpsgd", sample_rate=q, epochs=epochs)
    assert r.steps >= epochs * batches * (1 - 1e-9)
    assert r.steps - 1 < epochs * batches
    from dptheory.integrations.opacus.engine import _steps_of

    t = _steps_of(epochs, None, batches)
    assert t >= epochs * batches * (1 - 1e-9) and t - 1 < epochs * batches


def test_opacus_engine_does_not_truncate_epochs_or_steps():
    from dptheory.integrations.opacus.engine import _steps_of

    assert _steps_of(2.7, None, 10) == 27  # was int(2.7) * 10 = 20
    assert _steps_of(3, None, 10) == 30
    with pytest.raises(InvalidParameter) as info:
        _steps_of(None, 10.9, 10)  # was int(10.9) = 10
    assert info.value.option == "steps"
    with pytest.raises(InvalidParameter):
        _steps_of(None, True, 10)


def test_make_private_with_epsilon_calibrates_for_the_rounded_up_epochs():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    from dptheory.integrations.opacus import DptheoryPrivacyEngine

    x = torch.randn(40, 3, dtype=torch.float64)
    y = torch.randint(0, 2, (40,))
    model = torch.nn.Linear(3, 2).double()
    engine = DptheoryPrivacyEngine()
    with warnings.catch_warnings():  # Opacus warns about secure mode
        warnings.simplefilter("ignore")
        _, opt, _ = engine.make_private_with_epsilon(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=DataLoader(TensorDataset(x, y), batch_size=10),
            target_epsilon=2.0, target_delta=DELTA, epochs=2.7, max_grad_norm=1.0,
        )  # fmt: skip
    assert opt.privacy_report.steps == 11  # ceil(2.7 x 4 batches), not 2 x 4
    want = api.calibrate(eps=2.0, delta=DELTA, algo="dpsgd", sample_rate=0.25, steps=11).noise_multiplier
    assert opt.noise_multiplier == pytest.approx(want, rel=1e-5)


def test_dicesgd_optimizer_refuses_a_fractional_dataset_size():
    torch = pytest.importorskip("torch")
    from dptheory.integrations.opacus.optimizers import DiceSGDOptimizer

    sgd = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    for bad, option in (
        (200.9, "dataset_size"),
        (0, "dataset_size"),
        (True, "dataset_size"),
        (2.0, "sample_rate"),
    ):
        with pytest.raises(InvalidParameter) as info:
            DiceSGDOptimizer(sgd, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=10,
                             sample_rate=0.05 if option != "sample_rate" else bad,
                             dataset_size=bad if option == "dataset_size" else 200)  # fmt: skip
        assert info.value.option == option


def test_cli_steps_beyond_2_53_is_refused_not_rounded():
    """``--steps 9007199254740993`` used to become 2**53 silently."""
    base = [
        "epsilon",
        "--algo",
        "dpsgd",
        "--noise-multiplier",
        "1",
        "--delta",
        "1e-5",
        "--sample-rate",
        "0.01",
    ]
    for steps in ("9007199254740993", "9007199254740993.0", "1e300"):
        proc = subprocess.run(
            [sys.executable, "-m", "dptheory.cli.main", *base, "--steps", steps],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "--steps" in lines[0] and "2**53" in lines[0], lines


# ------------------------------------------------------------------ Opacus checkpoints
def test_opacus_zero_noise_history_means_inf_whatever_the_flag_says():
    pytest.importorskip("opacus")
    from dptheory.integrations.opacus.accountant import DptheoryAccountant

    acc = DptheoryAccountant()
    for _ in range(100):
        acc.step(noise_multiplier=1.0, sample_rate=0.1)
    acc.step(noise_multiplier=0.0, sample_rate=0.1)
    assert acc.get_epsilon(DELTA) == math.inf
    for edit in ("delete", "false"):
        sd = copy.deepcopy(dict(acc.state_dict()))
        with pytest.raises(InvalidParameter, match="digest"):  # the edit breaks the digest ...
            DptheoryAccountant().load_state_dict({**sd, "dptheory": {**sd["dptheory"], "nonprivate": False}})
        del sd["dptheory"]["digest"]  # ... and without one (an older checkpoint) the history decides
        if edit == "delete":
            del sd["dptheory"]["nonprivate"]  # used to give 7.90
        else:
            sd["dptheory"]["nonprivate"] = False
        restored = DptheoryAccountant()
        restored.load_state_dict(sd)
        assert restored.get_epsilon(DELTA) == math.inf


def _dice_run(steps: int):
    from dptheory.integrations.opacus.accountant import DptheoryAccountant

    mech = {"algo": "dicesgd", "sample_rate": 0.01, "dataset_size": 10000, "batch_size": 100.0,
            "c1": 1.0, "c2": 1.0, "grad_bound": None}  # fmt: skip
    acc = DptheoryAccountant()
    for _ in range(steps):
        acc.step_certified(mech, 1.0)
    return acc


def test_opacus_certified_steps_cannot_be_edited_alone():
    """DiceSGD: certified_steps 100 -> 1 gave 2.68 -> 0.53; it is checked against the run's record."""
    pytest.importorskip("opacus")
    from dptheory.integrations.opacus.accountant import DptheoryAccountant

    acc = _dice_run(100)
    eps = acc.get_epsilon(DELTA)
    restored = DptheoryAccountant()
    restored.load_state_dict(copy.deepcopy(dict(acc.state_dict())))
    assert restored.get_epsilon(DELTA) == eps and len(restored) == 100
    edits = {
        "fewer steps": lambda own: own.update(certified_steps=[[1.0, 1]]),
        "more noise": lambda own: own.update(certified_steps=[[5.0, 100]]),
        "other algo": lambda own: own["certified"].update(algo="dpsgd"),
        "other rate": lambda own: own["certified"].update(sample_rate=0.001),
        "malformed run": lambda own: own.update(certified_steps=[[1.0]]),
        "count not integral": lambda own: own.update(certified_steps=[[1.0, 99.5]]),
        "no record": lambda own: own.update(rdp=RdpAccountant().state_dict()),
    }
    for name, edit in edits.items():
        sd = copy.deepcopy(dict(acc.state_dict()))
        edit(sd["dptheory"])
        target = DptheoryAccountant()
        with pytest.raises(InvalidParameter) as info:
            target.load_state_dict(sd)
        assert info.value.option == "state_dict", name
        assert len(target) == 0


def test_opacus_replayed_checkpoint_keeps_whole_counts():
    """An Opacus RDPAccountant history is replayed with its counts (int(2.7) was 2; 1e9 looped)."""
    pytest.importorskip("opacus")
    from dptheory.integrations.opacus.accountant import DptheoryAccountant

    acc = DptheoryAccountant()
    acc.load_state_dict({"history": [(1.0, 0.01, 10**9)], "mechanism": "rdp"})
    assert len(acc) == 10**9
    ref = RdpAccountant()
    ref.step(noise_multiplier=1.0, sample_rate=0.01, count=10**9)
    assert acc.get_epsilon(DELTA) == ref.get_epsilon(DELTA)
    for bad in ([(1.0, 0.01, 2.7)], [(1.0, 0.01)], [(-1.0, 0.01, 1)], [(1.0, 2.0, 1)], "x"):
        with pytest.raises(InvalidParameter):
            DptheoryAccountant().load_state_dict({"history": bad, "mechanism": "rdp"})


def test_deeply_nested_events_are_refused_not_a_recursion_error():
    from accounting.events import MAX_DEPTH, ComposedEvent, GaussianEvent

    for wrap in (lambda e: SelfComposedEvent(e, 1), lambda e: ComposedEvent((e,))):
        e = GaussianEvent(1.0)
        with pytest.raises(InvalidParameter) as info:
            for _ in range(5000):
                e = wrap(e)
        assert info.value.option == "event"
        a = RdpAccountant()
        a.compose(e)  # the deepest allowed one still composes, to the value of one Gaussian
        assert a.get_epsilon(DELTA) == pytest.approx(_one_gaussian(), rel=1e-12)
        assert e._depth == MAX_DEPTH


def _one_gaussian() -> float:
    from accounting.events import GaussianEvent

    a = RdpAccountant()
    a.compose(GaussianEvent(1.0))
    return a.get_epsilon(DELTA)


def test_opacus_accountant_checks_delta_on_every_path():
    pytest.importorskip("opacus")
    from dptheory.integrations.opacus.accountant import DptheoryAccountant

    empty, zero = DptheoryAccountant(), DptheoryAccountant()
    zero.step(noise_multiplier=0.0, sample_rate=0.1)
    for acc in (empty, zero):
        for bad in ("1e-5", True, 2.0, math.nan):
            with pytest.raises(InvalidParameter) as info:
                acc.get_epsilon(bad)
            assert info.value.option == "delta"


def test_opacus_step_refuses_text_and_bools():
    pytest.importorskip("opacus")
    from dptheory.integrations.opacus.accountant import DptheoryAccountant

    acc = DptheoryAccountant()
    for kwargs, key in (
        (dict(noise_multiplier="1", sample_rate=0.1), "noise_multiplier"),
        (dict(noise_multiplier=-1.0, sample_rate=0.1), "noise_multiplier"),
        (dict(noise_multiplier=1.0, sample_rate=True), "sample_rate"),
    ):
        with pytest.raises(InvalidParameter) as info:
            acc.step(**kwargs)
        assert info.value.option == key
    assert len(acc) == 0
