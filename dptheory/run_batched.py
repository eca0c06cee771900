"""The batched engine's side of :func:`dptheory.runner.run`: when it applies, and how its iterates
become the same :class:`~dptheory.runner.SeedRun` records the reference engine makes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accounting.errors import InvalidParameter
from dptheory.runner import BATCH_NOISE_ENTRIES, CLIP21_FAMILY, RunSettings, SeedRun, build_optimizer


def batched_unsupported_reason(s: RunSettings, prob: Any, opt: Any) -> str | None:
    """Why this run cannot take the batched engine (None: it can); ``opt`` is its first optimizer."""
    from dptheory.optim import batched

    if prob.losses_closed_form is None:
        return "the problem has no closed-form loss"
    if s.algo in CLIP21_FAMILY:
        why = batched.clip_unsupported_reason(opt, prob.grads_closed_form)
    else:
        why = batched.dp_unsupported_reason(opt, prob.grads_closed_form)
    if why is None and s.steps * _held_per_step(s, prob, opt) > BATCH_NOISE_ENTRIES:
        why = f"more than {BATCH_NOISE_ENTRIES} drawn numbers per seed (steps x draws per step, held)"
    return why


def _held_per_step(s: RunSettings, prob: Any, opt: Any) -> int:
    """How many drawn numbers the batched engine holds per seed and step (noise; with q < 1 the
    batch draw, n uniforms or b indices; D2P2's fresh projection matrix)."""
    noisy = bool(np.any(np.asarray(opt.z) != 0))
    if s.algo in CLIP21_FAMILY:
        return prob.dim * len(prob.clients) if noisy else 0
    projection = getattr(opt, "projection", "none")
    p = sum(opt.p_layer.values()) if projection != "none" else prob.dim  # p_l = min(p, d_l)
    if s.sample_rate >= 1 and projection == "none":
        return prob.dim if noisy else 0
    held = p + (prob.size if s.sample_rate < 1 else 0)
    return held + (prob.dim * p if projection == "fresh" else 0)


def run_batched(s: RunSettings, prob: Any, z: float, fp: Any, first: Any, bar: Any) -> list[SeedRun]:
    """All seeds through dptheory.optim.batched, in chunks that bound the noise held in memory."""
    from dptheory.optim import batched

    width = _held_per_step(s, prob, first)
    chunk = max(1, min(s.seeds, BATCH_NOISE_ENTRIES // max(1, s.steps * width)))
    rec = batched.record_steps(s.steps, s.record_every)
    runs: list[SeedRun] = []
    for start in range(0, s.seeds, chunk):
        seeds = list(range(s.seed + start, s.seed + min(s.seeds, start + chunk)))
        opts = [first if sd == s.seed else build_optimizer(s, prob, z, sd) for sd in seeds]
        if s.algo in CLIP21_FAMILY:
            index = [int(c[0]) for c in prob.clients]
            xs = batched.run_clip(opts, prob.grads_closed_form, index, s.record_every)
        else:
            xs = batched.run_dp(opts, prob.grads_closed_form, s.record_every)
        runs.extend(_seed_runs(prob, fp, seeds, rec, xs.numpy()))
        if bar is not None:
            bar.update(len(seeds) * s.steps)
    return runs


def _seed_runs(prob: Any, fp: Any, seeds: list[int], rec: list[int], xs: np.ndarray) -> list[SeedRun]:
    """:class:`SeedRun` records of batched iterates ``xs`` (K, R, d), as :func:`_run_one` makes them."""
    bad = ~np.all(np.isfinite(xs), axis=2)
    if bad.any():
        k, r = np.argwhere(bad)[0]
        raise InvalidParameter("--lr", f"the iterates diverged (non-finite x at step {rec[r]}); lower --lr")
    m = prob.metrics_batched(xs)
    if fp is not None:
        gap = np.maximum(fp.lo - xs, 0) + np.maximum(xs - fp.hi, 0)
        m["dist_to_fixed_point"] = np.linalg.norm(gap, axis=2)
    else:
        m["dist_to_fixed_point"] = np.full(xs.shape[:2], math.nan)
    out = []
    for k, seed in enumerate(seeds):
        traj = {key: np.asarray(v[k], dtype=float) for key, v in m.items()}
        traj["step"] = np.array(rec)
        if prob.dim == 1:
            traj["x"] = xs[k, :, 0].copy()
        x = xs[k, -1].copy()
        metrics: dict[str, float | None] = {
            "final_loss": float(traj["loss"][-1]),
            "grad_norm": float(traj["grad_norm"][-1]),
            "dist_to_opt": float(traj["dist_to_opt"][-1]),
            "dist_to_fixed_point": float(traj["dist_to_fixed_point"][-1]) if fp is not None else None,
            "x": float(x[0]) if prob.dim == 1 else None,
        }
        out.append(SeedRun(seed=seed, x=x, metrics=metrics, trajectory=traj))
    return out
