"""Child process of the ``threads`` and ``simulation`` runtimes:
``python -m dptheory.integrations.flower.simulate CFG [threads|ray]``.

Runs the apps on Flower's simulation engine (``flwr.simulation.run_simulation``) with the
configuration read from the JSON file CFG (``run_simulation`` takes no run config, so the apps
get it through ``fixed_config``), on one of two backends:

``threads`` (:mod:`.threads`)
    each ClientApp call on a worker thread of this process; no Ray.
``ray``
    Flower's Ray backend. Actors are reused across clients and rounds (a node's state lives in
    its Flower ``Context``, not in the actor), so the pool is sized to the machine, not to the
    number of clients: one CPU per actor, as many actors as CPUs (at most one per client). Each
    actor imports torch once, at its first message, and keeps it; with one actor per client on a
    2-core machine those imports alone took 20 s of a 10-client run (docs/flower.md, "Speed").
"""

from __future__ import annotations

import json
import os
import sys


def ray_backend_config(clients: int) -> dict:
    """``backend_config`` of the Ray backend: ``min(clients, CPUs)`` actors of one CPU each."""
    actors = max(1, min(clients, os.cpu_count() or 1))
    init_args = {"num_cpus": actors, "num_gpus": 0, "include_dashboard": False, "log_to_driver": False}
    if os.environ.get("DPTHEORY_RAY_TMPDIR"):
        init_args["_temp_dir"] = os.environ["DPTHEORY_RAY_TMPDIR"]
    return {"client_resources": {"num_cpus": 1, "num_gpus": 0}, "init_args": init_args}


def main(path: str, backend: str = "ray") -> None:
    with open(path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    from flwr.simulation import run_simulation

    from dptheory.integrations.flower.apps import make_client_app, make_server_app

    n = int(cfg["num-clients"])
    apps = {"server_app": make_server_app(cfg), "client_app": make_client_app(cfg), "num_supernodes": n}
    if backend == "threads":
        from dptheory.integrations.flower.threads import thread_backend

        config = {"client_resources": {"num_workers": 1}}
        with thread_backend(config) as name:
            run_simulation(**apps, backend_name=name, backend_config=config)
    else:
        run_simulation(**apps, backend_config=ray_backend_config(n))


if __name__ == "__main__":
    main(*sys.argv[1:3])
