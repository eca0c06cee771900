"""Your own torch model and data on Flower: ClientApp / ServerApp factories for three algorithms.

* ``clip21sgd2m`` -- Clip21-SGD2M (Islamov et al., Alg. 3) with local DP: the client keeps its
  momentum ``v_i`` and shift ``g_i`` in ``Context.state`` and sends ``c_i = clip_tau(v_i - g_i)``;
  :class:`.mods.PrivacyLedgerMod` (``payload="message"``) adds ``N(0, (z tau)^2)`` and keeps the
  client's certified ledger. The server keeps ``x`` and ``g``: ``x -= lr g``,
  ``g += (beta_hat / n) sum_i (c_i + omega_i)``.
* ``clipsgd`` -- local DP-SGD (Clip-SGD): the client sends its minibatch gradient, the mod clips it
  to tau and adds noise; the server steps by the mean of the noisy messages.
* ``fedavg`` -- FedAvg with client-level central DP through Flower's own
  ``DifferentialPrivacyServerSideFixedClipping`` (update clipped to C on the server, Gaussian
  noise of std z C / m on the mean of the m sampled clients). :func:`central_dp_epsilon`
  accounts it with our accountant (the certified number, and the usual reading with the client
  sampling rate; see its docstring).

Run configuration keys (Flower's kebab-case): ``lr``, ``clipping-norm`` (tau / C), ``beta``,
``beta-hat``, ``batch-size``, ``local-steps`` and ``local-lr`` (FedAvg), ``seed``,
``noise-multiplier``, ``target-delta``, ``max-epsilon``, ``fraction-train`` (FedAvg).
Minibatch indices are drawn from (seed, client, round): data-independent coins.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Error, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from dptheory.integrations.flower.mods import PrivacyLedgerMod, client_id

ALGORITHMS = ("clip21sgd2m", "clipsgd", "fedavg")
STATE = "dptheory-own-model"
ModelFn = Callable[[], torch.nn.Module]
#: ``data_fn(partition_id, num_partitions) -> (inputs, labels)`` of that client
DataFn = Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]


def _check_algorithm(algorithm: str) -> str:
    if algorithm not in ALGORITHMS:
        from accounting.errors import InvalidParameter

        raise InvalidParameter("algorithm", f"must be one of {', '.join(ALGORITHMS)} (got {algorithm!r})")
    return algorithm


def _flat(tensors: Iterable[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


def _as_record(model: torch.nn.Module, flat: torch.Tensor | None = None) -> ArrayRecord:
    """The model's parameters (or a flat vector laid out like them) as an ArrayRecord."""
    sd = {k: v.detach().clone() for k, v in model.named_parameters()}
    if flat is not None:
        i = 0
        for k, v in sd.items():
            sd[k] = flat[i : i + v.numel()].reshape(v.shape).clone()
            i += v.numel()
    return ArrayRecord(sd)


def _load(model: torch.nn.Module, record: ArrayRecord) -> None:
    sd = record.to_torch_state_dict()
    with torch.no_grad():
        for k, p in model.named_parameters():
            p.copy_(sd[k])


def _record_flat(record: ArrayRecord) -> torch.Tensor:
    return _flat(torch.as_tensor(a.numpy()).double() for a in record.values())


