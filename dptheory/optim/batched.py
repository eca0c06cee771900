"""Seed-batched runs on toy problems: K seeds of one configuration as one tensor program.

Why: the papers' counterexamples are 1-D problems with a handful of samples run for thousands of
steps and many seeds; there, torch's per-call overhead, not arithmetic, is the cost. This module
runs K seeds at once with a leading seed dimension, closed-form per-sample gradients
(``Problem.grads_closed_form``) and no Python work in the step loop beyond the torch calls.

Bit-for-bit equal to the reference. Each seed's trajectory is the one the reference optimizer
(``dptheory.optim``, ``kernel='vmap'``) produces for that seed, bit for bit
(tests/optim/test_toy_runs_bit_equal.py). That holds because:

* the arithmetic is the reference's, op for op, on the same float64 values: elementwise ops are
  correctly rounded whatever the batch shape, and every reduction runs along the same axis with
  the same length as in the reference (per-sample tensors this small are summed elementwise
  there too, :data:`dptheory.optim.base.ELEMENTWISE_SUM_MAX`);
* the randomness comes from each seed's own generator, built by the reference optimizer itself,
  and is drawn in the reference's order. The reference draws a (d,) noise vector per step; for
  d < 16 torch fills it element by element from the generator (its vectorised Box-Muller path
  starts at 16 contiguous entries), so one draw into a strided (non-contiguous) view of length
  T d yields the concatenation of the T per-step draws. For d >= 16 we replay the T calls.

Sampled minibatches (q < 1, Poisson or fixed size) and D2P2-SGD's random projection draw more
than noise between steps; :mod:`dptheory.optim.batched_sampling` replays those draws per seed and
sums each seed's batch in the reference's order and reduction shape.

Scope (:func:`dp_unsupported_reason`, :func:`clip_unsupported_reason`): CPU, problems with closed
forms; DPSGD, DiceSGD and the D2P2 family (D2P-SGD; D2P2-SGD and DP2-SGD with a fresh or fixed
projection when the model has one coordinate), full batch or sampled, on float64 parameter
tensors of at most :data:`~dptheory.optim.base.ELEMENTWISE_SUM_MAX` entries each (larger ones the
reference sums with BLAS); several tensors are one concatenated vector whose per-tensor
reductions run span by span. Clip-SGD, Clip21-SGD and Clip21-SGD2M with one sample per client
(there q < 1 still means the full local gradient) on one float64 vector. Everything else
(DiceAdam, a projection of more than one coordinate) runs on the reference path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

#: torch's CPU normal_ fills tensors of at least this many contiguous entries with a vectorised
#: Box-Muller, smaller ones element by element (aten/src/ATen/native/cpu/DistributionTemplates.h).
_SERIAL_NORMAL_BELOW = 16


def normal_stream(gen: torch.Generator, steps: int, shape: tuple[int, ...], dtype: torch.dtype) -> Tensor:
    """``(steps, *shape)``: the values of ``steps`` successive ``torch.randn(shape, generator=gen)``.

    Leaves ``gen`` in the state those calls would leave it in.
    """
    n = int(np.prod(shape)) if shape else 1
    if n < _SERIAL_NORMAL_BELOW:
        buf = torch.empty(2 * steps * n, dtype=dtype)
        view = buf[::2]  # non-contiguous: torch's serial path, one element at a time, in order
        view.normal_(generator=gen)
        return view.reshape((steps, *shape))
    out = torch.empty((steps, *shape), dtype=dtype)
    for t in range(steps):
        out[t] = torch.randn(shape, generator=gen, dtype=dtype)
    return out


def record_steps(steps: int, every: int) -> list[int]:
    """Steps at which the runner records (0, every multiple of ``every``, and the last step)."""
    out = [0] + [t for t in range(every, steps + 1, every)]
    if out[-1] != steps:
        out.append(steps)
    return out


def _common_unsupported_reason(opt: Any, grads_fn: Callable | None) -> str | None:
    """What every batched path needs: closed-form gradients and the CPU."""
    if grads_fn is None:
        return "the problem has no closed-form per-sample gradient"
    if opt.device.type != "cpu":
        return "batched runs are CPU only"
    return None


# ------------------------------------------------------------------ DPSGD, DiceSGD, D2P-SGD
def dp_unsupported_reason(opt: Any, grads_fn: Callable | None) -> str | None:
    """Why ``opt`` (a reference optimizer) cannot run batched, or None when it can."""
    from dptheory.optim import D2P2SGD, DPSGD, DiceAdam, DiceSGD
    from dptheory.optim.base import ELEMENTWISE_SUM_MAX

    reason = _common_unsupported_reason(opt, grads_fn)
    if reason:
        return reason
    for p in opt.params.values():
        if p.dtype != torch.float64:
            return "parameters are not float64"
        if p.numel() > ELEMENTWISE_SUM_MAX:  # the reference then sums per-sample tensors with BLAS
            return f"a parameter tensor of more than {ELEMENTWISE_SUM_MAX} entries"
    if isinstance(opt, DiceAdam):
        return "DiceAdam"
    if isinstance(opt, D2P2SGD) and opt.projection != "none" and opt.model_dim != 1:
        # a projection's products A^T g and A (.) sum over coordinates in BLAS's own order
        return "random projection (D2P2-SGD, DP2-SGD) of more than one coordinate"
    if not isinstance(opt, (DPSGD, DiceSGD, D2P2SGD)):
        return f"{type(opt).__name__} has no batched form"
    return None


def _noise(opts: Sequence[Any], steps: int, d: int, std_of: Callable[[Any, int], float]) -> Tensor | None:
    """(K, T, d) noise as the reference adds it (``randn * std``), or None when every std is 0.

    With every std 0 the reference's noise is +-0, which leaves every iterate unchanged, and with
    q = 1 nothing else is drawn from the generator: skipping the draws changes no value.
    """
    if not any(np.any(o.z != 0) for o in opts):
        return None
    stds = [[std_of(o, t) for t in range(steps)] for o in opts]
    out = torch.empty((len(opts), steps, d), dtype=torch.float64)
    for k, o in enumerate(opts):
        raw = normal_stream(o.generator, steps, (d,), torch.float64)
        out[k] = raw * torch.tensor(stds[k], dtype=torch.float64)[:, None]
    return out


def run_dp(opts: Sequence[Any], grads_fn: Callable[[Tensor], Tensor], every: int) -> Tensor:
    """Run the K reference optimizers ``opts`` (same configuration, own seeds) for ``opts[0].steps``
    steps, batched. Returns the iterates at :func:`record_steps` as (K, R, d); the optimizers'
    own state is not advanced (they only lend their settings and generators)."""
    from dptheory.optim import D2P2SGD, DiceSGD

    o0 = opts[0]
    steps = int(o0.steps)
    x = torch.stack([torch.cat([p.reshape(-1) for p in o.params.values()]) for o in opts])  # (K, d)
    k_seeds, d = x.shape
    rec = record_steps(steps, every)
    xs = torch.empty((k_seeds, len(rec), d), dtype=x.dtype)
    xs[:, 0] = x
    # several tensors: x is their concatenation (base.flatten's order) and every per-tensor
    # reduction of the reference runs on its own span, made contiguous as the reference's tensor
    spans, at = [], 0
    for p in o0.params.values():
        spans.append((at, at + p.numel()))
        at += p.numel()
    single = len(spans) == 1

    if isinstance(o0, DiceSGD):
        std_of = type(o0).sigma1
    elif isinstance(o0, D2P2SGD):
        std_of = type(o0).sigma_eps
    else:
        std_of = type(o0).sigma1
    projected = isinstance(o0, D2P2SGD) and o0.projection != "none"
    sums: Callable[[int, Tensor], Tensor]
    if o0.sample_rate >= 1.0 and not projected and single:
        noise = _noise(opts, steps, d, std_of)

        def sums(t: int, rows: Tensor) -> Tensor:
            return rows.sum(dim=1)

    else:  # the reference's draws, replayed per seed (batched_sampling)
        sums, noise, matrices = _replayed(opts, steps, d, std_of)
    if projected:
        return _run_projected(opts, grads_fn, x, xs, rec, sums, noise, matrices)
    if not single:
        batch_sum = sums

        def sums(t: int, rows: Tensor) -> Tensor:  # base.weighted_sum: tensor by tensor
            return torch.cat([batch_sum(t, rows[:, :, a:z].contiguous()) for a, z in spans], dim=1)

    # Each line below is the reference's operation (dpsgd.py, dicesgd.py, d2p2.py, base.py), with the
    # seed dimension in front; ``c / t`` for a Python float c is torch's ``t.reciprocal() * c``
    # (Tensor.__rdiv__), so it is written that way, while DiceSGD's clip(e, C2) divides in Python
    # floats on CPU (base.clip_vector), i.e. correctly rounded: a true tensor division here.
    # ``sums(t, rows)`` is the sum over step t's batch (all N rows when q = 1).
    lr, b = o0.lr, o0.expected_batch_size
    w = None if noise is None else noise.unbind(1)  # per-step (K, d) views, taken once

    def sq_norms(g: Tensor) -> Tensor:
        """Squared per-sample norms (K, N, 1): per tensor, then added in order (base.per_sample_norms).
        A sum over one entry returns that entry (0 + v = v for v >= +0), so it is skipped."""
        if single:
            return g.pow(2) if d == 1 else g.pow(2).sum(dim=2, keepdim=True)
        total = None
        for a, z in spans:
            sq = g[:, :, a:z].pow(2)
            sq = sq if z - a == 1 else sq.sum(dim=2, keepdim=True)
            total = sq if total is None else total + sq
        assert total is not None
        return total

    def tree_sq(e: Tensor) -> Tensor:
        """Squared norm of each seed's whole state (K, 1), as base.tree_norm before its sqrt."""
        if single:
            return e.pow(2) if d == 1 else e.pow(2).sum(dim=1, keepdim=True)
        total = None
        for a, z in spans:
            sq = e[:, a:z].pow(2)
            sq = sq if z - a == 1 else sq.sum(dim=1, keepdim=True)
            total = sq if total is None else total + sq
        assert total is not None
        return total

    if isinstance(o0, DiceSGD):
        c1, mode, gamma, residual = o0.c1, o0.clip_mode, o0.gamma, o0.residual_clip
        c2 = torch.tensor(o0.c2, dtype=torch.float64)
        inv_b = 1.0 / b
        e = torch.zeros_like(x)

        def step(x: Tensor, t: int) -> Tensor:
            nonlocal e
            g = grads_fn(x)  # (K, N, d)
            norms = sq_norms(g).sqrt()
            if mode == "flat":
                s = torch.clamp(norms.reciprocal() * c1, max=1.0)
            else:
                s = (norms + gamma).reciprocal() * c1
            clipped = sums(t, s * g)
            if residual is None:
                raw = sums(t, g)
            else:
                rn = torch.abs(1.0 - s) * norms
                keep = torch.clamp(rn.reciprocal() * residual, max=1.0)
                keep = torch.where(rn > 0, keep, torch.ones_like(keep))
                raw = sums(t, (s + (1.0 - s) * keep) * g)
            ne = tree_sq(e).sqrt()
            ce = e * torch.where(ne <= c2, 1.0, c2 / ne)
            v = inv_b * clipped + ce
            mean_g = inv_b * raw
            upd = v if w is None else v + w[t]
            e = e + mean_g - v
            return x - lr * upd

    elif isinstance(o0, D2P2SGD):  # projection 'none' (D2P-SGD)
        gamma, inv_b = o0.gamma, 1.0 / b

        def step(x: Tensor, t: int) -> Tensor:
            g = grads_fn(x)
            norms = sq_norms(g).sqrt()
            gt = inv_b * sums(t, (norms + gamma).reciprocal() * g)
            if w is not None:
                gt = gt + w[t]
            return x - lr * gt

    else:  # DPSGD
        c, flat, gamma = o0.c, o0.clip_mode == "flat", o0.gamma
        scale = lr / b

        def step(x: Tensor, t: int) -> Tensor:
            g = grads_fn(x)
            norms = sq_norms(g).sqrt()
            f = torch.clamp(norms.reciprocal() * c, max=1.0) if flat else (norms + gamma).reciprocal() * c
            clipped = sums(t, f * g)
            if w is not None:
                clipped = clipped + w[t]
            return x - scale * clipped

    return _iterate(step, x, xs, rec)


