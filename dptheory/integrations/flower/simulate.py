"""Child process of the ``simulation`` runtime: ``python -m dptheory.integrations.flower.simulate CFG``.

Runs the apps on Flower's simulation engine (Ray backend), one Ray actor per client, with the
configuration read from the JSON file CFG (``run_simulation`` takes no run config, so the apps
get it through ``fixed_config``).
"""

from __future__ import annotations

import json
import os
import sys


def main(path: str) -> None:
    with open(path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    from flwr.simulation import run_simulation

    from dptheory.integrations.flower.apps import make_client_app, make_server_app

    n = int(cfg["num-clients"])
    init_args = {"num_cpus": n, "num_gpus": 0, "include_dashboard": False, "log_to_driver": False}
    if os.environ.get("DPTHEORY_RAY_TMPDIR"):
        init_args["_temp_dir"] = os.environ["DPTHEORY_RAY_TMPDIR"]
    run_simulation(
        server_app=make_server_app(cfg),
        client_app=make_client_app(cfg),
        num_supernodes=n,
        backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0}, "init_args": init_args},
    )


if __name__ == "__main__":
    main(sys.argv[1])
