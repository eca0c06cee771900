"""Flower ``ServerApp`` and ``ClientApp`` running Clip-SGD / Clip21-SGD / Clip21-SGD2M.

The arithmetic is not re-implemented: each ClientApp wraps :class:`dptheory.optim.clip21.Client`
and the ServerApp wraps :class:`dptheory.optim.clip21.Server`, so that a Flower run and the
in-process :class:`~dptheory.optim.clip21.FederatedClipping` execute the same torch operations on
the same random draws (each client's generator is seeded from (seed, client index) and saved in
its Flower state between rounds).

Protocol of one round t (message type ``train``):

* server -> node: the iterate ``x^t`` (after ``x^t = x^{t-1} - gamma g^{t-1}`` for the Clip21
  family) and ``accepted-round``: the last round whose message from *this* node the server
  aggregated. The clipping level and noise multiplier are the client's own run config, never
  taken from the server's message.
* node: restores (v_i, g_i, generator) from ``context.state``; if its previous message was not
  aggregated (it arrived after the round's timeout), it first rolls (v_i, g_i) back to their
  values before that round, so that ``g = (1/n) sum_i g_i + noise`` keeps holding. It then computes
  ``c_i = clip_tau(.)``, updates its local state, adds ``omega_i ~ N(0, sigma^2 I)`` and replies
  with ``c_i + omega_i`` only (plus its index and how many messages it has sent).
* server: ``g <- g + (beta_hat / n) sum_{i in S_t} (c_i + omega_i)`` over the replies S_t it
  received (n = all clients: a missing client contributes a zero shift, exactly as if its g_i had
  not moved); Clip-SGD moves x by the mean of the received messages.

A node that drops out of a round (its ClientApp fails before computing, or its reply never comes)
sends nothing in that round, so that round costs it nothing in privacy: a client's local-DP
epsilon is accounted on the number of messages it actually sent. The generator is never rolled
back: a message that left is never re-drawn with the same noise.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from dptheory.optim.base import flatten, unflatten
from dptheory.optim.clip21 import Client, Server

#: Keys of the run configuration (``[tool.flwr.app.config]`` in deployment). Values are scalars.
CONFIG_KEYS = (
    "problem",
    "problem-options",  # JSON object of the problem's options (clients, d, dataset, x0)
    "rule",  # clip, clip21, clip21-2m
    "steps",
    "lr",
    "tau",
    "beta",
    "beta-hat",
    "noise-multiplier",
    "sample-rate",
    "seed",
    "num-clients",
    "result-path",  # where the ServerApp writes its JSON result
    "drop",  # test hook: "i:t,j:s" -- client i fails in round t before computing anything
    "round-timeout",  # seconds to wait for the replies of one round (0: wait for all)
    "node-wait",  # seconds to wait for all nodes to connect
    "poll-interval",  # seconds between the server's checks for replies in simulation (0: Flower's 0.1)
)
STATE_ARRAYS = "dptheory-clip21"
STATE_META = "dptheory-clip21-meta"


class ClientDroppedOut(RuntimeError):
    """Raised by a ClientApp told (by the ``drop`` test hook) to miss a round."""


def _config(context: Context, fixed: dict[str, Any] | None) -> dict[str, Any]:
    cfg = dict(context.run_config)
    if fixed:
        cfg.update(fixed)
    missing = [k for k in ("problem", "rule", "steps", "lr", "num-clients") if k not in cfg]
    if missing:
        raise ValueError(f"dptheory flower app: run config lacks {missing}")
    return cfg


def _problem(cfg: dict[str, Any]):
    from dptheory.problems import get_problem

    return get_problem(str(cfg["problem"]), **json.loads(str(cfg.get("problem-options", "{}"))))


def parse_drops(spec: str) -> set[tuple[int, int]]:
    """``"1:2,0:5"`` -> {(1, 2), (0, 5)}: (client index, round) pairs that fail."""
    out: set[tuple[int, int]] = set()
    for part in str(spec or "").split(","):
        part = part.strip()
        if part:
            i, t = part.split(":")
            out.add((int(i), int(t)))
    return out


def _batch_size(sample_rate: float, m: int) -> int | None:
    # as FederatedClipping: full local gradient at q = 1, else round(q m) local samples
    return None if sample_rate >= 1 else max(1, round(sample_rate * m))


def _tensor(record: ArrayRecord, key: str) -> torch.Tensor:
    return torch.from_numpy(np.array(record[key].numpy(), copy=True))


def _array(t: torch.Tensor) -> Array:
    return Array.from_numpy_ndarray(t.detach().cpu().numpy())


# ----------------------------------------------------------------------------------------------
# ClientApp
def make_client_app(fixed_config: dict[str, Any] | None = None) -> ClientApp:
    """A ClientApp; its settings come from the run config, overridden by ``fixed_config``
    (used by the simulation engine, whose ``run_simulation`` takes no run config)."""
    app = ClientApp()

    @app.train()
    def _train(msg: Message, context: Context) -> Message:
        return client_round(msg, context, _config(context, fixed_config))

    return app


def client_round(msg: Message, context: Context, cfg: dict[str, Any]) -> Message:
    """One round on node ``partition-id``: state in, one noisy clipped message out."""
    index = int(context.node_config["partition-id"])
    rnd = int(msg.content["cfg"]["round"])
    if (index, rnd) in parse_drops(str(cfg.get("drop", ""))):
        raise ClientDroppedOut(f"client {index} drops out of round {rnd}")
    prob = _problem(cfg)
    data = prob.client_data()[index]
    m = int(next(iter(data.values())).shape[0])
    client = Client(
        index,
        data,
        prob.loss_fn,
        rule=str(cfg["rule"]),
        tau=float(cfg["tau"]),
        beta=float(cfg["beta"]),
        beta_hat=float(cfg["beta-hat"]),
        batch_size=_batch_size(float(cfg["sample-rate"]), m),
        seed=int(cfg["seed"]),
        device=torch.device("cpu"),
    )
    meta = dict(context.state[STATE_META]) if STATE_META in context.state else {}
    last_sent_round, sent = int(meta.get("last-round", 0)), int(meta.get("sent", 0))
    if STATE_ARRAYS in context.state:
        saved = context.state[STATE_ARRAYS]
        client.generator.set_state(_tensor(saved, "generator").to(torch.uint8))
        accepted = int(msg.content["cfg"]["accepted-round"])
        keep = "" if accepted == last_sent_round else "-before"  # roll back an unaggregated round
        client.v, client.g = _tensor(saved, "v" + keep), _tensor(saved, "g" + keep)
    v_before, g_before = client.v, client.g
    x = _tensor(msg.content["x"], "x")
    params = unflatten(x, prob.x0)
    # the noise level is never taken from the server's message, and the node's operator can set
    # a floor (``--node-config "min-noise-multiplier=Z"``) that no run config can lower; more noise
    # than the run config says only lowers this client's true epsilon below the reported one
    z = max(float(cfg["noise-multiplier"]), float(context.node_config.get("min-noise-multiplier", 0.0)))
    sent_message = client.message(params, z * float(cfg["tau"]))
    if v_before is None:  # first message: the state before it is zero
        v_before, g_before = torch.zeros_like(client.v), torch.zeros_like(client.g)
    context.state[STATE_ARRAYS] = ArrayRecord(
        array_dict={
            "v": _array(client.v),
            "g": _array(client.g),
            "v-before": _array(v_before),
            "g-before": _array(g_before),
            "generator": _array(client.generator.get_state()),
        }
    )
    context.state[STATE_META] = ConfigRecord({"last-round": rnd, "sent": sent + 1})
    content = RecordDict(
        {
            "msg": ArrayRecord(array_dict={"c": _array(sent_message)}),
            "meta": ConfigRecord({"index": index, "round": rnd, "sent": sent + 1}),
        }
    )
    return Message(content=content, reply_to=msg)


# ----------------------------------------------------------------------------------------------
# ServerApp
def make_server_app(fixed_config: dict[str, Any] | None = None) -> ServerApp:
    """A ServerApp running ``steps`` rounds; writes its result JSON to ``result-path``."""
    app = ServerApp()

    @app.main()
    def _main(grid: Grid, context: Context) -> None:
        cfg = _config(context, fixed_config)
        result = server_loop(grid, cfg)
        path = str(cfg.get("result-path", ""))
        if path:
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(result, fh)
            os.replace(tmp, path)

    return app


def _wait_for_nodes(grid: Grid, n: int, wait_s: float) -> list[int]:
    deadline = time.monotonic() + wait_s
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= n:
            return nodes[:n]
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(nodes)} of {n} Flower nodes connected within {wait_s:g} s")
        time.sleep(0.2)


def _record_round(result_path: str, rnd: int) -> None:
    """The last finished round, replaced atomically (a reader never sees a partial number)."""
    if not result_path:
        return
    from dptheory.integrations.flower.launch import round_path

    path = round_path(result_path)
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(str(rnd))
    os.replace(path + ".tmp", path)


def server_loop(grid: Grid, cfg: dict[str, Any]) -> dict[str, Any]:
    """The server side of all rounds; returns the iterates and each client's message count."""
    prob = _problem(cfg)
    n = int(cfg["num-clients"])
    rule = str(cfg["rule"])
    p0 = {k: v.detach().clone() for k, v in prob.x0.items()}
    server = Server(p0, rule=rule, lr=float(cfg["lr"]), beta_hat=float(cfg["beta-hat"]), n=n)
    timeout = float(cfg.get("round-timeout", 0)) or None
    poll = float(cfg.get("poll-interval", 0) or 0)
    if poll > 0 and hasattr(grid, "pull_interval"):
        # the simulation engine's InMemoryGrid sleeps pull_interval (0.1 s) between checks for the
        # round's replies: 0.05 s of waiting per round on average, for a check of microseconds
        grid.pull_interval = poll
    nodes = _wait_for_nodes(grid, n, float(cfg.get("node-wait", 120)))
    accepted = dict.fromkeys(nodes, 0)  # node -> last round whose message was aggregated
    sent: dict[int, int] = {}  # client index -> messages it reports having sent
    participated: list[list[int]] = []
    xs = [flatten(server.params).tolist()]
    for rnd in range(1, int(cfg["steps"]) + 1):
        x = flatten(server.pre_round())
        out = []
        for node in nodes:
            content = RecordDict(
                {
                    "x": ArrayRecord(array_dict={"x": _array(x)}),
                    "cfg": ConfigRecord({"round": rnd, "accepted-round": accepted[node]}),
                }
            )
            out.append(Message(content=content, message_type="train", dst_node_id=node))
        received: dict[int, torch.Tensor] = {}
        for reply in grid.send_and_receive(out, timeout=timeout):
            if reply.has_error():
                continue  # the client dropped out before sending anything
            meta = reply.content["meta"]
            if int(meta["round"]) != rnd:
                continue
            index = int(meta["index"])
            sent[index] = max(sent.get(index, 0), int(meta["sent"]))
            received[index] = _tensor(reply.content["msg"], "c")
            accepted[reply.metadata.src_node_id] = rnd
        order = sorted(received)
        participated.append(order)
        if len(order) == n:
            server.aggregate([received[i] for i in order])  # the in-process code path, verbatim
        elif order:
            _aggregate_partial(server, [received[i] for i in order], n)
        # as FederatedClipping.params after step(): the Clip21 family moved x in pre_round
        xs.append(flatten(server.params).tolist())
        _record_round(str(cfg.get("result-path", "")), rnd)
    return {
        "x": xs,
        "g": server.g.tolist(),
        "sent": {str(i): c for i, c in sorted(sent.items())},
        "participated": participated,
        "clients": n,
    }


def _aggregate_partial(server: Server, messages: list[torch.Tensor], n: int) -> None:
    """Some clients missed the round: their shift counts as zero (sum over S_t, divided by n)."""
    total = torch.stack(messages).sum(dim=0) / n
    if server.rule == "clip":
        server._move(torch.stack(messages).mean(dim=0))  # Clip-SGD has no state to keep consistent
    elif server.rule == "clip21":
        server.g = server.g + total
    else:
        server.g = server.g + server.beta_hat * total