def _replayed(
    opts: Sequence[Any], steps: int, d: int, std_of: Callable[[Any, int], float]
) -> tuple[Callable[[int, Tensor], Tensor], Tensor, Callable[[int], Tensor] | None]:
    """From each seed's replayed draws (:func:`~dptheory.optim.batched_sampling.replay_draws`):
    the batch sums, the noise (K, T, d) as the reference adds it (``randn * std``; D2P2-SGD with a
    projection: (K, T, p)) and, for a projection, ``a_of(t)``: step t's matrices (K, d, p)."""
    from dptheory.optim import D2P2SGD
    from dptheory.optim.batched_sampling import BatchSums, replay_draws

    o0 = opts[0]
    key = next(iter(o0.params))
    projection = o0.projection if isinstance(o0, D2P2SGD) else "none"
    if projection == "none":  # base.tree_randn: one draw per tensor, in order
        shapes = [tuple(t.shape) for t in o0.params.values()]
    else:  # one tensor of one entry (dp_unsupported_reason); d2p2.py: A_k, then eps_k
        p = o0.p_layer[key]
        shapes = [(d, p), (p,)] if projection == "fresh" else [(p,)]
    selections, noise, fresh = [], [], []
    std_cache: dict[tuple, Tensor] = {}
    for o in opts:
        sel, normals = replay_draws(o, steps, shapes)
        selections.append(sel)
        # std_of reads z_t and the optimizer's constants, shared by the seeds of one configuration
        sig = (o.z.tobytes(), o.expected_batch_size, getattr(o, "c", None), getattr(o, "c1", None))
        stds = std_cache.get(sig)
        if stds is None:
            stds = torch.tensor([std_of(o, t) for t in range(steps)], dtype=torch.float64)
            std_cache[sig] = stds
        drawn = normals[-1:] if projection != "none" else normals
        noise.append(torch.cat([v.reshape(steps, -1) for v in drawn], dim=1) * stds[:, None])
        if projection == "fresh":
            fresh.append(normals[0] * o.sigma_a[key])
    if o0.sample_rate >= 1.0:

        def sums(t: int, rows: Tensor) -> Tensor:
            return rows.sum(dim=1)

    else:
        sums = BatchSums(selections, o0.dataset_size)
    a_of: Callable[[int], Tensor] | None = None
    if projection == "fresh":
        per_step = torch.stack(fresh).unbind(1)
        a_of = per_step.__getitem__
    elif projection == "fixed":
        fixed = torch.stack([o.A[key] for o in opts])
        a_of = lambda t: fixed  # noqa: E731 - drawn once, at construction
    return sums, torch.stack(noise), a_of


