"""Per-sample-gradient step throughput: dptheory's DP-SGD and DiceSGD vs Opacus (script, not a test).

Same logistic-regression model (``nn.Linear(d, 1)``, BCE-with-logits, written once as a module
and called through ``functional_call`` on our side), same float32 data, same pre-drawn
fixed-size batches (no Poisson sampling on either side unless the row says so), same clipping
threshold C = 1 and noise multiplier z = 1, same thread count, side by side in one process:

* ``opacus``             GradSampleModule + DPOptimizer(SGD): hook-based per-sample gradients;
* ``dptheory-dpsgd``     :class:`dptheory.optim.DPSGD` with its defaults (``kernel='auto'``; the
  optimizer is told the run length, ``steps=10000``, so it traces its per-sample kernel once in
  the untimed warm-up: :class:`dptheory.optim.base.TracedKernel`);
* ``dptheory-dicesgd``   :class:`dptheory.optim.DiceSGD`, same (plus the error-feedback state);
* ``... vmap``           ``kernel='vmap'``: torch.func ``vmap(grad)`` dispatched at every step
  (the path every run took before the traced kernel; still used for short runs);
* ``dptheory-dpsgd+poisson`` DPSGD drawing its own Poisson batch each step (sampling and
  indexing included, batch sizes vary around B; the Opacus row has no sampling cost, so this
  ratio is pessimistic for us);
* ``... compiled`` (``--compile``): ``compile=True`` (torch.compile, inductor); compilation happens
  in the untimed warm-up and is reported separately.

Timing: each implementation gets a warm-up (first call timed separately: tracing/compilation),
then ``--repeats`` rounds in which every implementation runs ``--steps`` steps in turn
(interleaved, so that load drifts on a shared machine hit all rows alike). We report the median
over rounds of wall time per step, steps/s, samples/s, and the ratio to Opacus, plus the same
ratio in process CPU time (less sensitive to other jobs on the machine).

Run: ``python benchmarks/bench_optim.py [--threads 1] [--dim 100] [--batch-sizes 64,256,1024]``.

Toy runs (``--toy quick|full``, or :func:`toy_rows` from another script): ``dptheory run`` on the
papers' 1-D counterexamples, the batched engine against the reference engine and Opacus, as
``(name, ours_s, anchor_s, ratio, note)`` rows in process CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_data(n: int, d: int, device, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, generator=g)
    y = (torch.sigmoid(x @ w / d**0.5) > torch.rand(n, generator=g)).float()
    return x.to(device), y.to(device)


def make_opacus(model_fn, x, y, batches, *, c: float, z: float, lr: float):
    """A step closure for Opacus' standard setup (GradSampleModule + DPOptimizer)."""
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

    return step


def make_ours(cls, model_fn, x, y, batches, *, c: float, z: float, lr: float, own_sampling=False, **options):
    """A step closure for one of our optimizers on the same model, data and batches."""
    import torch
    from torch.func import functional_call

    model = model_fn().to(x.device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    bce = torch.nn.functional.binary_cross_entropy_with_logits

    def loss_fn(p, sample):
        logit = functional_call(model, p, (sample["x"].unsqueeze(0),)).squeeze()
        return bce(logit, sample["y"])

    b = len(batches[0])
    kw = dict(
        lr=lr,
        noise_multiplier=z,
        sample_rate=b / x.shape[0],
        expected_batch_size=b,  # public constant, as Opacus' expected_batch_size
        device=x.device,
        seed=0,
        steps=10_000,
    )
    kw.update({"c": c} if cls.__name__ == "DPSGD" else {"c1": c, "c2": c})
    opt = cls(params, loss_fn, {"x": x, "y": y}, **kw, **options)
    it = [0]
    pre = [{"x": x.index_select(0, i), "y": y.index_select(0, i)} for i in batches]

    def step():
        if own_sampling:
            opt.step()
            return
        batch = pre[it[0] % len(pre)]
        it[0] += 1
        opt.step(batch)

    step.optimizer = opt  # type: ignore[attr-defined]
    return step


def time_interleaved(steps: dict, device, n_steps: int, repeats: int) -> tuple[dict, dict]:
    """First-call seconds, and median (wall, CPU) seconds per step over interleaved rounds."""
    first, walls, cpus = {}, {k: [] for k in steps}, {k: [] for k in steps}
    for name, step in steps.items():
        t0 = time.perf_counter()
        step()  # traces / compiles where the implementation does so
        _sync(device)
        first[name] = time.perf_counter() - t0
        for _ in range(10):
            step()
        _sync(device)
    for _ in range(repeats):
        for name, step in steps.items():
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n_steps):
                step()
            _sync(device)
            walls[name].append((time.perf_counter() - t0) / n_steps)
            cpus[name].append((time.process_time() - c0) / n_steps)
    med = {k: (statistics.median(walls[k]), statistics.median(cpus[k])) for k in steps}
    return first, med


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
        common = dict(c=1.0, z=1.0, lr=0.1)
        steps = {}
        try:
            steps["opacus"] = make_opacus(model_fn, x, y, batches, **common)
        except ImportError as exc:
            print(f"opacus unavailable ({exc}); reporting dptheory only", file=sys.stderr)
        steps["dptheory-dpsgd"] = make_ours(DPSGD, model_fn, x, y, batches, **common)
        steps["dptheory-dicesgd"] = make_ours(DiceSGD, model_fn, x, y, batches, **common)
        steps["dptheory-dpsgd+poisson"] = make_ours(
            DPSGD, model_fn, x, y, batches, own_sampling=True, **common
        )
        steps["dptheory-dpsgd vmap"] = make_ours(DPSGD, model_fn, x, y, batches, kernel="vmap", **common)
        steps["dptheory-dicesgd vmap"] = make_ours(DiceSGD, model_fn, x, y, batches, kernel="vmap", **common)
        if args.compile:
            steps["dptheory-dpsgd compiled"] = make_ours(
                DPSGD, model_fn, x, y, batches, compile=True, **common
            )
            steps["dptheory-dicesgd compiled"] = make_ours(
                DiceSGD, model_fn, x, y, batches, compile=True, **common
            )
        first, med = time_interleaved(steps, device, args.steps, args.repeats)
        ref = med.get("opacus")
        for name, (wall, cpu) in med.items():
            opt = getattr(steps[name], "optimizer", None)
            rows.append(
                {
                    "device": device_name,
                    "batch": b,
                    "impl": name,
                    "kernel": (
                        "hooks"
                        if opt is None
                        else ",".join(_kernel_mode(v) for v in opt.kernel_info().values())
                    ),
                    "first_call_s": first[name],
                    "step_ms": 1e3 * wall,
                    "steps_per_s": 1 / wall,
                    "samples_per_s": b / wall,
                    "speed_vs_opacus": ref[0] / wall if ref else float("nan"),
                    "cpu_ms": 1e3 * cpu,
                    "cpu_speed_vs_opacus": ref[1] / cpu if ref else float("nan"),
                }
            )
    return rows


