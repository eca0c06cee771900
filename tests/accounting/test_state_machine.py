"""Issue 18 section 4: a state machine over the stateful accountants.

Rules step, compose (good curves, and curves that would lower epsilon), save, tamper and
restore :class:`RdpAccountant` and the Opacus :class:`DptheoryAccountant`.  The invariant after
every rule: epsilon is never below the exact epsilon of the steps actually taken (the last
accepted state's), whatever was tampered, because a tampered restore is either refused (the
accountant keeps its state) or restores something at least as large.

"Exact" is an independent replay of the same steps on a fresh accountant with
``evaluation="exact"`` (every distinct step evaluated, no grid bound); ``RTOL`` allows for the
two adding the same terms in another order.  Tampering edits *one* part of a state: a state
edited consistently everywhere is indistinguishable from a genuine one without a signature
(docs/api.md, "Checkpoints"), so it is not a case the accountant can refuse.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from accounting.accountant import RdpAccountant
from accounting.errors import InvalidParameter
from accounting.events import GaussianEvent
from accounting.rdp import RdpCurve

ORDERS = np.array([1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0, 64.0])
DELTA = 1e-5
RTOL = 1e-12

RATES = st.sampled_from([0.01, 0.1, 0.5, 1.0])
NOISES = st.sampled_from([0.6, 1.0, 1.7, 4.0])
COUNTS = st.integers(1, 50)

#: One-part edits of an RdpAccountant state (each a function state -> None, editing in place).
TAMPERS = {
    "total scaled down": lambda s, k: s["total"].update(rdp=[_num(v) * 0.01 for v in s["total"]["rdp"]]),
    "total negative": lambda s, k: s["total"].update(rdp=[-100.0 for _ in s["total"]["rdp"]]),
    "total NaN": lambda s, k: s["total"].update(rdp=["nan" for _ in s["total"]["rdp"]]),
    "history dropped": lambda s, k: s.update(history=s["history"][: k % max(1, len(s["history"]))]),
    "count cut": lambda s, k: _cut_count(s, k),
    "count not integral": lambda s, k: _set_count(s, k, 2.5),
    "count bool": lambda s, k: _set_count(s, k, True),
    "orders shifted": lambda s, k: s.update(orders=[o * 2 for o in s["orders"]]),
    "orders too large": lambda s, k: s.update(orders=[1e9] * len(s["orders"])),
    "key deleted": lambda s, k: s.pop(sorted(s)[k % len(s)]),
    "negative curve event": lambda s, k: s["history"].append(
        {
            "kind": "rdp_curve",
            "label": "x",
            "curve": {"orders": s["orders"], "rdp": [-1.0] * len(s["orders"]), "dropped": []},
        }
    ),
    "deep nesting": lambda s, k: s["history"].append(_nested(200)),
    "history not a list": lambda s, k: s.update(history={"a": 1}),
}


def _num(v):
    return float(v)


def _cut_count(state, k):
    for e in state["history"]:
        if e.get("kind") == "self_composed" and e["count"] > 1:
            e["count"] = 1
            return


def _set_count(state, k, value):
    for e in state["history"]:
        if e.get("kind") == "self_composed":
            e["count"] = value
            return


def _nested(depth):
    e = {"kind": "gaussian", "noise_multiplier": 1.0, "sensitivity": 1.0}
    for _ in range(depth):
        e = {"kind": "self_composed", "event": e, "count": 1}
    return e


def exact_epsilon(steps: list[tuple[float, float, int]], gaussians: list[float]) -> float:
    ref = RdpAccountant(ORDERS, evaluation="exact")
    for q, z, n in steps:
        ref.step(noise_multiplier=z, sample_rate=q, count=n)
    for z in gaussians:
        ref.compose(GaussianEvent(z))
    return ref.get_epsilon(DELTA)


class RdpAccountantMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.acc = RdpAccountant(ORDERS)
        self.steps: list[tuple[float, float, int]] = []  # what was actually taken
        self.gaussians: list[float] = []
        self.saved: list[tuple[dict, list, list]] = []

    @rule(q=RATES, z=NOISES, n=COUNTS)
    def step(self, q, z, n):
        self.acc.step(noise_multiplier=z, sample_rate=q, count=n)
        self.steps.append((q, z, n))

    @rule(z=NOISES)
    def compose_gaussian(self, z):
        self.acc.compose(GaussianEvent(z))
        self.gaussians.append(z)

    @rule(value=st.sampled_from([-100.0, -1e-300, math.nan]), as_curve=st.booleans())
    def compose_lowering_curve(self, value, as_curve):
        before = self.acc.get_epsilon(DELTA)
        rdp = np.full(ORDERS.size, 0.5)
        rdp[len(rdp) // 2] = value
        curve = RdpCurve(ORDERS, rdp)

        class Foreign:  # any object with rdp(orders)
            def rdp(self, orders):
                return curve

        with pytest.raises(InvalidParameter):
            self.acc.compose(curve if as_curve else Foreign())
        assert self.acc.get_epsilon(DELTA) == before

    @rule()
    def save(self):
        self.saved.append((copy.deepcopy(self.acc.state_dict()), list(self.steps), list(self.gaussians)))

    @precondition(lambda self: self.saved)
    @rule(pick=st.integers(0, 10**6), how=st.sampled_from(sorted(TAMPERS)), k=st.integers(0, 10**6))
    def tamper_and_restore(self, pick, how, k):
        state, steps, gaussians = self.saved[pick % len(self.saved)]
        state = copy.deepcopy(state)
        TAMPERS[how](state, k)
        target = RdpAccountant(ORDERS)
        try:
            target.load_state_dict(state)
        except InvalidParameter as err:
            assert err.option == "state"
            return  # refused: this accountant keeps its own state
        # accepted: it now stands for the saved steps, and must not be below them
        self.acc, self.steps, self.gaussians = target, list(steps), list(gaussians)

    @precondition(lambda self: self.saved)
    @rule(pick=st.integers(0, 10**6))
    def restore(self, pick):
        state, steps, gaussians = self.saved[pick % len(self.saved)]
        self.acc = RdpAccountant.from_state_dict(copy.deepcopy(state))
        self.steps, self.gaussians = list(steps), list(gaussians)

    @invariant()
    def never_below_exact(self):
        eps = self.acc.get_epsilon(DELTA)
        want = exact_epsilon(self.steps, self.gaussians)
        assert eps >= want * (1 - RTOL), (eps, want)


class OpacusAccountantMachine(RuleBasedStateMachine):
    """The Opacus accountant: DP-SGD steps (z = 0 allowed: no privacy from then on)."""

    def __init__(self) -> None:
        super().__init__()
        from dptheory.integrations.opacus.accountant import DptheoryAccountant

        self.cls = DptheoryAccountant
        self.acc = DptheoryAccountant(ORDERS)
        self.steps: list[tuple[float, float, int]] = []
        self.nonprivate = False
        self.saved: list[tuple[dict, list, bool]] = []

    @rule(q=RATES, z=st.sampled_from([0.0, 0.6, 1.0, 4.0]), n=st.integers(1, 4))
    def step(self, q, z, n):
        for _ in range(n):
            self.acc.step(noise_multiplier=z, sample_rate=q)
        if z == 0:
            self.nonprivate = True
        else:
            self.steps.append((q, z, n))

    @rule()
    def save(self):
        self.saved.append((copy.deepcopy(dict(self.acc.state_dict())), list(self.steps), self.nonprivate))

    @precondition(lambda self: self.saved)
    @rule(
        pick=st.integers(0, 10**6),
        how=st.sampled_from(
            [
                "flag deleted",
                "flag false",
                "flag text",
                "count cut",
                "history dropped",
                "rdp total down",
                "rdp key deleted",
                "history entry short",
                "count huge",
                "mechanism rdp replay",
            ]
        ),
    )
    def tamper_and_restore(self, pick, how):
        state, steps, nonprivate = self.saved[pick % len(self.saved)]
        state = copy.deepcopy(state)
        own = state["dptheory"]
        hist = state["history"]
        if how == "flag deleted":
            own.pop("nonprivate")
        elif how == "flag false":
            own["nonprivate"] = False
        elif how == "flag text":
            own["nonprivate"] = "no"
        elif how == "count cut" and hist:
            hist[0] = (hist[0][0], hist[0][1], 1)
        elif how == "history dropped":
            state["history"] = hist[1:]
        elif how == "rdp total down":
            own["rdp"]["total"]["rdp"] = [0.0 for _ in own["rdp"]["total"]["rdp"]]
        elif how == "rdp key deleted":
            own["rdp"].pop("history")
        elif how == "history entry short" and hist:
            hist[0] = hist[0][:2]
        elif how == "count huge" and hist:
            hist[0] = (hist[0][0], hist[0][1], 2**53 + 1)
        elif how == "mechanism rdp replay":
            state["mechanism"] = "rdp"  # an Opacus checkpoint: replayed from its history
        target = self.cls(ORDERS)
        try:
            target.load_state_dict(state)
        except InvalidParameter as err:
            assert err.option == "state_dict"
            return
        self.acc, self.steps, self.nonprivate = target, list(steps), nonprivate

    @invariant()
    def never_below_exact(self):
        eps = self.acc.get_epsilon(DELTA)
        if self.nonprivate:
            assert eps == math.inf
            return
        want = exact_epsilon(self.steps, []) if self.steps else 0.0
        assert eps >= want * (1 - RTOL), (eps, want)


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# default run: a few seconds; the slow copies run many more programs (pytest -m slow)
TestRdpAccountantMachine = RdpAccountantMachine.TestCase
TestRdpAccountantMachine.settings = _settings(8, 10)
TestOpacusAccountantMachine = OpacusAccountantMachine.TestCase
TestOpacusAccountantMachine.settings = _settings(5, 10)


@pytest.mark.slow
class TestRdpAccountantMachineLong(RdpAccountantMachine.TestCase):
    settings = _settings(200, 25)


@pytest.mark.slow
class TestOpacusAccountantMachineLong(OpacusAccountantMachine.TestCase):
    settings = _settings(100, 25)