# ----------------------------------------------------------------------------------------------
def make_client_app(
    model_fn: ModelFn,
    data_fn: DataFn,
    algorithm: str = "clip21sgd2m",
    *,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    mod_seed: int | None = None,
) -> ClientApp:
    """A ClientApp training ``model_fn()`` on ``data_fn(partition-id, num-partitions)``.

    The local-DP algorithms come with :class:`PrivacyLedgerMod` already in ``mods`` (noise and
    budget from the run config); ``fedavg`` has none (its DP is the server's)."""
    _check_algorithm(algorithm)
    loss = loss_fn or torch.nn.functional.cross_entropy
    mods = [] if algorithm == "fedavg" else [PrivacyLedgerMod(payload="message", seed=mod_seed)]
    app = ClientApp(mods=mods)
    cache: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}

    @app.train()
    def _train(msg: Message, context: Context) -> Message:
        rc = context.run_config
        pid, n = client_id(context), int(context.node_config.get("num-partitions", 1))
        if (pid, n) not in cache:
            cache[(pid, n)] = data_fn(pid, n)
        xs, ys = cache[(pid, n)]
        rnd = int(msg.content["config"].get("server-round", 0))
        gen = torch.Generator().manual_seed(int(rc.get("seed", 0)) * 1_000_003 + pid * 10_007 + rnd)
        model = model_fn().double()
        _load(model, msg.content["arrays"])
        bs = min(int(rc.get("batch-size", 32)), len(ys))

        def grad() -> torch.Tensor:
            idx = torch.randperm(len(ys), generator=gen)[:bs]
            model.zero_grad()
            loss(model(xs[idx].double()), ys[idx]).backward()
            return _flat(p.grad for p in model.parameters()).detach()

        if algorithm == "fedavg":
            opt = torch.optim.SGD(model.parameters(), lr=float(rc.get("local-lr", 0.1)))
            for _ in range(int(rc.get("local-steps", 5))):
                grad()
                opt.step()
            content = RecordDict({"arrays": _as_record(model), "metrics": MetricRecord({"num-examples": 1})})
            return Message(content=content, reply_to=msg)
        g = grad()
        if algorithm == "clip21sgd2m":
            tau = float(rc["clipping-norm"])
            beta, beta_hat = float(rc.get("beta", 0.1)), float(rc.get("beta-hat", 0.1))
            if STATE in context.state:  # the client's hidden state: kept, never sent
                st = context.state[STATE]
                v, gi = (torch.as_tensor(st[k].numpy().copy()).double() for k in ("v", "g"))
            else:
                v, gi = torch.zeros_like(g), torch.zeros_like(g)
            v = (1 - beta) * v + beta * g
            d = v - gi
            nd = float(d.norm())
            c = d * min(1.0, tau / nd) if nd > 0 else d
            gi = gi + beta_hat * c
            context.state[STATE] = ArrayRecord(
                {"v": Array.from_numpy_ndarray(v.numpy()), "g": Array.from_numpy_ndarray(gi.numpy())}
            )
            g = c
        # num-examples is public (1 for all): the mod's ledger covers the arrays only
        content = RecordDict({"arrays": _as_record(model, g), "metrics": MetricRecord({"num-examples": 1})})
        return Message(content=content, reply_to=msg)

    return app


# ----------------------------------------------------------------------------------------------
def _train_messages(grid: Any, arrays: ArrayRecord, rnd: int) -> list[Message]:
    out = []
    for node in grid.get_node_ids():
        content = RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": rnd})})
        out.append(Message(content=content, message_type="train", dst_node_id=node))
    return out


def server_train(
    grid: Any,
    model_fn: ModelFn,
    algorithm: str,
    run_config: dict[str, Any],
    *,
    evaluate_fn: Callable[[torch.nn.Module], dict[str, float]] | None = None,
) -> dict[str, Any]:
    """All rounds on the server side; returns final metrics, the ledger collector's per-client
    epsilon (local DP) or the participation counts (FedAvg), and the stopped clients."""
    from dptheory.integrations.flower.mods import LedgerCollector

    _check_algorithm(algorithm)
    rounds = int(run_config["num-server-rounds"])
    torch.manual_seed(int(run_config.get("seed", 0)))
    model = model_fn().double()
    if algorithm == "fedavg":
        return _server_fedavg(grid, model, run_config, rounds, evaluate_fn)
    lr = float(run_config["lr"])
    beta_hat = float(run_config.get("beta-hat", 0.1))
    x = _flat(p.detach() for p in model.parameters())
    g = torch.zeros_like(x)
    n = len(list(grid.get_node_ids()))
    collector, stopped = LedgerCollector(), {}
    for rnd in range(1, rounds + 1):
        if algorithm == "clip21sgd2m":
            x = x - lr * g
        replies = grid.send_and_receive(_train_messages(grid, _as_record(model, x), rnd))
        collector.update(replies)
        msgs = []
        for r in replies:
            if r.has_error():
                stopped.setdefault(int(r.metadata.src_node_id), (rnd, r.error.reason))
            else:
                msgs.append(_record_flat(r.content["arrays"]))
        if algorithm == "clip21sgd2m" and msgs:
            g = g + beta_hat * torch.stack(msgs).sum(0) / n  # a missing client: zero shift
        elif msgs:
            x = x - lr * torch.stack(msgs).mean(0)
    with torch.no_grad():
        _load(model, _as_record(model, x))
    return {
        "metrics": evaluate_fn(model) if evaluate_fn else {},
        "clients": collector.to_json(),
        "stopped": [{"node": k, "round": v[0], "reason": v[1]} for k, v in sorted(stopped.items())],
    }