def _kernel_mode(info) -> str:
    return info if isinstance(info, str) else str(info.get("mode"))


# ----------------------------------------------------------------------------- toy runs (issue 11)
def _cpu_seconds(fn, repeats: int = 1) -> float:
    """Median process CPU seconds of ``fn()`` over ``repeats`` calls."""
    out = []
    for _ in range(repeats):
        c0 = time.process_time()
        fn()
        out.append(time.process_time() - c0)
    return statistics.median(out)


def _opacus_toy_dpsgd(steps: int, *, c: float = 1.0, lr: float = 0.1, x0: float = 1.0):
    """Opacus DP-SGD (GradSampleModule + DPOptimizer, z = 0) on dicesgd-b1, full batch: the same
    update ``x - (lr/N) sum_i clip(g_i, C)``. Returns a closure running ``steps`` steps -> final x."""
    import warnings

    import torch
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    from dptheory.problems import get_problem
    from dptheory.problems.dicesgd_b1 import huber_of_residual

    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    prob = get_problem("dicesgd-b1", c=c, x0=x0)
    cp, xi = prob.notes["C_prime"], prob.data["xi"]
    n = xi.shape[0]

    def go() -> float:
        lin = torch.nn.Linear(1, 1, bias=False).double()
        with torch.no_grad():
            lin.weight.fill_(x0)
        model = GradSampleModule(lin)
        opt = DPOptimizer(
            torch.optim.SGD(model.parameters(), lr=lr),
            noise_multiplier=0.0,
            max_grad_norm=c,
            expected_batch_size=n,
        )
        ones = torch.ones(n, 1, dtype=torch.float64)
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            huber_of_residual(model(ones).squeeze(-1) - xi, cp).mean().backward()
            opt.step()
        return float(lin.weight.detach()[0, 0])

    return go


