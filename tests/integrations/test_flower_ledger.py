"""PrivacyLedgerMod and its ledger: the accountant's numbers, monotone, the budget stop, the clip and
noise it applies, and epsilon reaching the server from a plain NumPyClient app (all in process:
the ClientApp is called directly, as a SuperNode calls it; no network, no extra process)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.errors import InvalidParameter
from dptheory.integrations.flower.ledger import LocalDpLedger, compare_with_localdpmod


def _cli_epsilon(z: float, delta: float, rounds: int) -> float:
    out = subprocess.run(
        [sys.executable, "-m", "dptheory.cli.main", "epsilon", "--algo", "clip21sgd2m"]
        + ["--noise-multiplier", repr(z), "--delta", repr(delta), "--rounds", str(rounds), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return float(json.loads(out.stdout)["epsilon"])


def test_ledger_equals_the_cli_for_the_same_messages() -> None:
    ledger = LocalDpLedger()
    for _ in range(7):
        ledger.record(2.5)
    assert ledger.messages == 7
    assert ledger.epsilon(1e-5) == _cli_epsilon(2.5, 1e-5, 7)


def test_mixed_noise_composes_as_rdp_and_pld_is_below() -> None:
    """Two noise levels: RDP adds, so the mixed ledger lies between the two pure ledgers of the
    same length; the exact PLD route is never above RDP."""
    mixed = LocalDpLedger({1.5: 3, 4.0: 3})
    lo, hi = LocalDpLedger({4.0: 6}).epsilon(1e-6), LocalDpLedger({1.5: 6}).epsilon(1e-6)
    assert lo < mixed.epsilon(1e-6) < hi
    assert mixed.pld_epsilon(1e-6) <= mixed.rdp_epsilon(1e-6)
    # composition of Gaussians is a Gaussian with 1/z^2 = sum 1/z_t^2: same exact PLD epsilon
    z_eff = 1.0 / math.sqrt(3 / 1.5**2 + 3 / 4.0**2)
    assert mixed.pld_epsilon(1e-6) == pytest.approx(LocalDpLedger({z_eff: 1}).pld_epsilon(1e-6), rel=1e-7)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0.7, 1.0, 2.0, 5.0, 30.0]), min_size=1, max_size=12))
def test_ledger_never_decreases(zs: list[float]) -> None:
    ledger, last = LocalDpLedger(), 0.0
    for z in zs:
        ledger.record(z)
        eps = ledger.epsilon(1e-5)
        assert eps > last
        last = eps


def test_ledger_refuses_bad_values() -> None:
    with pytest.raises(InvalidParameter, match="noise_multiplier"):
        LocalDpLedger().record(0.0)
    with pytest.raises(InvalidParameter, match="delta"):
        LocalDpLedger({1.0: 1}).epsilon(1.5)
    assert LocalDpLedger().epsilon(1e-5) == 0.0


def test_tighter_than_localdpmod_composed_naively() -> None:
    """Same noise as LocalDpMod(eps0=0.5, delta0=1e-6, sensitivity 2C) for 20 rounds: naive
    composition says 10; the ledger certifies far less at the same total delta 2e-5."""
    row = compare_with_localdpmod(0.5, 1e-6, 20)
    assert row["localdpmod_epsilon"] == 10.0
    assert row["ledger_epsilon"] < 2.0 and row["ledger_epsilon_pld"] <= row["ledger_epsilon"]
    # and it is the accountant's number for that noise multiplier
    assert row["ledger_epsilon"] == _cli_epsilon(row["noise_multiplier"], row["delta_total"], 20)


# ----------------------------------------------------------------------------------------------
# the mod, on Flower messages
flwr = pytest.importorskip("flwr")
np = pytest.importorskip("numpy")

from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402

from dptheory.integrations.flower import LedgerCollector, PrivacyLedgerMod  # noqa: E402


@pytest.fixture(autouse=True)
def _task_identity():
    """Flower 1.41 stamps messages with the process's task identity (set by a SuperNode)."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 1, 1
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def _context(pid: int = 0, run_config=None, node_extra=None) -> Context:
    return Context(
        run_id=1,
        node_id=100 + pid,
        node_config={"partition-id": pid, **(node_extra or {})},
        state=RecordDict(),
        run_config=dict(run_config or {}),
    )


