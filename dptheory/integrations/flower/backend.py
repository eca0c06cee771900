"""``dptheory run --backend flower``: the run of :mod:`dptheory.runner`, with real Flower clients.

Settings, calibration and metrics are the runner's own (:func:`runner.settings_for`,
:func:`runner.resolve_noise`, :func:`runner.run_from_iterates`): only the iterates come from Flower.
They are replayed through the runner's recording loop, so every metric is computed exactly as for
the in-process simulator. Each client's local-DP epsilon, for every seed, is the certified Clip21
accountant's on the number of messages that client actually sent. ``dropout_rate`` p makes each
client miss each round independently with probability p (drawn from the seed, so reproducible):
a missed round sends nothing and costs that client nothing.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from accounting.errors import InvalidParameter

RULE_OF_ALGO = {"clipsgd": "clip", "clip21sgd": "clip21", "clip21sgd2m": "clip21-2m"}
#: delta of the per-client report when the run has noise but no --delta
DEFAULT_REPORT_DELTA = 1e-5


@dataclass
class ClientPrivacy:
    index: int
    messages: int
    epsilon: float  # certified local-DP epsilon of this client's messages (0 if it sent none)

    def to_json(self) -> dict[str, Any]:
        eps = self.epsilon if math.isfinite(self.epsilon) else None
        return {"client": self.index, "messages": self.messages, "epsilon": eps}


@dataclass
class FlowerReport:
    runtime: str
    clients: int
    wall_s: list[float] = field(default_factory=list)
    delta: float | None = None
    delta_is_default: bool = False
    dropout_rate: float = 0.0
    #: (seed, each client's privacy in that seed's run)
    per_seed: list[tuple[int, list[ClientPrivacy]]] = field(default_factory=list)

    @property
    def per_client(self) -> list[ClientPrivacy]:
        """The first seed's (kept for readers of the JSON before ``per_seed``)."""
        return self.per_seed[0][1] if self.per_seed else []

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "clients": self.clients,
            "wall_s": self.wall_s,
            "delta": self.delta,
            "delta_is_default": self.delta_is_default,
            "dropout_rate": self.dropout_rate,
            "per_client": [c.to_json() for c in self.per_client],
            "per_seed": [{"seed": sd, "per_client": [c.to_json() for c in pc]} for sd, pc in self.per_seed],
        }


def default_runtime() -> str:
    """``threads``: Flower's simulation engine with the ClientApps on worker threads, which needs
    no Ray and is the fastest of the three on one machine (docs/flower.md, "Speed")."""
    return "threads"


def check_flower_options(algo: str, *, runtime: str, device: str, dropout_rate: float = 0.0) -> None:
    """Refusals that need neither torch nor flwr (run before anything heavy is imported)."""
    if not (isinstance(dropout_rate, (int, float)) and 0.0 <= dropout_rate < 1.0):
        raise InvalidParameter("--dropout-rate", f"must be a number in [0, 1) (got {dropout_rate!r})")
    if algo not in RULE_OF_ALGO:
        raise InvalidParameter(
            "--backend", f"flower runs --algo clipsgd, clip21sgd or clip21sgd2m only (got {algo})"
        )
    if runtime not in ("threads", "simulation", "deployment"):
        raise InvalidParameter(
            "--flower-runtime", f"must be threads, simulation or deployment (got {runtime!r})"
        )
    if device == "cuda":
        raise InvalidParameter("--device", "the Flower clients run on cpu; use --device auto or cpu")
    import importlib.util

    if importlib.util.find_spec("flwr") is None:
        raise InvalidParameter("--backend", 'flower needs the optional extra: pip install -e ".[flower]"')
    if runtime == "simulation" and importlib.util.find_spec("ray") is None:
        raise InvalidParameter(
            "--flower-runtime",
            'simulation needs Ray: pip install -e ".[flower-ray]", or use --flower-runtime threads',
        )


def flower_config(s: Any, prob_name: str, problem_options: dict[str, Any], z: float, n: int, seed: int):
    """The apps' run config (apps.CONFIG_KEYS) for settings ``s`` and one seed."""
    popts = {k: v for k, v in problem_options.items() if v is not None}
    return {
        "problem": prob_name,
        "problem-options": json.dumps(popts, sort_keys=True),
        "rule": RULE_OF_ALGO[s.algo],
        "steps": int(s.steps),
        "lr": float(s.lr),
        "tau": float(s.tau),
        "beta": float(s.beta),
        "beta-hat": float(s.beta_hat),
        "noise-multiplier": float(z),
        "sample-rate": float(s.sample_rate),
        "seed": int(seed),
        "num-clients": int(n),
        "drop": "",
        "round-timeout": 0.0,
        "node-wait": 300.0,
        "poll-interval": 0.0,
    }


