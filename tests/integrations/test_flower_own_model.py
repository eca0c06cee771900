"""Own model and data on Flower (in process): the example's --quick --json contract, the ledger
reaching the server for Clip21-SGD2M, and FedAvg's central-DP accounting."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("flwr")
torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from dptheory.integrations.flower.ledger import LocalDpLedger  # noqa: E402
from dptheory.integrations.flower.own_model import central_dp_epsilon, run_in_process  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_example_quick_json(capsys) -> None:
    """The example's ``main(["--quick", "--json"])`` in this process: the test checks only what it
    prints, and a fresh process would spend most of its CPU importing torch, Flower and sklearn
    again.  The script's ``__main__`` line only passes ``main()``'s status to ``SystemExit``."""
    import importlib.util
    import logging

    path = os.path.join(ROOT, "examples", "flower_own_model.py")
    spec = importlib.util.spec_from_file_location("flower_own_model", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    flwr_log = logging.getLogger("flwr")
    level = flwr_log.level
    try:
        rc = example.main(["--quick", "--json"])
    finally:
        flwr_log.setLevel(level)  # main() quietens Flower's logger for the whole process
    out = capsys.readouterr().out
    assert rc == 0
    doc = json.loads(out)
    assert doc["rounds"] == 5 and 0.0 <= doc["accuracy"] <= 1.0
    assert [c["id"] for c in doc["clients"]] == list(range(10))
    want = LocalDpLedger({doc["noise_multiplier"]: 5}).epsilon(doc["delta"])
    assert all(c["messages"] == 5 and c["epsilon"] == want for c in doc["clients"])


def _data(pid: int, num: int):
    g = torch.Generator().manual_seed(pid)
    x = torch.randn(40, 5, generator=g, dtype=torch.float64)
    return x, (x[:, 0] > 0).long()


def _model():
    return torch.nn.Linear(5, 2)


def test_clip21_budget_stop_on_the_server_side() -> None:
    """With max-epsilon set, every client stops at the same round and the server learns why."""
    z, delta, budget = 2.0, 1e-5, 12.0
    k = next(k for k in range(1, 100) if LocalDpLedger({z: k}).epsilon(delta) > budget) - 1
    cfg = {
        "num-server-rounds": k + 2,
        "lr": 0.1,
        "clipping-norm": 1.0,
        "noise-multiplier": z,
        "target-delta": delta,
        "max-epsilon": budget,
        "seed": 1,
    }
    out = run_in_process(_model, _data, "clip21sgd2m", cfg, 3)
    assert [c["messages"] for c in out["clients"]] == [k] * 3
    assert [s["round"] for s in out["stopped"]] == [k + 1] * 3
    assert all("stops sending" in s["reason"] for s in out["stopped"])


def test_central_dp_accounting() -> None:
    got = central_dp_epsilon(1.0, 1e-5, sampled=5, clients=10, rounds=20, most=12)
    assert got["epsilon"] == LocalDpLedger({1.0: 12}).epsilon(1e-5)
    assert got["sample_rate"] == 0.5 and got["epsilon_poisson_reading"] < got["epsilon"]


def test_server_app_factory_reports_each_client(tmp_path) -> None:
    """make_server_app's ServerApp (called as Flower calls it: grid, context) runs the rounds on the
    ClientApp of make_client_app and writes each client's ledger epsilon."""
    from flwr.app import Context, RecordDict
    from flwr.supercore.task_identity import TaskIdentity

    from dptheory.integrations.flower.own_model import InProcessGrid, make_client_app, make_server_app

    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 1, 1
    try:
        rc = {
            "num-server-rounds": 2,
            "lr": 0.1,
            "clipping-norm": 1.0,
            "noise-multiplier": 2.0,
            "target-delta": 1e-5,
        }
        path = tmp_path / "result.json"
        app = make_server_app(_model, "clip21sgd2m", result_path=str(path))
        grid = InProcessGrid(make_client_app(_model, _data, "clip21sgd2m"), 3, rc)
        app(grid, Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config=rc))
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved
    clients = json.loads(path.read_text())["clients"]
    want = LocalDpLedger({2.0: 2}).epsilon(1e-5)
    assert [(c["id"], c["messages"], c["epsilon"]) for c in clients] == [(i, 2, want) for i in range(3)]


def test_central_dp_fedavg_is_reproducible_and_leaves_global_generators_alone() -> None:
    """Flower's FedAvg samples with ``random`` and its DP wrapper draws from ``np.random``: the
    in-process run seeds both from the run config and restores the caller's states."""
    import random

    import numpy as np

    from dptheory.integrations.flower.own_model import run_in_process

    def model_fn():
        return torch.nn.Linear(3, 2)

    def data_fn(pid: int, num: int):
        g = torch.Generator().manual_seed(pid)
        return torch.randn(8, 3, generator=g), torch.randint(0, 2, (8,), generator=g)

    rc = {"num-server-rounds": 3, "noise-multiplier": 1.0, "clipping-norm": 1.0, "fraction-train": 0.5,
          "seed": 7, "local-steps": 1, "batch-size": 4, "local-lr": 0.1, "target-delta": 1e-5}
    random.seed(123)
    np.random.seed(123)
    before = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(123)
    def weights(model):  # the noisy model itself: equal only if the server's noise was reproduced
        return {"w": float(sum(p.detach().double().sum() for p in model.parameters()))}

    runs = [run_in_process(model_fn, data_fn, "fedavg", rc, 4, evaluate_fn=weights) for _ in range(2)]
    assert (random.random(), np.random.random()) == before
    assert runs[0]["participation"] == runs[1]["participation"]
    assert runs[0]["privacy"] == runs[1]["privacy"]
    assert runs[0]["metrics"] == runs[1]["metrics"]
