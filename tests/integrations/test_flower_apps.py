"""The Flower apps' protocol, fast: the real ServerApp loop and ClientApp in one process.

``LoopbackGrid`` hands each ``Message`` of :func:`apps.server_loop` to the real ClientApp of its node,
with one Flower ``Context`` per node kept across rounds (as a SuperNode does), and turns a
ClientApp exception into an error reply (as a SuperNode does). No network, no Ray: the
Flower runtimes themselves are exercised by tests/integrations/test_flower_runtime.py (slow).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("flwr")
torch = pytest.importorskip("torch")

from flwr.app import Context, Error, Message, RecordDict  # noqa: E402

from dptheory.integrations.flower import apps  # noqa: E402
from dptheory.integrations.flower.backend import client_privacy, reference_iterates  # noqa: E402


@pytest.fixture(autouse=True)
def _task_identity():
    """Flower 1.41 stamps messages with the process's task identity, which a SuperLink/SuperNode
    sets; set it for this in-process loop and restore it afterwards."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 1, 1
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


class LoopbackGrid:
    """The two Grid methods server_loop uses; ``late`` = {(index, round)}: the client runs but its
    reply is lost (it arrives after the round's timeout)."""

    def __init__(self, cfg: dict, late: set[tuple[int, int]] | None = None, node_extra=None) -> None:
        self.cfg = cfg
        self.late = late or set()
        n = int(cfg["num-clients"])
        self.node_ids = [1000 + 7 * i for i in range(n)]
        self.contexts = {
            node: Context(
                run_id=1,
                node_id=node,
                node_config={"partition-id": i, "num-partitions": n, **(node_extra or {}).get(i, {})},
                state=RecordDict(),
                run_config={},
            )
            for i, node in enumerate(self.node_ids)
        }
        self.app = apps.make_client_app(cfg)

    def get_node_ids(self):
        return list(self.node_ids)

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for msg in messages:
            node = msg.metadata.dst_node_id
            ctx = self.contexts[node]
            index = int(ctx.node_config["partition-id"])
            rnd = int(msg.content["cfg"]["round"])
            try:
                reply = self.app(msg, ctx)
            except apps.ClientDroppedOut as exc:
                reply = Message(Error(code=0, reason=str(exc)), reply_to=msg)
            assert reply.metadata.src_node_id == node  # a reply comes from the node addressed
            if (index, rnd) not in self.late:
                replies.append(reply)
        return replies

    def client_g(self, index: int) -> torch.Tensor:
        ctx = self.contexts[self.node_ids[index]]
        return apps._tensor(ctx.state[apps.STATE_ARRAYS], "g")


def _cfg(rule: str, **kw) -> dict:
    cfg = {
        "problem": "stochastic-quadratic",
        "problem-options": json.dumps({"clients": 3, "d": 4}),
        "rule": rule,
        "steps": 6,
        "lr": 0.1,
        "tau": 0.7,
        "beta": 0.5 if rule == "clip21-2m" else 1.0,
        "beta-hat": 0.3 if rule == "clip21-2m" else 1.0,
        "noise-multiplier": 0.8,
        "sample-rate": 0.25,
        "seed": 3,
        "num-clients": 3,
        "drop": "",
    }
    cfg.update(kw)
    return cfg


@pytest.mark.parametrize("rule", ["clip", "clip21", "clip21-2m"])
def test_apps_reproduce_the_inprocess_simulator(rule: str) -> None:
    """Same seeds: the ServerApp's iterates equal FederatedClipping's (observed: bit for bit)."""
    cfg = _cfg(rule)
    got = apps.server_loop(LoopbackGrid(cfg), cfg)
    want = reference_iterates(cfg)
    assert len(got["x"]) == len(want) == cfg["steps"] + 1
    err = max(abs(a - b) for xa, xb in zip(got["x"], want, strict=True) for a, b in zip(xa, xb, strict=True))
    assert err <= 1e-9
    assert got["sent"] == {str(i): cfg["steps"] for i in range(3)}