def make_server_app(
    model_fn: ModelFn,
    algorithm: str = "clip21sgd2m",
    *,
    evaluate_fn: Callable[[torch.nn.Module], dict[str, float]] | None = None,
    result_path: str | None = None,
) -> Any:
    """A ServerApp running :func:`server_train` with the run config (``num-server-rounds`` etc.);
    the result (metrics, each client's certified epsilon) is logged and, with ``result_path``,
    written there as JSON."""
    import json
    import logging

    from flwr.serverapp import Grid, ServerApp

    _check_algorithm(algorithm)
    app = ServerApp()

    @app.main()
    def _main(grid: Grid, context: Context) -> None:
        out = server_train(grid, model_fn, algorithm, dict(context.run_config), evaluate_fn=evaluate_fn)
        logging.getLogger("dptheory.flower").info("dptheory own-model result: %s", json.dumps(out))
        if result_path:
            with open(result_path, "w", encoding="utf-8") as fh:
                json.dump(out, fh)

    return app


class _CountingGrid:
    """Counts the train messages each node receives (its participation) and passes them on."""

    def __init__(self, grid: Any) -> None:
        self.grid, self.count = grid, {}

    def get_node_ids(self):
        return self.grid.get_node_ids()

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        for m in messages:
            if m.metadata.message_type == "train":
                self.count[m.metadata.dst_node_id] = self.count.get(m.metadata.dst_node_id, 0) + 1
        return self.grid.send_and_receive(messages, timeout=timeout)


def _server_fedavg(grid, model, rc, rounds, evaluate_fn) -> dict[str, Any]:
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

    n = len(list(grid.get_node_ids()))
    frac = float(rc.get("fraction-train", 1.0))
    m = max(1, int(n * frac))
    strategy = FedAvg(fraction_train=frac, fraction_evaluate=0.0, min_train_nodes=m, min_available_nodes=n)
    z = float(rc.get("noise-multiplier", 0.0))
    if z > 0:
        strategy = DifferentialPrivacyServerSideFixedClipping(
            strategy, noise_multiplier=z, clipping_norm=float(rc["clipping-norm"]), num_sampled_clients=m
        )
    counting = _CountingGrid(grid)
    result = strategy.start(grid=counting, initial_arrays=_as_record(model), num_rounds=rounds)
    _load(model, result.arrays)
    participation = sorted(counting.count.values())
    out: dict[str, Any] = {
        "metrics": evaluate_fn(model) if evaluate_fn else {},
        "sampled": m,
        "clients_total": n,
    }
    out["participation"] = {"min": participation[0], "max": participation[-1]} if participation else {}
    if z > 0:
        out["privacy"] = central_dp_epsilon(
            z, float(rc.get("target-delta", 1e-5)), m, n, rounds, max(participation, default=0)
        )
    return out