def _run_projected(
    opts: Sequence[Any],
    grads_fn: Callable[[Tensor], Tensor],
    x: Tensor,
    xs: Tensor,
    rec: list[int],
    sums: Callable[[int, Tensor], Tensor],
    noise: Tensor,
    a_of: Callable[[int], Tensor] | None,
) -> Tensor:
    """D2P2-SGD / DP2-SGD with a random projection, for one coordinate (d = p = 1, the scope of
    :func:`dp_unsupported_reason`). There the reference's ``A^T g`` and ``A proj`` are (1, 1)
    matrix-vector products: one product each, correctly rounded, hence ``a * g`` and ``a * proj``
    bit for bit (tests/optim/test_batched_sampled.py)."""
    assert a_of is not None and x.shape[1] == 1
    o0 = opts[0]
    lr, gamma, inv_b = o0.lr, o0.gamma, 1.0 / o0.expected_batch_size
    root_p = math.sqrt(1)  # d2p2.py divides by sqrt(p), p = 1 here
    eps = noise.unbind(1)  # per-step (K, 1)

    def step(x: Tensor, t: int) -> Tensor:
        g = grads_fn(x)  # (K, N, 1)
        norms = g.pow(2).sqrt()  # d = 1: the reference's sum over one entry is that entry
        gk = inv_b * sums(t, (norms + gamma).reciprocal() * g)  # lines 4-5
        a = a_of(t)[:, :, 0]  # (K, 1)
        proj = (a * gk) / root_p + eps[t]  # line 6: A^T g / sqrt(p) + eps
        return x - lr * (a * proj)  # lines 6-7: x - alpha A proj

    return _iterate(step, x, xs, rec)