def reference_iterates(cfg: dict[str, Any]) -> list[list[float]]:
    """The in-process simulator's iterates (x^0 .. x^T) for a Flower run config: what a Flower
    run with the same config and seeds must reproduce (``dptheory.optim.FederatedClipping``)."""
    from dptheory.optim import FederatedClipping
    from dptheory.problems import get_problem

    prob = get_problem(cfg["problem"], **json.loads(cfg["problem-options"]))
    opt = FederatedClipping(
        prob.x0,
        prob.loss_fn,
        prob.client_data(),
        rule=cfg["rule"],
        lr=cfg["lr"],
        tau=cfg["tau"],
        beta=cfg["beta"],
        beta_hat=cfg["beta-hat"],
        noise_multiplier=cfg["noise-multiplier"],
        steps=cfg["steps"],
        sample_rate=cfg["sample-rate"],
        seed=cfg["seed"],
        device="cpu",
    )
    xs = [prob.flat(opt.params).tolist()]
    for _ in range(cfg["steps"]):
        opt.step()
        xs.append(prob.flat(opt.params).tolist())
    return xs


def dropout_spec(rate: float, clients: int, rounds: int, seed: int) -> str:
    """The apps' ``drop`` hook for independent dropouts: client i misses round t with probability
    ``rate`` (a generator seeded from ``seed`` only, so the same seed drops the same rounds)."""
    if rate <= 0:
        return ""
    import numpy as np

    miss = np.random.default_rng([int(seed), 0xD0]).random((clients, rounds)) < rate
    return ",".join(f"{i}:{t + 1}" for i, t in zip(*np.nonzero(miss), strict=True))


def client_privacy(sent: dict[str, int], n: int, z: float, tau: float, delta: float) -> list[ClientPrivacy]:
    """Certified local-DP epsilon of each client for the messages it sent (none sent: 0)."""
    from dptheory import api

    out = []
    for i in range(n):
        k = int(sent.get(str(i), 0))
        if k == 0:
            eps = 0.0
        elif z <= 0:
            eps = math.inf
        else:
            rep = api.epsilon(
                algo="clip21sgd2m",
                noise_multiplier=z,
                delta=delta,
                mode="certified",
                tau=tau,
                clients=n,
                rounds=k,
            )
            eps = float(rep.epsilon)
        out.append(ClientPrivacy(i, k, eps))
    return out


def _import_torch_func() -> None:
    """torch imports ``torch._dynamo`` (about 2 s of CPU) at the first ``torch.func`` call; the
    replay of the iterates makes that call, so it is done while the Flower run computes them."""
    import torch

    torch.func.grad(lambda x: (x * x).sum())(torch.zeros(2, dtype=torch.float64))


def run_with_flower(
    algo: str,
    problem: str,
    *,
    problem_options: dict[str, Any] | None = None,
    runtime: str = "threads",
    timeout: float = 86400.0,
    drop: str = "",
    progress: Callable[[int, int], None] | None = None,
    dropout_rate: float = 0.0,
    **options: Any,
):
    """:func:`dptheory.runner.run` with Flower clients; returns ``(RunResult, FlowerReport)``.

    ``progress(seed_index, round)`` is called as the ServerApp finishes rounds. The first seed's
    Flower process (``threads``, ``simulation``) is started before anything else, so that its
    imports overlap this process's."""
    from dptheory.integrations.flower.launch import SimulationChild

    child = SimulationChild(runtime) if runtime != "deployment" else None
    try:
        return _run_with_flower(
            algo, problem, child, problem_options, runtime, timeout, drop, progress, dropout_rate, options
        )
    finally:
        if child is not None:
            child.stop()  # a no-op once run_flower has stopped it