def _train_msg(x: np.ndarray, node: int = 100) -> Message:
    content = RecordDict({"arrays": ArrayRecord({"w": Array(x)})})
    return Message(content=content, message_type="train", dst_node_id=node)


def _inner(step: np.ndarray):
    calls = []

    def call_next(msg: Message, context: Context) -> Message:
        calls.append(1)
        w = msg.content["arrays"]["w"].numpy()
        content = RecordDict(
            {"arrays": ArrayRecord({"w": Array(w + step)}), "metrics": MetricRecord({"num-examples": 1})}
        )
        return Message(content=content, reply_to=msg)

    return call_next, calls


def test_budget_stop_fires_exactly_at_the_round_that_would_exceed() -> None:
    z, delta, budget = 3.0, 1e-5, 6.0
    first_over = next(k for k in range(1, 1000) if LocalDpLedger({z: k}).epsilon(delta) > budget)
    assert first_over > 2  # a budget that lets a few rounds through
    mod = PrivacyLedgerMod(
        clipping_norm=1.0, noise_multiplier=z, target_delta=delta, max_epsilon=budget, seed=0
    )
    ctx = _context()
    call_next, calls = _inner(np.ones(4))
    for rnd in range(1, first_over + 2):
        out = mod(_train_msg(np.zeros(4)), ctx, call_next)
        if rnd < first_over:
            assert not out.has_error()
            assert out.content["metrics"]["dp-messages"] == rnd
            assert out.content["metrics"]["dp-epsilon"] <= budget
        else:
            assert (
                out.has_error()
                and "stops sending" in out.error.reason
                and "max-epsilon 6" in out.error.reason
            )
    assert len(calls) == first_over - 1  # the ClientApp never ran for a refused round
    assert PrivacyLedgerMod.ledger(ctx).messages == first_over - 1


def test_mod_clips_the_update_and_adds_the_stated_noise() -> None:
    """The noise is exactly N(0, (zC)^2) on the clipped update (same seed, reproduced by hand);
    a small update passes unclipped, a large one is scaled to norm C."""
    c, z = 0.5, 2.0
    mod = PrivacyLedgerMod(clipping_norm=c, noise_multiplier=z, target_delta=1e-5, seed=7)
    x0 = np.arange(6.0)
    for step, expect_norm in ((np.full(6, 10.0), c), (np.full(6, 0.01), math.sqrt(6) * 0.01)):
        ctx = _context(pid=2)
        call_next, _ = _inner(step)
        out = mod(_train_msg(x0.copy(), node=102), ctx, call_next)
        sent = out.content["arrays"]["w"].numpy()
        noise = np.random.default_rng([7, 2, 0]).normal(0.0, z * c, size=6)
        clipped = sent - x0 - noise
        assert np.linalg.norm(clipped) == pytest.approx(expect_norm, rel=1e-9)
        assert np.allclose(clipped / np.linalg.norm(clipped), step / np.linalg.norm(step))


def test_run_config_can_add_privacy_never_remove_it() -> None:
    mod = PrivacyLedgerMod(clipping_norm=1.0, noise_multiplier=2.0, target_delta=1e-5, max_epsilon=50.0)
    ctx = _context(
        run_config={"noise-multiplier": 0.1, "max-epsilon": 100.0}, node_extra={"min-noise-multiplier": 3}
    )
    assert mod.settings(ctx) == (1.0, 3.0, 1e-5, 50.0)
    ctx = _context(run_config={"noise-multiplier": 5.0, "max-epsilon": 4.0, "clipping-norm": 0.3})
    assert mod.settings(ctx) == (0.3, 5.0, 1e-5, 4.0)
    with pytest.raises(InvalidParameter, match="noise_multiplier"):
        PrivacyLedgerMod(noise_multiplier=-1.0)
    # a missing setting is an error reply naming it, not a crash of the node
    out = PrivacyLedgerMod(clipping_norm=1.0)(_train_msg(np.zeros(2)), _context(), _inner(np.ones(2))[0])
    assert out.has_error() and "noise_multiplier" in out.error.reason