def _iterate(step: Callable[[Tensor, int], Tensor], x: Tensor, xs: Tensor, rec: list[int]) -> Tensor:
    """Run ``step`` from ``x`` up to ``rec[-1]``, writing the iterates at ``rec`` into ``xs``."""
    t = 0
    for r, until in enumerate(rec[1:], start=1):
        while t < until:
            x = step(x, t)
            t += 1
        xs[:, r] = x
    return xs


# ------------------------------------------------------------------ the clip family
def clip_unsupported_reason(fed: Any, grads_fn: Callable | None) -> str | None:
    """Why a reference :class:`~dptheory.optim.FederatedClipping` cannot run batched, or None."""
    # q < 1 needs no support of its own here: a client's local batch is max(1, round(q m)) = m = 1
    # sample, i.e. its full local gradient, and the reference then draws no batch (clip21.py)
    reason = _common_unsupported_reason(fed, grads_fn)
    if reason:
        return reason
    if any(c.m != 1 for c in fed.clients):
        return "a client holds more than one sample"
    p = fed.server.params
    if len(p) != 1 or next(iter(p.values())).dim() != 1:
        return "parameters are not one vector"
    if next(iter(p.values())).dtype != torch.float64:
        return "parameters are not float64"
    return None


def run_clip(
    feds: Sequence[Any], grads_fn: Callable[[Tensor], Tensor], sample_index: Sequence[int], every: int
) -> Tensor:
    """Batched Clip-SGD / Clip21-SGD / Clip21-SGD2M over the K reference drivers ``feds``.

    ``sample_index[i]`` is client i's sample in the problem's data order (one each). Returns the
    server's iterates at :func:`record_steps` as (K, R, d).
    """
    f0 = feds[0]
    steps = int(f0.steps)
    key = next(iter(f0.server.params))
    x = torch.stack([f.server.params[key] for f in feds])  # (K, d)
    k_seeds, d = x.shape
    n = len(f0.clients)
    rec = record_steps(steps, every)
    xs = torch.empty((k_seeds, len(rec), d), dtype=x.dtype)
    xs[:, 0] = x
    noise = None
    if any(np.any(f.z != 0) for f in feds):
        stds = [[f.noise_std(t) for t in range(steps)] for f in feds]
        noise = torch.empty((k_seeds, steps, n, d), dtype=torch.float64)
        for k, f in enumerate(feds):
            std = torch.tensor(stds[k], dtype=torch.float64)[:, None]
            for i, c in enumerate(f.clients):
                noise[k, :, i] = normal_stream(c.generator, steps, (d,), torch.float64) * std
    w = None if noise is None else noise.unbind(1)  # per-step (K, n, d) views
    idx = None  # client i holds sample i: no gather needed
    if list(sample_index) != list(range(n)):
        idx = torch.as_tensor(list(sample_index), dtype=torch.long)
    rule, tau, beta, beta_hat, lr = f0.rule, f0.tau, f0.beta, f0.beta_hat, f0.lr
    g_loc = torch.zeros((k_seeds, n, d), dtype=torch.float64)  # clients' g_i
    v_loc = torch.zeros_like(g_loc)  # clients' v_i
    g_srv = torch.zeros_like(x)

    def clip(v: Tensor) -> Tensor:
        nrm = torch.linalg.vector_norm(v, dim=2, keepdim=True)
        return v * torch.clamp(nrm.reciprocal() * tau, max=1.0)  # tau / nrm, as Tensor.__rdiv__

    def step(x: Tensor, t: int) -> Tensor:
        nonlocal g_loc, v_loc, g_srv
        if rule != "clip":
            x = x - lr * g_srv
        grad = grads_fn(x)  # (K, N, d) per sample; client i's full local gradient is its sample's
        if idx is not None:
            grad = grad.index_select(1, idx)
        if rule == "clip":
            c = clip(grad)
        elif rule == "clip21":
            c = clip(grad - g_loc)
            g_loc = g_loc + c
        else:
            v_loc = (1 - beta) * v_loc + beta * grad
            c = clip(v_loc - g_loc)
            g_loc = g_loc + beta_hat * c
        msg = c if w is None else c + w[t]
        mean = msg.mean(dim=1)
        if rule == "clip":
            return x - lr * mean
        g_srv = g_srv + mean if rule == "clip21" else g_srv + beta_hat * mean
        return x

    t = 0
    for r, until in enumerate(rec[1:], start=1):
        while t < until:
            x = step(x, t)
            t += 1
        xs[:, r] = x
    return xs
