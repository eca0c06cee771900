"""``dptheory run``: run one private optimizer on one toy problem and compare with exact answers.

torch/matplotlib are imported inside :func:`run`, so ``dptheory --help`` stays light.
"""

from __future__ import annotations

import argparse

from dptheory.cli.numbers import UP, fmt, integer, number

ALGOS = ("dpsgd", "dicesgd", "clipsgd", "clip21sgd", "clip21sgd2m", "d2p2sgd", "d2psgd", "dp2sgd")
PROBLEMS = ("dicesgd-b1", "clip21-example1", "stochastic-quadratic", "quadratic", "logreg-nonconvex")
#: Problem options each problem takes (an option given to another problem is an error).
PROBLEM_OPTIONS = {
    "dicesgd-b1": {"x0"},
    "clip21-example1": {"x0"},
    "stochastic-quadratic": {"d", "clients"},
    "quadratic": {"d"},
    "logreg-nonconvex": {"dataset", "clients", "d"},
}

EPILOG = """\
noise:
  default --noise-multiplier 0: a NON-PRIVATE run (no noise is drawn), so that the effect of
  clipping alone is visible; the output then says 'private: no'. Give --noise-multiplier Z
  (z = noise std / sensitivity of the summed quantity, docs/architecture.md) or --eps/--delta,
  which calibrates z through dptheory.api (mode --mode, certified by default).

defaults per problem (steps, lr, sample rate):
  dicesgd-b1            500, 0.1, 1 (full batch); --c1 also sets the instance's C
  clip21-example1       300, 0.1, 1 (full gradients: Clip-GD / Clip21-GD)
  stochastic-quadratic  500, 0.1, 1/(2d) (one local sample per client and round)
  quadratic             500, 0.2, 0.25
  logreg-nonconvex      500, 1.0, 0.1
algorithm defaults: --c1 1, --c2 = --c1, --tau 1, clip21sgd2m --beta 0.5 --beta-hat 0.5
  (clip21sgd is beta = beta_hat = 1), --gamma 0.01, --projection-dim d/2, --projection fresh,
  --schedule inv-sqrt-k (sigma_k^2 = sigma^2/sqrt(k), D2P2 Table 3; d2p2sgd, d2psgd) or
  constant; inv-k is sigma_k^2 = sigma^2/k (accounting/schedules.py).
sampling: dpsgd/dicesgd/d2p* use Poisson sampling at rate q over all samples (B = qN);
  the clip family uses round(q m_i) local samples per client and round (q = 1: full gradient).
  B = qN with the problem's N is a fixed public constant: the optimizer never re-derives it.
backend: --backend flower (clip family) runs each client as a Flower ClientApp on Flower's
  simulation engine (worker threads; --flower-runtime simulation: Ray actors) or a local
  SuperLink + SuperNodes (--flower-runtime deployment), with the same iterates, and prints each
  client's certified local-DP epsilon;
  needs pip install -e ".[flower]"; docs/flower.md.
speed: runs of dpsgd, dicesgd, the D2P2 family (projection: 1-D problems) and the clip family on
  dicesgd-b1 and clip21-example1, full batch or sampled (q < 1), run all seeds as one batched
  tensor program with closed-form gradients (same iterates as the step-by-step path, bit for
  bit); --json says which under settings.engine; --engine reference forces the step-by-step path.
"""