def _run_with_flower(
    algo: str,
    problem: str,
    child: Any,
    problem_options: dict[str, Any] | None,
    runtime: str,
    timeout: float,
    drop: str,
    progress: Callable[[int, int], None] | None,
    dropout_rate: float,
    options: dict[str, Any],
):
    from dptheory import runner
    from dptheory.integrations.flower.launch import run_flower
    from dptheory.problems import get_problem

    popts = dict(problem_options or {})
    prob = get_problem(problem, **popts)
    s = runner.settings_for(algo, problem, defaults=prob, **options)
    s.device = "cpu"
    z, privacy = runner.resolve_noise(s, prob)
    fp = prob.clipped_fixed_point(
        s.algo, c1=s.c1, c2=s.c2, tau=s.tau, gamma=s.gamma, client_batch=runner.client_batch(s, prob)
    )
    result = runner.RunResult(
        settings=s,
        problem_constants=prob.constants,
        optimum=prob.x_star,
        optimum_kind=prob.optimum_kind,
        fixed_point=fp,
        privacy=privacy,
        mechanism={},
    )
    n = len(prob.clients)
    delta = s.delta if s.delta is not None else DEFAULT_REPORT_DELTA
    report = FlowerReport(
        runtime=runtime, clients=n, delta=delta, delta_is_default=s.delta is None, dropout_rate=dropout_rate
    )
    warm = threading.Thread(target=_import_torch_func, name="dptheory-torch-func-import", daemon=True)
    warm.start()
    for k in range(s.seeds):
        seed = s.seed + k
        if k == 0:
            ref = runner.build_optimizer(s, prob, z, seed)  # for the mechanism record only
            result.mechanism = {**ref.mechanism(), "backend": f"flower ({runtime})"}
            privacy["noise_std"] = ref.noise_std(0)
        cfg = flower_config(s, problem, popts, z, n, seed)
        cfg["poll-interval"] = 0.01 if runtime != "deployment" else 0.0
        cfg["drop"] = ",".join(p for p in (drop, dropout_spec(dropout_rate, n, s.steps, seed)) if p)
        t0 = time.perf_counter()
        on_round = None if progress is None else (lambda t, k=k: progress(k, t))
        out = run_flower(
            cfg, runtime=runtime, timeout=timeout, on_round=on_round, child=child if k == 0 else None
        )
        report.wall_s.append(time.perf_counter() - t0)
        warm.join()
        result.runs.append(runner.run_from_iterates(out["x"], prob, s, fp, seed))
        report.per_seed.append((seed, client_privacy(out["sent"], n, z, s.tau, delta)))
    return result, report


def render_report(report: FlowerReport) -> str:
    from dptheory.cli.params import fmt_up

    walls = ", ".join(f"{w:.1f}" for w in report.wall_s)
    lines = [f"backend: flower ({report.runtime}, {report.clients} clients), wall time {walls} s"]
    note = " (default; give --delta)" if report.delta_is_default else ""
    if report.dropout_rate > 0:
        lines.append(f"dropouts: each client misses each round with probability {report.dropout_rate:g}")
    lines.append(f"local-DP epsilon per client (certified Clip21 accountant, delta {report.delta:g}{note}):")
    for seed, per_client in report.per_seed:
        lines.append(f" seed {seed}:")
        for c in per_client:
            eps = "inf (no noise)" if math.isinf(c.epsilon) else fmt_up(c.epsilon, 6)
            lines.append(f"  client {c.index}: {c.messages} messages sent, epsilon {eps}")
    return "\n".join(lines)


def app_config(
    algo: str,
    problem: str,
    *,
    problem_options: dict[str, Any] | None = None,
    seed: int = 0,
    **options: Any,
) -> dict[str, Any]:
    """The run config of a Flower App for ``algo`` on ``problem`` (options as for ``dptheory run``;
    ``--eps/--delta`` calibration included), for deployments started by hand."""
    from dptheory import runner
    from dptheory.problems import get_problem

    check_flower_options(algo, runtime="deployment", device=options.get("device", "cpu"))
    popts = dict(problem_options or {})
    prob = get_problem(problem, **popts)
    s = runner.settings_for(algo, problem, defaults=prob, seed=seed, **options)
    z, _ = runner.resolve_noise(s, prob)
    cfg = flower_config(s, problem, popts, z, len(prob.clients), seed)
    cfg["result-path"] = "clip21-result.json"
    return cfg


def write_app(path: str, algo: str, problem: str, **kwargs: Any) -> str:
    """Write a Flower App directory (``pyproject.toml``) running ``algo`` on ``problem`` with the
    dptheory apps; ``flwr run PATH CONNECTION`` submits it. Returns the pyproject's path."""
    import os

    from dptheory.integrations.flower.launch import write_app_dir

    os.makedirs(path, exist_ok=True)
    return write_app_dir(path, app_config(algo, problem, **kwargs))