def test_client_state_lives_in_the_flower_context_only() -> None:
    """The ClientApp object keeps nothing between rounds: wiping a node's Context changes the run."""
    cfg = _cfg("clip21-2m", steps=3)
    grid = LoopbackGrid(cfg)
    apps.server_loop(grid, cfg)
    state = grid.contexts[grid.node_ids[0]].state
    assert set(state[apps.STATE_ARRAYS].keys()) == {"v", "g", "v-before", "g-before", "generator"}
    assert int(state[apps.STATE_META]["sent"]) == 3


@pytest.mark.parametrize("how", ["error", "late"])
def test_dropout_keeps_server_state_consistent(how: str) -> None:
    """Without noise, the server's g must stay the mean of the clients' g_i when a client misses
    rounds, whether it fails before computing (error reply) or its reply arrives too late (the
    server says so next round and the client rolls its state back)."""
    missed = {(1, 2), (1, 3), (2, 5)}
    cfg = _cfg("clip21-2m", **{"noise-multiplier": 0.0, "steps": 6})
    if how == "error":
        cfg["drop"] = ",".join(f"{i}:{t}" for i, t in sorted(missed))
        grid = LoopbackGrid(cfg)
    else:
        grid = LoopbackGrid(cfg, late=missed)
    cfg_final = dict(cfg, steps=cfg["steps"] + 1)  # one more round lets the late client roll back
    out = apps.server_loop(grid, cfg_final if how == "late" else cfg)
    g_server = torch.tensor(out["g"], dtype=torch.float64)
    mean_gi = torch.stack([grid.client_g(i) for i in range(3)]).mean(dim=0)
    assert torch.allclose(g_server, mean_gi, rtol=0, atol=1e-12)
    assert out["participated"][1] == [0, 2]  # round 2 aggregated clients 0 and 2 only
    # and the run differs from one without dropouts (the test has teeth)
    full = apps.server_loop(LoopbackGrid(_cfg("clip21-2m", **{"noise-multiplier": 0.0})), cfg)
    assert full["x"][-1] != out["x"][cfg["steps"]]


def test_dropout_costs_no_privacy() -> None:
    """A client that fails before computing sends nothing: its epsilon is accounted on fewer
    messages (and equals the accountant's for that count); a late reply did leave, so it counts."""
    cfg = _cfg("clip21-2m", drop="1:2,1:4,2:6")
    out = apps.server_loop(LoopbackGrid(cfg), cfg)
    assert out["sent"] == {"0": 6, "1": 4, "2": 5}
    per = client_privacy(out["sent"], 3, cfg["noise-multiplier"], cfg["tau"], 1e-5)
    assert per[1].epsilon < per[2].epsilon < per[0].epsilon
    alone = client_privacy({"0": 4}, 3, cfg["noise-multiplier"], cfg["tau"], 1e-5)[0]
    assert per[1].epsilon == pytest.approx(alone.epsilon, rel=1e-12)
    late = apps.server_loop(LoopbackGrid(cfg | {"drop": ""}, late={(1, 2)}), cfg | {"drop": ""})
    assert late["sent"]["1"] == 6  # the lost message was sent: it is paid for


def test_nobody_sent_costs_nothing_and_no_noise_is_unbounded() -> None:
    per = client_privacy({"0": 0, "1": 2}, 2, 0.0, 1.0, 1e-5)
    assert per[0].epsilon == 0.0 and per[1].epsilon == float("inf")


def test_node_noise_floor_beats_the_run_config() -> None:
    """A SuperNode's ``min-noise-multiplier`` adds noise even when the run asks for none."""
    cfg = _cfg("clip21-2m", **{"noise-multiplier": 0.0, "steps": 3})
    plain = LoopbackGrid(cfg)
    out_plain = apps.server_loop(plain, cfg)
    floored = LoopbackGrid(cfg, node_extra={0: {"min-noise-multiplier": 1.0}})
    out_floor = apps.server_loop(floored, cfg)
    mean_gi = torch.stack([floored.client_g(i) for i in range(3)]).mean(dim=0)
    g = torch.tensor(out_floor["g"], dtype=torch.float64)
    assert not torch.allclose(g, mean_gi, atol=1e-6)  # the server's g now carries client 0's noise
    assert out_plain["x"][1] == out_floor["x"][1] and out_plain["x"][-1] != out_floor["x"][-1]
