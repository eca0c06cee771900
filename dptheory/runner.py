"""Run one algorithm on one toy problem for K seeds and measure it against the exact answers.

``run(algo, problem, ...) -> RunResult``. The runner turns CLI-level choices into an optimizer
(noise multiplier given, or calibrated from (eps, delta) through :mod:`dptheory.api`; decaying
schedules from :mod:`accounting.schedules`), steps it, and records loss, ||grad f||, distance
to the optimum and to the clipped method's exact fixed point along the way.

Engines: where the problem has closed forms (full batch or sampled), all K seeds run as one
batched tensor program (:mod:`dptheory.optim.batched`, the same iterates bit for bit); otherwise
one reference optimizer per seed steps in turn. Metrics are recorded every ``record_every`` steps.
The optimizer's B is the accountant's public ``q N`` (:func:`public_batch_size`).

Defaults (documented in ``dptheory run --help``): noise multiplier 0, i.e. a *non-private*
run that isolates the optimisation effect of clipping; the output says ``private: false``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting.errors import InvalidParameter

ALGOS = ("dpsgd", "dicesgd", "clipsgd", "clip21sgd", "clip21sgd2m", "d2p2sgd", "d2psgd", "dp2sgd")
CLIP21_FAMILY = ("clipsgd", "clip21sgd", "clip21sgd2m")
D2P_FAMILY = ("d2p2sgd", "d2psgd", "dp2sgd")
DEFAULT_SCHEDULE = {"d2p2sgd": "inv-sqrt-k", "d2psgd": "inv-sqrt-k", "dp2sgd": "constant"}
# name of each algorithm in the accounting registry (accounting/algorithms/registry.py)
ACCOUNTING_ALGO = {
    "dpsgd": "dpsgd",
    "dicesgd": "dicesgd",
    "clipsgd": "clip21sgd2m",
    "clip21sgd": "clip21sgd2m",
    "clip21sgd2m": "clip21sgd2m",
    "d2p2sgd": "d2p2sgd",
    "d2psgd": "d2psgd",
    "dp2sgd": "dp2sgd",
}
METRIC_KEYS = ("final_loss", "grad_norm", "dist_to_opt", "dist_to_fixed_point", "x")


@dataclass
class RunSettings:
    """Every knob of a run, already defaulted and validated."""

    algo: str
    problem: str
    steps: int
    lr: float
    sample_rate: float
    seeds: int = 1
    seed: int = 0
    device: str = "cpu"
    c1: float = 1.0
    c2: float | None = None
    clip_mode: str = "flat"
    tau: float = 1.0
    beta: float = 1.0
    beta_hat: float = 1.0
    gamma: float = 0.01
    residual_clip: float | None = None
    projection_dim: int | None = None
    projection: str = "fresh"
    schedule: str = "constant"
    noise_multiplier: float = 0.0
    eps: float | None = None
    delta: float | None = None
    mode: str = "certified"
    record_every: int = 1
    #: how the steps ran: ``batched`` (all seeds as one tensor program, dptheory.optim.batched) or
    #: ``reference`` (one optimizer per seed, step by step); set by :func:`run`
    engine: str = "reference"

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class SeedRun:
    seed: int
    x: np.ndarray
    metrics: dict[str, float | None]
    trajectory: dict[str, np.ndarray]


@dataclass
class RunResult:
    settings: RunSettings
    problem_constants: dict[str, Any]
    optimum: np.ndarray
    optimum_kind: str
    fixed_point: Any  # FixedPoint | None
    privacy: dict[str, Any]
    mechanism: dict[str, Any]
    runs: list[SeedRun] = field(default_factory=list)

    def summary(self) -> dict[str, dict[str, Any] | None]:
        """Per metric: mean, std (ddof=1 when K > 1) and the per-seed values."""
        out: dict[str, dict[str, Any] | None] = {}
        for key in METRIC_KEYS:
            vals = [r.metrics.get(key) for r in self.runs]
            if any(v is None for v in vals):
                out[key] = None
                continue
            arr = np.asarray(vals, dtype=float)
            std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
            out[key] = {"mean": float(arr.mean()), "std": std, "values": arr.tolist()}
        return out

    def to_json(self) -> dict[str, Any]:
        fp = self.fixed_point.to_json() if self.fixed_point is not None else None
        return {
            "algo": self.settings.algo,
            "problem": self.settings.problem,
            "settings": self.settings.to_json(),
            **self.summary(),
            "optimum": self.optimum.tolist(),
            "optimum_kind": self.optimum_kind,
            "fixed_point": fp,
            "privacy": self.privacy,
            "mechanism": self.mechanism,
            "problem_constants": self.problem_constants,
        }


# ---------------------------------------------------------------------------------------------
#: Bounds of ``dptheory run`` (documented in ``--help``): beyond them a toy run is not a toy.
MAX_SEEDS = 10_000
MAX_TOTAL_STEPS = 10**8
MAX_DIM = 4096


def check_finite(option: str, v: float | None) -> None:
    """Refuse a non-finite float option (None passes): one InvalidParameter naming it."""
    if v is not None and (isinstance(v, float) and not math.isfinite(v)):
        raise InvalidParameter(option, f"must be a finite number (got {v!r})")


def check_options(
    algo: str,
    *,
    steps: int | None = None,
    lr: float | None = None,
    sample_rate: float | None = None,
    seeds: int = 1,
    seed: int = 0,
    device: str = "auto",
    c1: float | None = None,
    c2: float | None = None,
    clip_mode: str = "flat",
    tau: float | None = None,
    beta: float | None = None,
    beta_hat: float | None = None,
    gamma: float | None = None,
    residual_clip: float | None = None,
    projection_dim: int | None = None,
    projection: str | None = None,
    schedule: str | None = None,
    noise_multiplier: float | None = None,
    eps: float | None = None,
    delta: float | None = None,
    mode: str = "certified",
) -> None:
    """Every check of :func:`settings_for` that needs no problem: run before torch is imported,
    so that bad input is refused at once (``dptheory run --steps 0`` took 15 s to be refused)."""
    if algo not in ALGOS:
        raise InvalidParameter("--algo", f"must be one of {', '.join(ALGOS)} (got {algo!r})")
    for opt, v in (
        ("--lr", lr),
        ("--sample-rate", sample_rate),
        ("--c1", c1),
        ("--c2", c2),
        ("--tau", tau),
        ("--beta", beta),
        ("--beta-hat", beta_hat),
        ("--gamma", gamma),
        ("--residual-clip", residual_clip),
        ("--noise-multiplier", noise_multiplier),
        ("--eps", eps),
        ("--delta", delta),
    ):
        check_finite(opt, v)
    # options that belong to another algorithm are errors, not silently ignored
    if c2 is not None and algo != "dicesgd":
        raise InvalidParameter("--c2", "only applies to --algo dicesgd")
    if residual_clip is not None and algo != "dicesgd":
        raise InvalidParameter("--residual-clip", "only applies to --algo dicesgd")
    if tau is not None and algo not in CLIP21_FAMILY:
        raise InvalidParameter("--tau", f"only applies to --algo {', '.join(CLIP21_FAMILY)}")
    for opt, v in (("--beta", beta), ("--beta-hat", beta_hat)):
        if v is not None and algo != "clip21sgd2m":
            raise InvalidParameter(
                opt, "only applies to --algo clip21sgd2m (clip21sgd is beta = beta_hat = 1)"
            )
    if projection_dim is not None and algo not in ("d2p2sgd", "dp2sgd"):
        raise InvalidParameter("--projection-dim", "only applies to --algo d2p2sgd, dp2sgd")
    if gamma is not None and algo not in D2P_FAMILY and clip_mode != "automatic":
        raise InvalidParameter(
            "--gamma", "only applies to --algo d2p2sgd, d2psgd, dp2sgd or --clip-mode automatic"
        )
    if schedule is not None and algo not in D2P_FAMILY and schedule != "constant":
        raise InvalidParameter(
            "--schedule", "decaying schedules only apply to --algo d2p2sgd, d2psgd, dp2sgd"
        )
    if schedule is not None and schedule not in ("constant", "inv-k", "inv-sqrt-k", "exp"):
        raise InvalidParameter("--schedule", f"must be constant, inv-k, inv-sqrt-k or exp (got {schedule!r})")
    if algo == "dp2sgd" and schedule not in (None, "constant"):
        raise InvalidParameter("--schedule", "dp2sgd uses a constant noise level")
    if noise_multiplier is not None and eps is not None:
        raise InvalidParameter("--eps", "give either --noise-multiplier or --eps/--delta, not both")
    if eps is not None and delta is None:
        raise InvalidParameter("--delta", "--eps needs --delta")
    if delta is not None and eps is None and not (noise_multiplier or 0) > 0:
        raise InvalidParameter(
            "--delta", "needs --eps (calibration) or --noise-multiplier > 0 (epsilon report)"
        )
    if eps is not None and not eps > 0:
        raise InvalidParameter("--eps", f"must be > 0 (got {eps!r})")
    if delta is not None and not 0 < delta < 1:
        raise InvalidParameter("--delta", f"must be in (0, 1) (got {delta!r})")
    if noise_multiplier is not None and noise_multiplier < 0:
        raise InvalidParameter("--noise-multiplier", f"must be >= 0 (got {noise_multiplier!r})")
    if seeds < 1 or int(seeds) != seeds:
        raise InvalidParameter("--seeds", f"must be an integer >= 1 (got {seeds!r})")
    if device not in ("auto", "cpu", "cuda"):
        raise InvalidParameter("--device", f"must be auto, cpu or cuda (got {device!r})")
    if clip_mode not in ("flat", "automatic"):
        raise InvalidParameter("--clip-mode", f"must be flat or automatic (got {clip_mode!r})")
    if clip_mode == "automatic" and algo not in ("dpsgd", "dicesgd"):
        raise InvalidParameter("--clip-mode", "only applies to --algo dpsgd, dicesgd")
    if steps is not None and (int(steps) != steps or steps < 1):
        raise InvalidParameter("--steps", f"must be an integer >= 1 (got {steps!r})")
    if lr is not None and not lr > 0:
        raise InvalidParameter("--lr", f"must be > 0 (got {lr!r})")
    if sample_rate is not None and not 0 < sample_rate <= 1:
        raise InvalidParameter("--sample-rate", f"must be in (0, 1] (got {sample_rate!r})")
    for opt, v in (
        ("--c1", c1),
        ("--c2", c2),
        ("--tau", tau),
        ("--gamma", gamma),
        ("--residual-clip", residual_clip),
    ):
        if v is not None and not v > 0:
            raise InvalidParameter(opt, f"must be > 0 (got {v!r})")
    for opt, v in (("--beta", beta), ("--beta-hat", beta_hat)):
        if v is not None and not 0 < v <= 1:
            raise InvalidParameter(opt, f"must be in (0, 1] (got {v!r})")
    if projection_dim is not None and (int(projection_dim) != projection_dim or projection_dim < 1):
        raise InvalidParameter("--projection-dim", f"must be an integer >= 1 (got {projection_dim!r})")
    if seed < 0:
        raise InvalidParameter("--seed", f"must be >= 0 (got {seed!r})")
    if seeds > MAX_SEEDS:
        raise InvalidParameter("--seeds", f"must be at most {MAX_SEEDS} (got {seeds})")
    if steps is not None and steps * seeds > MAX_TOTAL_STEPS:
        raise InvalidParameter(
            "--steps", f"steps x seeds must be at most {MAX_TOTAL_STEPS:.0e} (got {steps * seeds})"
        )


def settings_for(algo: str, problem: str, *, defaults: Any = None, **options: Any) -> RunSettings:
    """Validate the choices (:func:`check_options`, whose keywords these are) and fill defaults
    (``defaults`` is the built Problem)."""
    check_options(algo, **options)
    import inspect

    o = {
        name: par.default
        for name, par in inspect.signature(check_options).parameters.items()
        if par.kind is inspect.Parameter.KEYWORD_ONLY
    }
    o.update(options)
    steps, lr, sample_rate, seeds = o["steps"], o["lr"], o["sample_rate"], o["seeds"]
    c1, c2, tau, gamma, beta, beta_hat = o["c1"], o["c2"], o["tau"], o["gamma"], o["beta"], o["beta_hat"]
    projection_dim, projection, schedule = o["projection_dim"], o["projection"], o["schedule"]
    noise_multiplier, eps, delta = o["noise_multiplier"], o["eps"], o["delta"]
    residual_clip = o["residual_clip"]
    seed, device, clip_mode, mode = o["seed"], o["device"], o["clip_mode"], o["mode"]
    prob = defaults
    steps = prob.default_steps if steps is None else steps
    if int(steps) != steps or steps < 1:
        raise InvalidParameter("--steps", f"must be an integer >= 1 (got {steps!r})")
    lr = prob.default_lr if lr is None else lr
    if not lr > 0:
        raise InvalidParameter("--lr", f"must be > 0 (got {lr!r})")
    q = prob.default_sample_rate if sample_rate is None else sample_rate
    if not 0 < q <= 1:
        raise InvalidParameter("--sample-rate", f"must be in (0, 1] (got {q!r})")
    if algo == "clip21sgd2m":
        beta = 0.5 if beta is None else beta
        beta_hat = 0.5 if beta_hat is None else beta_hat
    else:
        beta = beta_hat = 1.0
    return RunSettings(
        algo=algo,
        problem=problem,
        steps=int(steps),
        lr=float(lr),
        sample_rate=float(q),
        seeds=int(seeds),
        seed=int(seed),
        device=device,
        c1=1.0 if c1 is None else float(c1),
        c2=None if c2 is None else float(c2),
        clip_mode=clip_mode,
        tau=1.0 if tau is None else float(tau),
        beta=float(beta),
        beta_hat=float(beta_hat),
        gamma=0.01 if gamma is None else float(gamma),
        residual_clip=None if residual_clip is None else float(residual_clip),
        projection_dim=None if projection_dim is None else int(projection_dim),
        projection=projection or ("none" if algo == "d2psgd" else "fresh"),
        schedule=schedule or DEFAULT_SCHEDULE.get(algo, "constant"),
        noise_multiplier=0.0 if noise_multiplier is None else float(noise_multiplier),
        eps=eps,
        delta=delta,
        mode=mode,
        record_every=max(1, int(steps) // 200),
    )


def _schedule_values(name: str, base: float, steps: int) -> np.ndarray:
    """Per-step multipliers z_k from accounting.schedules (the accountant's own reading).

    ``inv-k`` is sigma_k^2 = sigma^2/k (D2P2 text, Thm 1), ``inv-sqrt-k`` is sigma_k^2 = sigma^2/sqrt(k)
    (D2P2 Table 3); see accounting/schedules.py. Base 0 (non-private) gives zeros.
    """
    if base == 0 or name == "constant":
        return np.full(steps, float(base))
    from accounting.schedules import noise_multipliers

    return np.asarray(noise_multipliers(name, base, steps), dtype=float)


def public_batch_size(s: RunSettings, prob: Any) -> float:
    """B = q N with N the problem's (public) sample count: the one constant both the accountant and
    the optimizer use (the optimizer gets it as ``expected_batch_size``)."""
    return s.sample_rate * prob.size


def check_one_projected_tensor(s: RunSettings, prob: Any) -> None:
    """Refuse a projected D2P2 run on a problem with more than one parameter tensor.

    Why: the optimizer projects each parameter tensor with its own matrix (dptheory.optim.d2p2,
    "per layer"), whose sensitivity factor is :func:`accounting.projection.layerwise_fresh_factor_x`
    and is driven by the *smallest* layer, while :func:`accounting_options` describes one
    whole-model projection (``model_dim``, ``projection_dim``), which would understate epsilon
    for a model with small layers. Every problem of dptheory.problems has one tensor ``x``
    (tests/api/test_batch_size_public.py checks it), where both readings coincide; a new problem with
    several tensors must first get per-layer accounting here (as dptheory.integrations.opacus has).
    """
    if s.algo in ("d2p2sgd", "dp2sgd") and s.projection != "none" and len(prob.x0) > 1:
        raise InvalidParameter(
            "--problem",
            f"{prob.name} has {len(prob.x0)} parameter tensors; dptheory run accounts D2P2's projection "
            "for one tensor only (per-layer accounting: dptheory.integrations.opacus)",
        )


def accounting_options(s: RunSettings, prob: Any) -> dict[str, Any]:
    """Keyword options for dptheory.api.calibrate/epsilon describing this run's mechanism."""
    opts: dict[str, Any] = {"sample_rate": s.sample_rate, "steps": s.steps}
    n = prob.size
    if s.algo in ("dpsgd", "dicesgd") or s.algo in D2P_FAMILY:
        opts["dataset_size"] = n
        opts["batch_size"] = public_batch_size(s, prob)
    if s.algo == "dicesgd":
        opts["c1"] = s.c1
        opts["c2"] = s.c1 if s.c2 is None else s.c2
        if s.residual_clip is not None:
            opts["residual_clip"] = s.residual_clip
        if s.clip_mode == "automatic":
            opts["clip_mode"] = "automatic"
            opts["gamma"] = s.gamma
    if s.algo in D2P_FAMILY:
        opts["schedule"] = s.schedule
        if s.algo != "d2psgd":
            opts["projection_dim"] = s.projection_dim or max(1, prob.dim // 2)
            opts["model_dim"] = prob.dim
            opts["projection"] = s.projection
    if s.algo in CLIP21_FAMILY:
        opts = {"tau": s.tau, "clients": len(prob.clients), "rounds": s.steps, "steps": s.steps}
    return opts


def resolve_noise(s: RunSettings, prob: Any) -> tuple[float, dict[str, Any]]:
    """Base noise multiplier and a privacy record (calibrated via dptheory.api when eps is given)."""
    info: dict[str, Any] = {"private": False, "noise_multiplier": s.noise_multiplier, "schedule": s.schedule}
    if s.eps is None:
        info["private"] = s.noise_multiplier > 0
        if s.delta is not None and s.noise_multiplier > 0:  # report the epsilon this z buys
            from dptheory import api

            rep = api.epsilon(
                defaults="paper",
                noise_multiplier=s.noise_multiplier,
                delta=s.delta,
                algo=ACCOUNTING_ALGO[s.algo],
                mode=s.mode,
                **accounting_options(s, prob),
            )
            info.update(epsilon=float(rep.epsilon), delta=s.delta, mode=rep.mode, report=rep.to_json())
        return s.noise_multiplier, info
    from dptheory.optim.noise import resolve_noise_multiplier

    z, report = resolve_noise_multiplier(
        ACCOUNTING_ALGO[s.algo], eps=s.eps, delta=s.delta, mode=s.mode, **accounting_options(s, prob)
    )
    info.update(
        private=True,
        noise_multiplier=z,
        calibrated_from={"eps": s.eps, "delta": s.delta, "mode": s.mode},
        report=report.to_json() if hasattr(report, "to_json") else str(report),
    )
    return z, info


def build_optimizer(s: RunSettings, prob: Any, z: float, seed: int):
    """Instantiate the optimizer of ``s.algo`` on ``prob`` with base noise multiplier ``z``."""
    from dptheory import optim

    zs: float | np.ndarray = z
    if s.algo in D2P_FAMILY and s.schedule != "constant":
        zs = _schedule_values(s.schedule, z, s.steps)
    common = dict(lr=s.lr, noise_multiplier=zs, steps=s.steps, seed=seed, device=s.device)
    if s.algo in CLIP21_FAMILY:
        rule = {"clipsgd": "clip", "clip21sgd": "clip21", "clip21sgd2m": "clip21-2m"}[s.algo]
        return optim.FederatedClipping(
            prob.x0,
            prob.loss_fn,
            prob.client_data(),
            rule=rule,
            tau=s.tau,
            beta=s.beta,
            beta_hat=s.beta_hat,
            sample_rate=s.sample_rate,
            **common,
        )
    # B is the accountant's public constant q N (accounting_options), never re-derived from the data
    common.update(sample_rate=s.sample_rate, expected_batch_size=public_batch_size(s, prob))
    if s.algo == "dpsgd":
        return optim.DPSGD(
            prob.x0, prob.loss_fn, prob.data, c=s.c1, clip_mode=s.clip_mode, gamma=s.gamma, **common
        )
    if s.algo == "dicesgd":
        return optim.DiceSGD(
            prob.x0,
            prob.loss_fn,
            prob.data,
            c1=s.c1,
            c2=s.c2,
            clip_mode=s.clip_mode,
            gamma=s.gamma,
            residual_clip=s.residual_clip,
            **common,
        )
    cls = {"d2p2sgd": optim.D2P2SGD, "d2psgd": optim.D2PSGD, "dp2sgd": optim.DP2SGD}[s.algo]
    kw: dict[str, Any] = dict(gamma=s.gamma, schedule=s.schedule)
    if s.algo != "d2psgd":
        kw.update(projection_dim=s.projection_dim or max(1, prob.dim // 2), projection=s.projection)
    return cls(prob.x0, prob.loss_fn, prob.data, **kw, **common)


def client_batch(s: RunSettings, prob: Any) -> int | None:
    """Local minibatch size of the clip family (None = full local gradient)."""
    if s.algo not in CLIP21_FAMILY or s.sample_rate >= 1:
        return None
    sizes = {max(1, round(s.sample_rate * len(c))) for c in prob.clients}
    return sizes.pop() if len(sizes) == 1 else -1


ENGINES = ("auto", "batched", "reference")
#: The batched engine holds the draws (noise; batches, projections) of a chunk of seeds in memory:
#: at most this many numbers.
BATCH_NOISE_ENTRIES = 2**22


def run(
    algo: str,
    problem: str,
    *,
    problem_options: dict[str, Any] | None = None,
    progress: bool | None = None,
    engine: str = "auto",
    **options: Any,
) -> RunResult:
    """Run ``algo`` on ``problem`` for ``seeds`` seeds; see :func:`settings_for` for options.

    ``engine``: ``reference`` steps one optimizer per seed; ``batched`` runs all seeds as one tensor
    program (dptheory.optim.batched: same iterates bit for bit, refused where unsupported);
    ``auto`` (default) takes ``batched`` wherever it applies.
    """
    if engine not in ENGINES:
        raise InvalidParameter("--engine", f"must be one of {', '.join(ENGINES)} (got {engine!r})")
    from dptheory.optim.base import resolve_device
    from dptheory.problems import get_problem

    popts = dict(problem_options or {})
    if options.get("c1") is not None and algo not in ("dpsgd", "dicesgd") and problem != "dicesgd-b1":
        # an option that does nothing is an error: clip21 algorithms clip at --tau, D2P normalises
        raise InvalidParameter(
            "--c1", "only applies to --algo dpsgd, dicesgd (or sets C of --problem dicesgd-b1); clip21: --tau"
        )
    if problem == "dicesgd-b1" and options.get("c1") is not None:
        popts.setdefault("c", options["c1"])  # --c1 sets the instance's C
    prob = get_problem(problem, **popts)
    s = settings_for(algo, problem, defaults=prob, **options)
    dev = resolve_device(s.device)
    s.device = dev.type
    check_one_projected_tensor(s, prob)
    z, privacy = resolve_noise(s, prob)
    fp = prob.clipped_fixed_point(
        s.algo, c1=s.c1, c2=s.c2, tau=s.tau, gamma=s.gamma, client_batch=client_batch(s, prob)
    )
    result = RunResult(
        settings=s,
        problem_constants=prob.constants,
        optimum=prob.x_star,
        optimum_kind=prob.optimum_kind,
        fixed_point=fp,
        privacy=privacy,
        mechanism={},
    )
    total = s.steps * s.seeds
    show = progress if progress is not None else total >= 20000
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=total, file=sys.stderr, desc=f"{s.algo} on {problem}", leave=False, mininterval=0.5)
    try:
        first = build_optimizer(s, prob, z, s.seed)
        result.mechanism = first.mechanism()
        privacy["noise_std"] = first.noise_std(0)
        from dptheory.run_batched import batched_unsupported_reason, run_batched

        why_not = batched_unsupported_reason(s, prob, first)
        if engine == "batched" and why_not is not None:
            raise InvalidParameter("--engine", f"batched does not apply here: {why_not}")
        if engine != "reference" and why_not is None:
            s.engine = "batched"
            result.runs.extend(run_batched(s, prob, z, fp, first, bar))
        else:
            s.engine = "reference"
            for k in range(s.seeds):
                seed = s.seed + k
                opt = first if k == 0 else build_optimizer(s, prob, z, seed)
                result.runs.append(_run_one(opt, prob, s, fp, seed, bar))
                first = None  # let the first optimizer go once it has run
    finally:
        if bar is not None:
            bar.close()
    return result


class _Replay:
    """Stands in for an optimizer: ``params`` is iterate t of a recorded run, ``step()`` moves on."""

    def __init__(self, iterates: Any, template: Any) -> None:
        import torch

        from dptheory.optim.base import unflatten

        self._params = [unflatten(torch.as_tensor(x, dtype=torch.float64), template) for x in iterates]
        self.t = 0

    @property
    def params(self) -> Any:
        return self._params[self.t]

    def step(self) -> None:
        self.t += 1


def run_from_iterates(iterates: Any, prob: Any, s: RunSettings, fp: Any, seed: int) -> SeedRun:
    """The :class:`SeedRun` of iterates ``x^0 .. x^steps`` computed elsewhere (another backend,
    e.g. Flower): every metric is recorded exactly as for a run of this module's optimizers."""
    if len(iterates) != s.steps + 1:
        raise ValueError(f"expected {s.steps + 1} iterates (x^0 .. x^{s.steps}), got {len(iterates)}")
    return _run_one(_Replay(iterates, prob.x0), prob, s, fp, seed, None)


def _record(prob: Any, x: np.ndarray, fp: Any) -> dict[str, float]:
    m = prob.metrics(x)
    m["dist_to_fixed_point"] = fp.distance(x) if fp is not None else math.nan
    return m


def _run_one(opt: Any, prob: Any, s: RunSettings, fp: Any, seed: int, bar: Any) -> SeedRun:
    steps_rec, recs, xs = [], [], []
    x = prob.flat(opt.params)
    steps_rec.append(0)
    recs.append(_record(prob, x, fp))
    xs.append(x.copy())
    for t in range(1, s.steps + 1):
        opt.step()
        if t % s.record_every == 0 or t == s.steps:
            x = prob.flat(opt.params)
            if not np.all(np.isfinite(x)):
                raise InvalidParameter(
                    "--lr", f"the iterates diverged (non-finite x at step {t}); lower --lr"
                )
            steps_rec.append(t)
            recs.append(_record(prob, x, fp))
            if prob.dim == 1:
                xs.append(x.copy())
        if bar is not None:
            bar.update(1)
    x = prob.flat(opt.params)
    last = recs[-1]
    metrics: dict[str, float | None] = {
        "final_loss": last["loss"],
        "grad_norm": last["grad_norm"],
        "dist_to_opt": last["dist_to_opt"],
        "dist_to_fixed_point": last["dist_to_fixed_point"] if fp is not None else None,
        "x": float(x[0]) if prob.dim == 1 else None,
    }
    traj = {key: np.array([r[key] for r in recs]) for key in recs[0]}
    traj["step"] = np.array(steps_rec)
    if prob.dim == 1:
        traj["x"] = np.array([v[0] for v in xs])
    return SeedRun(seed=seed, x=x, metrics=metrics, trajectory=traj)


# plotting lives in dptheory.run_plot; re-exported here for the CLI and scripts
from dptheory.run_plot import check_plot_path, plot_result, save_figure_atomic  # noqa: E402

__all__ = [
    "run",
    "run_from_iterates",
    "RunResult",
    "RunSettings",
    "SeedRun",
    "check_plot_path",
    "plot_result",
    "save_figure_atomic",
]