def toy_rows(quick: bool = True) -> list[tuple[str, float, float, float, str]]:
    """Toy-run rows ``(name, ours_s, anchor_s, ratio, note)``, measured side by side in this process.

    ``ours_s`` and ``anchor_s`` are process CPU seconds of the whole ``dptheory.runner.run`` call
    (problem, fixed point, steps, metrics; imports and first-call set-up excluded by a warm-up);
    ``ratio = anchor_s / ours_s`` (> 1: we are faster). Anchors: the reference engine (one optimizer
    per seed, step by step, traced kernel: the path every run took before the batched engine, and
    the one the tests compare against), and Opacus' DP-SGD on the same 1-D problem where Opacus
    can express it. ``quick`` uses 8 seeds for the many-seed rows, else 64.
    """
    from dptheory import runner

    def job(algo, problem, engine, **kw):
        return lambda: runner.run(algo, problem, engine=engine, progress=False, **kw)

    for algo, problem in (("dpsgd", "dicesgd-b1"), ("clip21sgd2m", "clip21-example1")):  # warm-up
        job(algo, problem, "batched", steps=600)()
        job(algo, problem, "reference", steps=600)()
    k = 8 if quick else 64
    cases = [
        ("run dpsgd dicesgd-b1 T=4000, 1 seed", "dpsgd", "dicesgd-b1", dict(steps=4000)),
        (f"run dpsgd dicesgd-b1 T=4000, {k} seeds", "dpsgd", "dicesgd-b1", dict(steps=4000, seeds=k)),
        (
            f"run dpsgd dicesgd-b1 T=4000, {k} seeds, z=1",
            "dpsgd",
            "dicesgd-b1",
            dict(steps=4000, seeds=k, noise_multiplier=1.0),
        ),
        (
            f"run dpsgd dicesgd-b1 T=4000, {k} seeds, q=0.5, z=1",
            "dpsgd",
            "dicesgd-b1",
            dict(steps=4000, seeds=k, sample_rate=0.5, noise_multiplier=1.0),
        ),
        ("run clip21sgd2m clip21-example1 T=3000", "clip21sgd2m", "clip21-example1", dict(steps=3000)),
        ("run dicesgd dicesgd-b1 T=4000, 1 seed", "dicesgd", "dicesgd-b1", dict(steps=4000)),
    ]
    rows = []
    for name, algo, problem, kw in cases:
        ours = _cpu_seconds(job(algo, problem, "batched", **kw), repeats=3)
        anchor = _cpu_seconds(job(algo, problem, "reference", **kw))
        rows.append(
            (name, ours, anchor, anchor / ours, "anchor: reference engine (same iterates bit for bit)")
        )
    try:
        opacus_go = _opacus_toy_dpsgd(4000)
    except ImportError:
        rows.append(("run dpsgd dicesgd-b1 T=4000 vs Opacus", float("nan"), float("nan"), float("nan"),
                     "opacus not installed"))  # fmt: skip
        return rows
    ours_x = runner.run("dpsgd", "dicesgd-b1", steps=4000, progress=False).runs[0].x[0]
    anchor = _cpu_seconds(opacus_go)
    ours = _cpu_seconds(job("dpsgd", "dicesgd-b1", "batched", steps=4000), repeats=3)
    gap = abs(opacus_go() - ours_x)
    rows.append(
        (
            "run dpsgd dicesgd-b1 T=4000 vs Opacus",
            ours,
            anchor,
            anchor / ours,
            f"anchor: Opacus DPOptimizer, steps only (no metrics); |x_T ours - Opacus| = {gap:.1e} "
            "(Opacus clips by C/(norm + 1e-6))",
        )
    )
    return rows


def print_toy_rows(rows) -> None:
    print(f"{'toy run':44s} {'ours s':>8s} {'anchor s':>9s} {'ratio':>7s}  note")
    for name, ours, anchor, ratio, note in rows:
        print(f"{name:44s} {ours:8.3f} {anchor:9.3f} {ratio:7.1f}  {note}")


def main(argv=None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--n", type=int, default=20000, help="dataset size")
    p.add_argument("--batch-sizes", default="64,256,1024")
    p.add_argument("--steps", type=int, default=100, help="steps per timed round")
    p.add_argument("--repeats", type=int, default=5, help="interleaved timed rounds (median reported)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    p.add_argument("--device", default="all", choices=("all", "cpu", "cuda"))
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time compile=True (torch.compile of the per-sample kernel; first call not timed)",
    )
    p.add_argument(
        "--toy",
        choices=("quick", "full"),
        help="only the toy-run rows (dptheory run, batched vs reference engine and Opacus); full: 64 seeds",
    )
    args = p.parse_args(argv)
    if args.toy:
        if args.threads:
            torch.set_num_threads(args.threads)
        print_toy_rows(toy_rows(quick=args.toy == "quick"))
        return 0
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
    header = (
        f"torch {torch.__version__}, opacus {ov}, threads {torch.get_num_threads()}, "
        f"logistic regression d={args.dim} (+bias), N={args.n}, float32, C=1, z=1, "
        "fixed pre-drawn batches (no Poisson sampling) unless +poisson"
    )
    rows = [r for dev in devices for r in run(dev, args)]
    if args.json:
        print(json.dumps({"setup": header, "rows": rows}, indent=1))
        return 0
    print(header)
    print(
        f"{'device':6s} {'batch':>5s} {'implementation':26s} {'kernel':>8s} {'ms/step':>8s} {'steps/s':>8s} "
        f"{'samples/s':>10s} {'x Opacus':>8s} {'cpu ms':>7s} {'x Opacus(cpu)':>13s} {'1st call s':>10s}"
    )
    for r in rows:
        print(
            f"{r['device']:6s} {r['batch']:5d} {r['impl']:26s} {r['kernel']:>8s} {r['step_ms']:8.3f} "
            f"{r['steps_per_s']:8.1f} {r['samples_per_s']:10.0f} {r['speed_vs_opacus']:8.2f} "
            f"{r['cpu_ms']:7.3f} {r['cpu_speed_vs_opacus']:13.2f} {r['first_call_s']:10.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
