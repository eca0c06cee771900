"""Per-sample-gradient step throughput: dptheory's DP-SGD and DiceSGD vs Opacus (script, not a test).

Same logistic-regression model (``nn.Linear(d, 1)``, BCE-with-logits), same float32 data, same
batches, same clipping threshold and noise multiplier, side by side in one process:

* ``opacus``      GradSampleModule + DPOptimizer(SGD) -- hooks-based per-sample gradients;
* ``dptheory-dpsgd``   :class:`dptheory.optim.DPSGD` (torch.func vmap over grad), given the batch;
* ``dptheory-dicesgd`` :class:`dptheory.optim.DiceSGD` (same, plus the error-feedback state);
* ``dptheory-dpsgd+poisson`` the same DPSGD drawing its own Poisson batch each step (the
  sampling cost included; batch sizes vary around B);
* ``... compiled``: ``compile=True`` (torch.compile of per-sample grads + clip + sum, dynamic
  batch size); compilation happens in the untimed warm-up and is cached across batch sizes.

Reports steps/s, samples/s and the ratio to Opacus (wall time, and process CPU time, which a
loaded shared machine distorts less) for each batch size, on CPU and, when available, on CUDA.
Run: ``python benchmarks/bench_optim.py [--dim 100] [--batch-sizes 64,256,1024]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time(step, device, steps: int, repeats: int) -> tuple[float, float]:
    """Median (wall, process CPU) seconds per step over ``repeats`` runs of ``steps`` steps.

    CPU time is reported too because a shared machine's load inflates wall time unevenly.
    """
    for _ in range(5):
        step()
    _sync(device)
    walls, cpus = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step()
        _sync(device)
        walls.append((time.perf_counter() - t0) / steps)
        cpus.append((time.process_time() - c0) / steps)
    return statistics.median(walls), statistics.median(cpus)


def make_data(n: int, d: int, device, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, generator=g)
    y = (torch.sigmoid(x @ w / d**0.5) > torch.rand(n, generator=g)).float()
    return x.to(device), y.to(device)


def bench_opacus(model_fn, x, y, batches, *, c: float, z: float, lr: float, steps: int, repeats: int):
    import warnings

    import torch

    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    model = GradSampleModule(model_fn().to(x.device))
    opt = DPOptimizer(
        torch.optim.SGD(model.parameters(), lr=lr),
        noise_multiplier=z,
        max_grad_norm=c,
        expected_batch_size=len(batches[0]),
    )
    crit = torch.nn.BCEWithLogitsLoss()
    it = [0]

    pre = [(x.index_select(0, i), y.index_select(0, i)) for i in batches]  # no indexing in the timed loop

    def step():
        xb, yb = pre[it[0] % len(pre)]
        it[0] += 1
        opt.zero_grad(set_to_none=True)
        loss = crit(model(xb).squeeze(-1), yb)
        loss.backward()
        opt.step()

    return _time(step, x.device, steps, repeats)


def bench_ours(
    cls,
    model_fn,
    x,
    y,
    batches,
    *,
    c: float,
    z: float,
    lr: float,
    steps: int,
    repeats: int,
    own_sampling=False,
    compile=False,
):
    import torch
    from torch.func import functional_call

    model = model_fn().to(x.device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    bce = torch.nn.functional.binary_cross_entropy_with_logits

    def loss_fn(p, sample):
        logit = functional_call(model, p, (sample["x"].unsqueeze(0),)).squeeze()
        return bce(logit, sample["y"])

    b = len(batches[0])
    q = b / x.shape[0]
    kw = dict(lr=lr, noise_multiplier=z, sample_rate=q, device=x.device, seed=0)
    kw.update({"c": c} if cls.__name__ == "DPSGD" else {"c1": c, "c2": c})
    opt = cls(params, loss_fn, {"x": x, "y": y}, compile=compile, **kw)
    it = [0]
    pre = [{"x": x.index_select(0, i), "y": y.index_select(0, i)} for i in batches]

    def step():
        if own_sampling:
            opt.step()
            return
        batch = pre[it[0] % len(pre)]
        it[0] += 1
        opt.step(batch)

    if compile:  # the first call compiles: report it, do not time it as a step
        t0 = time.perf_counter()
        step()
        _sync(x.device)
        COMPILE_SECONDS[f"{cls.__name__} B={b}"] = time.perf_counter() - t0
    return _time(step, x.device, steps, repeats)


COMPILE_SECONDS: dict[str, float] = {}


def run(device_name: str, args) -> list[dict]:
    import torch

    from dptheory.optim import DPSGD, DiceSGD

    device = torch.device(device_name)
    x, y = make_data(args.n, args.dim, device)

    def model_fn():
        torch.manual_seed(0)
        return torch.nn.Linear(args.dim, 1)

    rows = []
    for b in args.batch_sizes:
        g = torch.Generator(device="cpu").manual_seed(1)
        batches = [torch.randperm(args.n, generator=g)[:b].to(device) for _ in range(16)]
        common = dict(c=1.0, z=1.0, lr=0.1, steps=args.steps, repeats=args.repeats)
        res = {}
        try:
            res["opacus"] = bench_opacus(model_fn, x, y, batches, **common)
        except ImportError as exc:
            print(f"opacus unavailable ({exc}); reporting dptheory only", file=sys.stderr)
        res["dptheory-dpsgd"] = bench_ours(DPSGD, model_fn, x, y, batches, **common)
        res["dptheory-dicesgd"] = bench_ours(DiceSGD, model_fn, x, y, batches, **common)
        res["dptheory-dpsgd+poisson"] = bench_ours(
            DPSGD, model_fn, x, y, batches, own_sampling=True, **common
        )
        if args.compile:
            res["dptheory-dpsgd compiled"] = bench_ours(
                DPSGD, model_fn, x, y, batches, compile=True, **common
            )
            res["dptheory-dicesgd compiled"] = bench_ours(
                DiceSGD, model_fn, x, y, batches, compile=True, **common
            )
        for name, (wall, cpu) in res.items():
            ref = res.get("opacus")
            rows.append(
                {
                    "device": device_name,
                    "batch": b,
                    "impl": name,
                    "step_ms": 1e3 * wall,
                    "steps_per_s": 1 / wall,
                    "samples_per_s": b / wall,
                    "speed_vs_opacus": ref[0] / wall if ref else float("nan"),
                    "cpu_ms": 1e3 * cpu,
                    "cpu_speed_vs_opacus": ref[1] / cpu if ref else float("nan"),
                }
            )
    return rows


def main(argv=None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--n", type=int, default=20000, help="dataset size")
    p.add_argument("--batch-sizes", default="64,256,1024")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    p.add_argument("--device", default="all", choices=("all", "cpu", "cuda"))
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time compile=True (torch.compile of the per-sample kernel; first call not timed)",
    )
    args = p.parse_args(argv)
    args.batch_sizes = [int(v) for v in args.batch_sizes.split(",")]
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        import opacus

        ov = opacus.__version__
    except ImportError:
        ov = "not installed"
    devices = ["cpu"] if args.device in ("all", "cpu") else []
    if args.device in ("all", "cuda"):
        if torch.cuda.is_available():
            devices.append("cuda")
        else:
            print("CUDA not available: GPU numbers skipped", file=sys.stderr)
    print(
        f"torch {torch.__version__}, opacus {ov}, threads {torch.get_num_threads()}, "
        f"logistic regression d={args.dim} (+bias), N={args.n}, float32, C=1, z=1"
    )
    print(
        f"{'device':6s} {'batch':>5s} {'implementation':24s} {'ms/step':>8s} {'steps/s':>8s} "
        f"{'samples/s':>10s} {'x Opacus':>8s} {'cpu ms':>7s} {'x Opacus(cpu)':>13s}"
    )
    for dev in devices:
        for r in run(dev, args):
            print(
                f"{r['device']:6s} {r['batch']:5d} {r['impl']:24s} {r['step_ms']:8.3f} "
                f"{r['steps_per_s']:8.1f} {r['samples_per_s']:10.0f} {r['speed_vs_opacus']:8.2f} "
                f"{r['cpu_ms']:7.3f} {r['cpu_speed_vs_opacus']:13.2f}"
            )
    if COMPILE_SECONDS:
        print(
            "first-call (compile) seconds: " + ", ".join(f"{k}: {v:.1f}" for k, v in COMPILE_SECONDS.items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
