"""Child process of the ``threads`` and ``simulation`` runtimes:
``python -m dptheory.integrations.flower.simulate CFG [threads|ray]``.

Imports flwr and the apps, waits for the JSON file CFG (written by the parent meanwhile), and runs
the apps on Flower's simulation engine (``flwr.simulation.run_simulation``) with that
configuration (``run_simulation`` takes no run config, so the apps get it through
``fixed_config``), on one of two backends:

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
import time


def ray_backend_config(clients: int) -> dict:
    """``backend_config`` of the Ray backend: ``min(clients, CPUs)`` actors of one CPU each."""
    actors = max(1, min(clients, os.cpu_count() or 1))
    init_args = {"num_cpus": actors, "num_gpus": 0, "include_dashboard": False, "log_to_driver": False}
    if os.environ.get("DPTHEORY_RAY_TMPDIR"):
        init_args["_temp_dir"] = os.environ["DPTHEORY_RAY_TMPDIR"]
    return {"client_resources": {"num_cpus": 1, "num_gpus": 0}, "init_args": init_args}


#: the launching process's pid (set by launch._start_simulation): the child exits when it is gone
PARENT_ENV = "DPTHEORY_FLOWER_PARENT"


def wait_for_config(path: str, wait_s: float = 3600.0) -> dict:
    """The configuration, once the parent has written it; exit if the parent dies first."""
    parent, deadline = int(os.environ.get(PARENT_ENV) or os.getppid()), time.monotonic() + wait_s
    while not os.path.exists(path):
        if os.getppid() != parent or time.monotonic() > deadline:
            sys.exit(3)
        time.sleep(0.01)
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def main(path: str, backend: str = "ray") -> None:
    # the imports first: the parent writes the configuration meanwhile (launch.SimulationChild)
    from flwr.simulation import run_simulation

    from dptheory.integrations.flower.apps import make_client_app, make_server_app

    if backend == "ray":
        import flwr.server.superlink.fleet.vce.backend.raybackend  # noqa: F401 (imports ray)
    else:
        from dptheory.integrations.flower.deployment_apps import warm_up

        warm_up()  # torch's lazy torch._dynamo import, else paid by the first client's first message
    cfg = wait_for_config(path)

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
