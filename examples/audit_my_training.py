"""Audit your own Opacus DP-SGD training with one run and 1000 canaries.

Run 1 is correct.  Run 2 has a realistic bug: the noise multiplier was computed for the *mean*
gradient (z / B) but Opacus adds it to the *sum*, so the run adds B times less noise than the
accountant assumes.  The audit's lower bound exceeds the accountant's epsilon: bug caught.

    python examples/audit_my_training.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys

import torch
from opacus import PrivacyEngine

from dptheory.auditing.canaries import audit_training

BATCH, N, EPOCHS = 32, 512, 3


def train_and_audit(noise_multiplier: float, canaries: int, epochs: int, seed: int = 0) -> float:
    torch.manual_seed(seed)
    x, y = torch.randn(N, 16), torch.randint(0, 10, (N,))
    model = torch.nn.Sequential(torch.nn.Linear(16, 128), torch.nn.Tanh(), torch.nn.Linear(128, 10))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = PrivacyEngine(accountant="prv")
    model, opt, loader = engine.make_private(
        module=model, optimizer=opt, data_loader=loader, noise_multiplier=noise_multiplier, max_grad_norm=1.0
    )

    def train() -> None:  # the user's own loop
        for _ in range(epochs):
            for xb, yb in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()

    audit = audit_training(train, model, opt, canaries=canaries, clip_norm=1.0, sample_rate=BATCH / N)
    return audit.auditor.epsilon_one_run(0.05, 1e-5, one_sided=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one epoch fewer (a test)")
    args = p.parse_args(argv)
    epochs = 2 if args.quick else EPOCHS
    m = 1000
    z = 2.0  # what the accountant is told; its epsilon below
    from dptheory import api

    certified = api.epsilon(
        algo="dpsgd",
        noise_multiplier=z,
        delta=1e-5,
        sample_rate=BATCH / N,
        steps=epochs * N // BATCH,
        dataset_size=N,
        c1=1.0,
    ).epsilon
    print(
        f"accountant (certified RDP): eps = {math.ceil(certified * 1000) / 1000:.3f} at delta = 1e-5, z = {z}"
    )
    failed = caught = False
    for label, z_run in (
        ("correct run", z),
        (f"bug: noise for the mean (z / B = {z / BATCH:.3g}) added to the sum", z / BATCH),
    ):
        lower = train_and_audit(z_run, m, epochs)
        verdict = "LEAKS MORE THAN ACCOUNTED" if lower > certified else "consistent"
        failed |= lower > certified and z_run == z
        caught |= lower > certified and z_run != z
        print(f"{label}: one-run lower bound (95%) = {math.floor(lower * 1000) / 1000:.3f} -> {verdict}")
    return 1 if failed or not caught else 0


if __name__ == "__main__":
    sys.exit(main())