def register(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run an optimizer on a toy problem with known answers",
        description=(
            "Run ALGO on PROBLEM for K seeds; report final loss, ||grad f||, distance to the optimum, "
            "distance to the clipped method's exact fixed point (where defined) and, for 1-D problems, x."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--algo", required=True, metavar="ALGO", help=f"one of {', '.join(ALGOS)}")
    p.add_argument("--problem", required=True, metavar="PROBLEM", help=f"one of {', '.join(PROBLEMS)}")
    p.add_argument("--steps", type=integer, metavar="T", help="iterations / rounds (default: per problem)")
    p.add_argument("--lr", type=number, metavar="ETA", help="step size (default: per problem)")
    p.add_argument(
        "--sample-rate", type=number, metavar="Q", help="sampling rate in (0, 1] (default: per problem)"
    )
    g = p.add_argument_group("clipping (dpsgd, dicesgd)")
    g.add_argument("--c1", type=number, help="clipping threshold C (C1 for dicesgd); sets C of dicesgd-b1")
    g.add_argument("--c2", type=number, help="dicesgd feedback clipping threshold C2 (default C1)")
    g.add_argument(
        "--clip-mode", default="flat", help="flat (min(1, C/||g||) g) or automatic (C g/(||g||+gamma))"
    )
    g.add_argument(
        "--residual-clip",
        type=number,
        metavar="R",
        help="dicesgd only: error increment clip(g, C1 + R) - clip(g, C1) (norm <= R; flush regime)",
    )
    g = p.add_argument_group("clip family (clipsgd, clip21sgd, clip21sgd2m)")
    g.add_argument("--tau", type=number, help="clipping level tau (default 1)")
    g.add_argument("--beta", type=number, help="client momentum in (0, 1] (clip21sgd2m, default 0.5)")
    g.add_argument("--beta-hat", type=number, help="second momentum in (0, 1] (clip21sgd2m, default 0.5)")
    g.add_argument(
        "--clients", type=integer, help="number of clients (stochastic-quadratic, logreg-nonconvex)"
    )
    g = p.add_argument_group("D2P2 family (d2p2sgd, d2psgd, dp2sgd)")
    g.add_argument("--gamma", type=number, help="normalisation constant in g/(||g||+gamma) (default 0.01)")
    g.add_argument("--projection-dim", type=integer, metavar="P", help="projection dimension p (default d/2)")
    g.add_argument(
        "--projection", choices=("fresh", "fixed"), help="redraw A every step (fresh) or once (fixed)"
    )
    g.add_argument("--schedule", help="noise schedule: constant, inv-k, inv-sqrt-k, exp")
    g = p.add_argument_group("noise")
    g.add_argument(
        "--noise-multiplier", type=number, metavar="Z", help="base noise multiplier (default 0: non-private)"
    )
    g.add_argument("--eps", type=number, metavar="E", help="calibrate z for this epsilon (with --delta)")
    g.add_argument(
        "--delta",
        type=number,
        metavar="D",
        help="delta in (0, 1): with --eps calibrates z; with Z > 0 reports epsilon",
    )
    g.add_argument(
        "--mode", default="certified", choices=("certified", "claimed"), help="accounting mode for --eps"
    )
    g = p.add_argument_group("problem")
    g.add_argument("--dataset", help="logreg-nonconvex data: synthetic (default) or breast-cancer")
    g.add_argument("--dim", type=integer, help="dimension d (quadratic, stochastic-quadratic)")
    g.add_argument("--x0", type=number, help="starting point of a 1-D problem")
    g = p.add_argument_group("execution and output")
    g.add_argument("--seeds", type=integer, default=1, metavar="K", help="number of seeds (default 1)")
    g.add_argument("--seed", type=integer, default=0, help="first seed (default 0)")
    g.add_argument("--device", default="auto", help="auto (CUDA if present), cpu or cuda")
    g.add_argument(
        "--engine",
        default="auto",
        help="auto (batched where it applies, default), batched (refused where it does not) or reference "
        "(one optimizer per seed, step by step); same iterates either way",
    )
    g.add_argument("--json", action="store_true", help="print one JSON object")
    g.add_argument("--plot", metavar="PATH", help="write a PNG of the trajectories")
    g = p.add_argument_group("backend (clip family only for flower)")
    g.add_argument(
        "--backend",
        default="inprocess",
        help="inprocess (default: clients simulated in this process) or flower (one Flower "
        "ClientApp per client, real processes; needs the [flower] extra; same iterates)",
    )
    g.add_argument(
        "--flower-runtime",
        help="with --backend flower: threads (default: Flower's simulation engine, ClientApps on worker "
        "threads), simulation (the same engine on Ray actors; needs Ray) or deployment (a SuperLink and "
        "N SuperNodes on 127.0.0.1, started and stopped by this command)",
    )
    g.add_argument(
        "--dropout-rate",
        type=number,
        default=None,
        help="with --backend flower: each client misses each round with this probability, in [0, 1) "
        "(drawn from the seed; a missed round sends nothing and costs that client no privacy)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from accounting.errors import InvalidParameter
    from dptheory import runner

    if args.algo not in ALGOS:
        raise InvalidParameter("--algo", f"must be one of {', '.join(ALGOS)} (got {args.algo!r})")
    if args.problem not in PROBLEMS:
        raise InvalidParameter("--problem", f"must be one of {', '.join(PROBLEMS)} (got {args.problem!r})")
    if args.plot is not None:  # '' is a bad path, not "no plot"
        runner.check_plot_path(args.plot)
    popts = {"clients": args.clients, "dataset": args.dataset, "d": args.dim, "x0": args.x0}
    for opt, key in (("--clients", "clients"), ("--dataset", "dataset"), ("--dim", "d"), ("--x0", "x0")):
        if popts[key] is not None and key not in PROBLEM_OPTIONS[args.problem]:
            raise InvalidParameter(opt, f"does not apply to --problem {args.problem}")
    for opt, v in (("--clients", args.clients), ("--dim", args.dim)):
        if v is not None and v < 1:
            raise InvalidParameter(opt, f"must be an integer >= 1 (got {v})")
    if args.dim is not None and args.dim > runner.MAX_DIM:
        raise InvalidParameter(
            "--dim", f"must be at most {runner.MAX_DIM} for a toy problem (got {args.dim})"
        )
    if args.clients is not None and args.clients > runner.MAX_DIM:
        raise InvalidParameter("--clients", f"must be at most {runner.MAX_DIM} (got {args.clients})")
    if args.x0 is not None:
        runner.check_finite("--x0", args.x0)
    options = dict(
        steps=args.steps,
        lr=args.lr,
        sample_rate=args.sample_rate,
        seeds=args.seeds,
        seed=args.seed,
        device=args.device,
        c1=args.c1,
        c2=args.c2,
        clip_mode=args.clip_mode,
        tau=args.tau,
        beta=args.beta,
        beta_hat=args.beta_hat,
        gamma=args.gamma,
        residual_clip=args.residual_clip,
        projection_dim=args.projection_dim,
        projection=args.projection,
        schedule=args.schedule,
        noise_multiplier=args.noise_multiplier,
        eps=args.eps,
        delta=args.delta,
        mode=args.mode,
    )
    if args.backend not in ("inprocess", "flower"):
        raise InvalidParameter("--backend", f"must be inprocess or flower (got {args.backend!r})")
    if args.flower_runtime is not None and args.backend != "flower":
        raise InvalidParameter("--flower-runtime", "only applies to --backend flower")
    if args.dropout_rate is not None and args.backend != "flower":
        raise InvalidParameter("--dropout-rate", "only applies to --backend flower")
    if args.engine not in runner.ENGINES:
        allowed = ", ".join(runner.ENGINES)
        raise InvalidParameter("--engine", f"must be one of {allowed} (got {args.engine!r})")
    if args.engine != "auto" and args.backend != "inprocess":
        raise InvalidParameter("--engine", "only applies to --backend inprocess")
    runner.check_options(args.algo, **options)  # before torch is imported
    from dptheory.extras import require_extra

    needed = ["torch"]
    needed += ["matplotlib"] if args.plot else []
    needed += ["sklearn"] if args.dataset == "breast-cancer" else []
    needed += ["flwr"] if args.backend == "flower" else []
    require_extra(*needed)
    if args.backend == "flower":
        from dptheory.integrations.flower import backend

        runtime = args.flower_runtime or backend.default_runtime()
        dropout_rate = args.dropout_rate or 0.0
        backend.check_flower_options(
            args.algo, runtime=runtime, device=args.device, dropout_rate=dropout_rate
        )
        from dptheory.cli.progress import bar
        from dptheory.integrations.flower.launch import FlowerRunError

        try:
            with bar(args, desc=f"flower ({runtime})", unit=" rounds") as rounds:
                done = {"n": 0, "k": 0}

                def progress(k: int, t: int) -> None:  # seed k finished round t (one line, updated)
                    if rounds is None:
                        return
                    if k != done["k"]:
                        done["k"], done["n"] = k, 0
                    rounds.set_postfix_str(f"seed {k + 1}, round {t}", refresh=False)
                    rounds.update(t - done["n"])
                    done["n"] = t

                result, report = backend.run_with_flower(
                    args.algo,
                    args.problem,
                    problem_options=popts,
                    runtime=runtime,
                    timeout=getattr(args, "timeout", None) or 86400.0,
                    dropout_rate=dropout_rate,
                    progress=progress,
                    **options,
                )
        except FlowerRunError as exc:  # every process is already stopped; say why in one line
            raise InvalidParameter("--backend", f"the Flower {runtime} failed: {exc.summary()}") from None
    else:
        result = runner.run(args.algo, args.problem, problem_options=popts, engine=args.engine, **options)
        report = None
    if args.plot is not None:
        runner.plot_result(result, args.plot)
    if args.json:
        out = result.to_json()
        if report is not None:
            out["flower"] = report.to_json()
        print(json.dumps(_jsonable(out), indent=2, allow_nan=False))
    else:
        print(render(result))
        if report is not None:
            print(backend.render_report(report))
    return 0


def _jsonable(obj):
    """The run's result as JSON: arrays as lists, numpy integers as ints, and floats in the one
    encoding of every ``--json`` output (:mod:`accounting.json_floats`: ``"inf"``, ``"nan"``)."""
    import numpy as np

    from accounting.json_floats import json_float

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.integer):
        return int(obj)
    return json_float(obj)


def render(result) -> str:
    s = result.settings
    summ = result.summary()
    priv = result.privacy
    lines = [
        f"dptheory run: {s.algo} on {s.problem}  (steps {s.steps}, lr {s.lr:g}, "
        f"sample rate {s.sample_rate:g}, "
        f"{s.seeds} seed(s), device {s.device})",
    ]
    if priv.get("private"):
        z = priv["noise_multiplier"]
        extra = ""
        if "calibrated_from" in priv:
            c = priv["calibrated_from"]
            extra = f", calibrated for eps={c['eps']:g}, delta={c['delta']:g} ({c['mode']})"
        if "epsilon" in priv:
            extra = f", epsilon {fmt(priv['epsilon'], UP, 4)} at delta {priv['delta']:g} ({priv['mode']})"
        std = fmt(float(priv.get("noise_std", 0)), UP, 4)
        lines.append(f"private: yes (noise multiplier {fmt(float(z), UP)}, noise std {std}{extra})")
    else:
        lines.append("private: no (noise multiplier 0: no noise drawn)")
    pm = "+-"
    labels = {
        "final_loss": "final loss f(x_T)",
        "grad_norm": "||grad f(x_T)||",
        "dist_to_opt": "distance to optimum",
        "dist_to_fixed_point": "distance to clipped fixed point",
        "x": "final x",
    }
    for key, label in labels.items():
        v = summ.get(key)
        if v is None:
            if key == "dist_to_fixed_point":
                lines.append(f"  {label:32s} n/a (no fixed point defined for this setting)")
            continue
        lines.append(f"  {label:32s} {v['mean']:.6g} {pm} {v['std']:.2g}")
    lines.append(f"  optimum: {result.optimum_kind}")
    if result.optimum.size == 1:
        lines.append(f"  x* = {float(result.optimum[0]):.6g}")
    fp = result.fixed_point
    if fp is not None:
        j = fp.to_json()
        where = j.get("point", j.get("interval"))
        if isinstance(where, list) and len(where) == 1:
            where = f"{where[0]:.6g}"
        elif "interval" in j and len(fp.lo) == 1:
            where = f"[{fp.lo[0]:.6g}, {fp.hi[0]:.6g}]"
        else:
            where = "(vector, see --json)"
        lines.append(f"  clipped fixed point: {where}  [{fp.kind}]")
    if s.seeds > 1:
        lines.append(f"  (mean {pm} sample std over {s.seeds} seeds)")
    return "\n".join(lines)