def test_run_config_delta_can_only_tighten() -> None:
    """A run config's target-delta of 0.5 used to replace the constructor's 1e-5: the budget check
    and the reported epsilon then held at delta 0.5 (3 messages under max-epsilon 8 instead of 0)."""
    mod = PrivacyLedgerMod(clipping_norm=1.0, noise_multiplier=1.0, target_delta=1e-5, max_epsilon=8.0)
    assert mod.settings(_context(run_config={"target-delta": 0.5}))[2] == 1e-5
    assert mod.settings(_context(run_config={"target-delta": 1e-9}))[2] == 1e-9
    only_run = PrivacyLedgerMod(clipping_norm=1.0, noise_multiplier=1.0)
    assert only_run.settings(_context(run_config={"target-delta": 1e-6}))[2] == 1e-6


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_non_finite_reply_is_not_sent(bad: float) -> None:
    """A NaN made the update's norm NaN and the clip factor min(1, C / nan) = 1: the other entries
    went out unclipped while the ledger charged a clipped message.  Now an error reply, nothing
    spent."""
    mod = PrivacyLedgerMod(clipping_norm=1.0, noise_multiplier=1e-6, target_delta=1e-5, seed=0)
    ctx = _context()
    call_next, calls = _inner(np.array([bad, 1000.0, 2000.0, 3000.0]))
    out = mod(_train_msg(np.zeros(4)), ctx, call_next)
    assert calls and out.has_error() and "NaN or inf" in out.error.reason
    assert not out.has_content()
    assert PrivacyLedgerMod.ledger(ctx).messages == 0


def test_numpyclient_app_reports_epsilon_to_the_server() -> None:
    """A plain NumPyClient ClientApp with the mod in one line: the server reads each client's
    epsilon out of the FitRes metrics (Flower's own conversion), and the collector agrees with
    the accountant."""
    from flwr.client import ClientApp, NumPyClient
    from flwr.common import FitIns, ndarrays_to_parameters
    from flwr.compat.common.recorddict_compat import fitins_to_recorddict, recorddict_to_fitres

    class Plain(NumPyClient):
        def fit(self, parameters, config):
            return [p + 1.0 for p in parameters], 10, {"loss": 0.25}

    z, delta = 2.0, 1e-6
    app = ClientApp(
        client_fn=lambda context: Plain().to_client(),
        mods=[PrivacyLedgerMod(clipping_norm=1.0, noise_multiplier=z, target_delta=delta)],
    )
    contexts = [_context(pid=i) for i in range(3)]
    collector = LedgerCollector()
    weights = [np.zeros(3), np.zeros((2, 2))]
    for rnd in range(1, 4):
        replies = []
        for i, ctx in enumerate(contexts):
            if (i, rnd) == (2, 2):
                continue  # client 2 not sampled in round 2: it sends nothing and pays nothing
            fitins = FitIns(ndarrays_to_parameters(weights), {})
            msg = Message(
                content=fitins_to_recorddict(fitins, True), message_type="train", dst_node_id=100 + i
            )
            replies.append(app(msg, ctx))
        for r in replies:
            fitres = recorddict_to_fitres(r.content, keep_input=False)
            assert fitres.metrics["loss"] == 0.25 and "dp-epsilon" in fitres.metrics
        collector.update(replies)
    got = {c["id"]: (c["messages"], c["epsilon"]) for c in collector.to_json()}
    want3, want2 = LocalDpLedger({z: 3}).epsilon(delta), LocalDpLedger({z: 2}).epsilon(delta)
    assert got == {0: (3, want3), 1: (3, want3), 2: (2, want2)}
    assert collector.max_epsilon() == want3


def test_collector_as_strategy_metrics_aggregation() -> None:
    collector = LedgerCollector()
    recs = [
        RecordDict(
            {
                "metrics": MetricRecord(
                    {
                        "num-examples": 1,
                        "loss": float(i),
                        "dp-epsilon": 1.0 + i,
                        "dp-messages": 1,
                        "dp-delta": 1e-5,
                        "dp-noise-multiplier": 2.0,
                        "dp-client": i,
                    }
                )
            }
        )
        for i in range(2)
    ]
    agg = collector.train_metrics_aggr_fn()(recs, "num-examples")
    assert agg["loss"] == pytest.approx(0.5) and agg["dp-epsilon-max"] == 2.0 and "dp-epsilon" not in agg
    assert [c["id"] for c in collector.to_json()] == [0, 1]