def central_dp_epsilon(z: float, delta: float, sampled: int, clients: int, rounds: int, most: int) -> dict:
    """Client-level epsilon of FedAvg with Flower's server-side fixed clipping (noise z C / m on
    the mean of m clipped updates, i.e. ``N(0, (z C)^2)`` on their sum).

    certified
        Replace-one adjacency (one client's data replaced by anything): the sum moves by at most
        2C, so each round a client is sampled in is a Gaussian mechanism of sensitivity 2 (units
        C) and multiplier z; a round it is not sampled in does not use its data. No amplification
        is claimed: Flower samples a fixed number m of clients, and the server that samples them
        sees who is in. Composition over the ``most`` rounds the most-sampled client took part in
        (the same accountant as the local-DP ledger).
    sampled reading (not certified)
        What DP-FedAvg papers report: ``dptheory epsilon --algo dpsgd`` with the client sampling
        rate q = m / N for ``rounds`` steps (Poisson sampling, add/remove, sensitivity C). It
        assumes Poisson client sampling, which Flower's ``FedAvg`` does not do.
    """
    from dptheory import api
    from dptheory.integrations.flower.ledger import LocalDpLedger

    cert = LocalDpLedger({z: most}).epsilon(delta) if most else 0.0
    q = sampled / clients
    reading = api.epsilon(
        algo="dpsgd", noise_multiplier=z, delta=delta, sample_rate=q, steps=rounds, mode="certified"
    )
    return {
        "epsilon": cert,
        "label": "certified (replace-one, no amplification)",
        "delta": delta,
        "rounds_participated": most,
        "sample_rate": q,
        "epsilon_poisson_reading": float(reading.epsilon),
    }


# ----------------------------------------------------------------------------------------------
class InProcessGrid:
    """Flower's Grid interface (the two methods strategies and :func:`server_train` use) served
    by a ClientApp in this process: one ``Context`` per node kept across rounds, as a SuperNode
    keeps it; an exception in the ClientApp becomes an error reply, as on a SuperNode. No network,
    no extra process: for experiments and tests where Ray (Flower's simulation engine) is absent."""

    def __init__(self, client_app: ClientApp, num_nodes: int, run_config: dict[str, Any]) -> None:
        self.app = client_app
        self.node_ids = [1000 + i for i in range(num_nodes)]
        self.contexts = {
            node: Context(
                run_id=1,
                node_id=node,
                node_config={"partition-id": i, "num-partitions": num_nodes},
                state=RecordDict(),
                run_config=dict(run_config),
            )
            for i, node in enumerate(self.node_ids)
        }

    def get_node_ids(self) -> list[int]:
        return list(self.node_ids)

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> list[Message]:
        replies = []
        for msg in messages:
            ctx = self.contexts[msg.metadata.dst_node_id]
            try:
                replies.append(self.app(msg, ctx))
            except Exception as exc:  # noqa: BLE001 -- a SuperNode turns it into an error reply
                replies.append(Message(Error(code=2, reason=f"{type(exc).__name__}: {exc}"), reply_to=msg))
        return replies


def run_in_process(
    model_fn: ModelFn,
    data_fn: DataFn,
    algorithm: str,
    run_config: dict[str, Any],
    num_clients: int,
    *,
    evaluate_fn: Callable[[torch.nn.Module], dict[str, float]] | None = None,
) -> dict[str, Any]:
    """The ClientApp of :func:`make_client_app` and :func:`server_train` on an :class:`InProcessGrid`.

    For experiments: the mod's noise is seeded from the run config's ``seed`` (reproducible runs);
    a deployment uses ``make_client_app`` without ``mod_seed`` (noise from the OS's entropy).
    Flower's FedAvg samples clients with Python's global ``random`` and its server-side DP wrapper
    draws noise from numpy's global generator; both are seeded from ``seed`` for the run and
    restored afterwards, so the same seed gives the same run and the caller's generators are left
    as they were."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    rng_states = (random.getstate(), np.random.get_state())
    seed = int(run_config.get("seed", 0))
    random.seed(seed)
    np.random.seed(seed % 2**32)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 1, 1
    try:
        app = make_client_app(model_fn, data_fn, algorithm, mod_seed=run_config.get("seed"))
        grid = InProcessGrid(app, num_clients, run_config)
        out = server_train(grid, model_fn, algorithm, run_config, evaluate_fn=evaluate_fn)
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved
        random.setstate(rng_states[0])
        np.random.set_state(rng_states[1])
    out["rounds"] = int(run_config["num-server-rounds"])
    out["algorithm"] = algorithm
    if math.isfinite(float(run_config.get("noise-multiplier", 0) or 0)):
        out["noise_multiplier"] = float(run_config.get("noise-multiplier", 0) or 0)
    return out
