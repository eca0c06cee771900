"""Your own model and data on Flower: sklearn digits, 10 clients (non-IID by label), a small MLP.

    python examples/flower_own_model.py [--quick] [--json] [--algorithm clip21sgd2m|clipsgd|fedavg]
        [--noise-multiplier Z] [--rounds R]

Clip21-SGD2M with :class:`PrivacyLedgerMod` (local DP: each client's certified epsilon comes back
in the replies' metrics), or FedAvg without noise (``--algorithm fedavg --noise-multiplier 0``) /
with client-level central DP (Flower's server-side fixed clipping). The Flower ClientApp and
server loop run in this process (:class:`InProcessGrid`: Flower messages, contexts and mods, no
network, no Ray); test accuracy is measured on the server on a held-out 20 % split.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits

from dptheory.cli.params import fmt_up
from dptheory.integrations.flower import PrivacyLedgerMod  # noqa: F401  (the one-line mod)
from dptheory.integrations.flower.own_model import run_in_process

CLIENTS = 10


def split(seed: int = 0):
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0)
    y = torch.tensor(y)
    perm = np.random.default_rng(seed).permutation(len(y))
    cut = int(0.8 * len(y))
    return (x[perm[:cut]], y[perm[:cut]]), (x[perm[cut:]], y[perm[cut:]])


(TRAIN_X, TRAIN_Y), (TEST_X, TEST_Y) = split()


def partition(pid: int, num: int):
    """Non-IID by label: sort by label, cut into 2*num shards, client i takes shards i and i+num
    (so about two labels per client)."""
    order = np.argsort(TRAIN_Y.numpy(), kind="stable")
    shards = np.array_split(order, 2 * num)
    idx = np.concatenate([shards[pid], shards[pid + num]])
    return TRAIN_X[idx], TRAIN_Y[idx]


def model_fn() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


def evaluate(model: torch.nn.Module) -> dict[str, float]:
    with torch.no_grad():
        pred = model(TEST_X.double()).argmax(1)
    return {"accuracy": float((pred == TEST_Y).double().mean())}


CONFIGS = {
    "clip21sgd2m": {"lr": 0.5, "clipping-norm": 1.0, "beta": 0.5, "beta-hat": 0.5, "batch-size": 64},
    "clipsgd": {"lr": 0.5, "clipping-norm": 1.0, "batch-size": 64},
    "fedavg": {
        "clipping-norm": 1.0,
        "local-steps": 10,
        "local-lr": 0.5,
        "batch-size": 32,
        "fraction-train": 0.5,
    },
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 rounds instead of 20")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--algorithm", default="clip21sgd2m", choices=sorted(CONFIGS))
    ap.add_argument("--noise-multiplier", type=float, default=None, help="z (default 1.0; fedavg: 1.0)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    rounds = a.rounds or (5 if a.quick else 20)
    z = 1.0 if a.noise_multiplier is None else a.noise_multiplier
    if rounds < 1 or z < 0 or (a.algorithm != "fedavg" and z == 0) or not 0 < a.delta < 1:
        print(
            "flower_own_model: --rounds >= 1, --noise-multiplier > 0 (>= 0 for fedavg), --delta in (0, 1)",
            file=sys.stderr,
        )
        return 2
    cfg = dict(
        CONFIGS[a.algorithm],
        **{"num-server-rounds": rounds, "seed": a.seed, "noise-multiplier": z, "target-delta": a.delta},
    )
    logging.getLogger("flwr").setLevel(logging.WARNING)  # Flower's strategy logs go to stdout
    out = run_in_process(model_fn, partition, a.algorithm, cfg, CLIENTS, evaluate_fn=evaluate)
    acc = out["metrics"]["accuracy"]
    clients = [
        {"id": c["id"], "epsilon": c["epsilon"], "messages": c["messages"]} for c in out.get("clients", [])
    ]
    if a.json:
        doc = {
            "accuracy": acc,
            "clients": clients,
            "rounds": rounds,
            "algorithm": a.algorithm,
            "noise_multiplier": z,
            "delta": a.delta,
        }
        if "privacy" in out:
            doc["central_dp"] = out["privacy"]
        print(json.dumps(doc, allow_nan=False))
        return 0
    print(f"{a.algorithm}, {CLIENTS} clients (non-IID digits), {rounds} rounds, noise multiplier {z:g}")
    print(f"test accuracy {acc:.4f}")
    for c in clients:
        print(
            f"  client {c['id']}: {c['messages']} messages, certified local-DP epsilon "
            f"{fmt_up(c['epsilon'], 6)} "
            f"(delta {a.delta:g})"
        )
    if "privacy" in out:
        p = out["privacy"]
        print(
            f"central DP: certified epsilon {fmt_up(p['epsilon'], 6)} (delta {a.delta:g}, replace-one, "
            f"{p['rounds_participated']} rounds); Poisson-sampling reading at q={p['sample_rate']:g}: "
            f"{fmt_up(p['epsilon_poisson_reading'], 6)} (not certified)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
