"""Wall time of ``dptheory run --backend flower`` against the same run in process.

    python benchmarks/bench_flower.py                   # 10 x 20 and 3 x 5, 3 repeats, medians
    python benchmarks/bench_flower.py --repeats 5 --runtime deployment
    /work/venv-ray/bin/python benchmarks/bench_flower.py --runtime simulation   # needs Ray

Each repeat runs the in-process command and then the Flower command, one after the other, so that
load on a shared machine hits both alike; the ratio is of the medians. Wall time of the whole
``dptheory run`` process (start-up included), because that is what a user waits for.  Target
(issue 20): the Flower run of Clip21-SGD2M on the 10-client, 20-round stochastic quadratic at most
3x the in-process run.  After each Flower run the script checks that the run left no process
behind (no Ray, SuperLink or SuperNode process that was not there before).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 3.0
SIZES = ((10, 20), (3, 5))
LEFTOVER_NAMES = ("raylet", "gcs_server", "ray::", "flower-superlink", "flower-supernode", "flwr-clientapp")


def command(clients: int, rounds: int, flower: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "dptheory.cli.main", "run", "--algo", "clip21sgd2m"]
    cmd += ["--problem", "stochastic-quadratic", "--dim", "4", "--clients", str(clients)]
    cmd += ["--steps", str(rounds), "--noise-multiplier", "2", "--delta", "1e-5"]
    if flower:
        cmd += ["--backend", "flower", "--flower-runtime", flower]
    return cmd


def wall(cmd: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t0


def leftovers() -> set[int]:
    """Pids of processes whose command line names a Ray or Flower server process."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if any(name in cmdline for name in LEFTOVER_NAMES):
                found.add(int(entry))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runtime", choices=("threads", "simulation", "deployment"), default=None)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    from dptheory.integrations.flower.backend import default_runtime

    runtime = args.runtime or default_runtime()
    before = leftovers()
    print(f"runtime {runtime}, {args.repeats} repeats, load {os.getloadavg()[0]:.2f}", flush=True)
    print("| clients x rounds | in process (median) | Flower (median) | ratio | runs in / Flower (s) |")
    print("| --- | --- | --- | --- | --- |")
    for clients, rounds in SIZES:
        inproc, flower = [], []
        for _ in range(args.repeats):
            inproc.append(wall(command(clients, rounds, None)))
            flower.append(wall(command(clients, rounds, runtime)))
            left = leftovers() - before
            if left:
                print(f"processes left behind after a Flower run: {sorted(left)}", file=sys.stderr)
                return 1
        a, b = statistics.median(inproc), statistics.median(flower)
        runs = ", ".join(f"{x:.1f}" for x in inproc) + " / " + ", ".join(f"{x:.1f}" for x in flower)
        print(f"| {clients} x {rounds} | {a:.1f} s | {b:.1f} s | {b / a:.1f}x | {runs} |", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}; target: Flower <= {TARGET:g}x in process on 10 x 20")
    return 0


if __name__ == "__main__":
    sys.exit(main())
