"""The ``threads`` runtime's Backend (dptheory/integrations/flower/threads.py): Flower's own
``run_simulation`` with the ClientApps on worker threads gives the in-process simulator's iterates
bit for bit, turns a failing ClientApp into Flower's error reply, and leaves Flower as it was.
Run in this process (about a second each); the child-process runtime is in test_flower_runtime.py."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("flwr")


def _cfg(tmp_path, **kw) -> dict:
    cfg = {
        "problem": "stochastic-quadratic",
        "problem-options": json.dumps({"clients": 3, "d": 3}),
        "rule": "clip21-2m",
        "steps": 3,
        "lr": 0.1,
        "tau": 0.7,
        "beta": 0.5,
        "beta-hat": 0.3,
        "noise-multiplier": 0.8,
        "sample-rate": 0.25,
        "seed": 5,
        "num-clients": 3,
        "drop": "",
        "round-timeout": 0.0,
        "node-wait": 30.0,
        "result-path": str(tmp_path / "result.json"),
    }
    cfg.update(kw)
    return cfg


def _simulate(cfg: dict, workers: int = 1) -> dict:
    from flwr.server.superlink.fleet.vce import vce_api
    from flwr.simulation import run_simulation

    from dptheory.integrations.flower.apps import make_client_app, make_server_app
    from dptheory.integrations.flower.threads import ThreadBackend, thread_backend

    original = vce_api.run_api
    built: list[ThreadBackend] = []

    class Recording(ThreadBackend):
        def build(self, app_fn) -> None:
            built.append(self)
            super().build(app_fn)

    config = {"client_resources": {"num_workers": workers}}
    with thread_backend(config, backend_type=Recording) as name:
        assert vce_api.run_api is not original
        run_simulation(
            server_app=make_server_app(cfg),
            client_app=make_client_app(cfg),
            num_supernodes=int(cfg["num-clients"]),
            backend_name=name,
            backend_config=config,
        )
    assert vce_api.run_api is original  # the swap is undone
    assert len(built) == 1 and built[0].num_workers == workers  # the engine used our backend
    with open(cfg["result-path"], encoding="utf-8") as fh:
        return json.load(fh)


@pytest.mark.parametrize("workers", [1, 3])
def test_threads_equal_the_inprocess_simulator_bit_for_bit(tmp_path, workers: int) -> None:
    from dptheory.integrations.flower.backend import reference_iterates

    cfg = _cfg(tmp_path)
    out = _simulate(cfg, workers)
    assert out["x"] == reference_iterates(cfg)
    assert out["sent"] == {"0": 3, "1": 3, "2": 3}


def test_a_failing_clientapp_becomes_flowers_error_reply(tmp_path) -> None:
    """Client 1 fails in round 2: the server gets an error reply for it, aggregates the others,
    and the client is charged the 2 messages it sent."""
    out = _simulate(_cfg(tmp_path, drop="1:2"))
    assert out["participated"] == [[0, 1, 2], [0, 2], [0, 1, 2]]
    assert out["sent"] == {"0": 3, "1": 2, "2": 3}


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_thread_backend_refuses_bad_worker_counts(workers) -> None:
    from dptheory.integrations.flower.threads import ThreadBackend

    with pytest.raises(ValueError, match="num_workers"):
        ThreadBackend({"client_resources": {"num_workers": workers}})
