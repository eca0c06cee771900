"""Sampled minibatches (q < 1) for the seed-batched engine: each seed's draws, and its batch sums.

Draws. Per step the reference (:meth:`dptheory.optim.base.PrivateOptimizer.sample_batch`, then
the optimizer's ``_step``) takes from the seed's one generator first the batch
(``torch.rand(n) < q`` for Poisson sampling, ``torch.randperm(n)[:b]`` for fixed-size batches),
then the step's normals (D2P2-SGD's fresh projection matrix, then the noise). The batch draw sits
between two steps' normals, so no single call yields a seed's stream, and torch's fill kernels
consume the generator differently by size (vectorised normals from 16 entries), so one big draw
split afterwards would not be the same numbers. :func:`replay_draws` therefore makes the
reference's calls themselves, in its order, per seed, before the step loop: the same calls on
the same generator give the same numbers. Only this replay loops over seeds; the steps run
batched.

Sums over a batch. The reference sums its b selected rows, in its index order (Poisson: the
ascending order of ``nonzero``; fixed size: the order of ``randperm``), as a (b, d) tensor reduced
along dim 0. torch's CPU sum picks its accumulation order (vector lanes, scalar tail) from the
reduction's length, so a masked sum over all n rows, zeros for the unselected, is not the same
bits once n reaches the vector width. :class:`BatchSums` instead gathers, per step, each seed's
selected rows in the reference's order and groups the seeds by batch size b: a group is one
contiguous (K_b, b, d) tensor reduced along dim 1, row by row the reduction the reference runs on
its (b, d) batch -- the per-row identity the full-batch path already rests on
(tests/optim/test_toy_runs_bit_equal.py); tests/optim/test_batched_sampled.py checks the iterates bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor


def fixed_batch_size(opt: Any) -> int:
    """The reference's fixed-size batch: ``min(n, max(1, round(B)))`` (base.sample_batch)."""
    return min(opt.dataset_size, max(1, round(opt.expected_batch_size)))


def replay_draws(
    opt: Any, steps: int, normal_shapes: Sequence[tuple[int, ...]]
) -> tuple[Tensor | None, list[Tensor]]:
    """Replay ``steps`` steps of ``opt``'s draws: per step the batch (when q < 1), then one
    ``torch.randn`` per entry of ``normal_shapes`` (float64), exactly as the reference calls them.

    Returns ``(selection, normals)``: selection is (steps, n) bool (Poisson: the mask),
    (steps, b) int64 (fixed size: the batch's indices in randperm's order) or None (q = 1: the
    reference draws no batch); ``normals[j]`` is (steps, *normal_shapes[j]). Leaves
    ``opt.generator`` where those calls leave it.
    """
    gen, n = opt.generator, opt.dataset_size
    assert opt.device.type == "cpu"
    # ``torch.rand(n)`` / ``torch.randn(shape)`` are ``empty(...)`` then ``uniform_`` / ``normal_``
    # in place; filling contiguous row views of preallocated buffers runs the same kernels on the
    # same sizes (hence the same draws) without a tensor allocation and argument parsing per call.
    normals = [torch.empty((steps, *shape), dtype=torch.float64) for shape in normal_shapes]
    per_step = list(zip(*[buf.unbind(0) for buf in normals], strict=True)) if normals else [()] * steps
    if opt.sample_rate >= 1.0:
        for rows in per_step:
            for v in rows:
                v.normal_(generator=gen)
        return None, normals
    if opt.sampling == "poisson":
        # the reference's ``torch.rand(n)`` is in the default dtype; its kernel fills element by
        # element whatever the size
        uniforms = torch.empty((steps, n), dtype=torch.get_default_dtype())
        for u, rows in zip(uniforms.unbind(0), per_step, strict=True):
            u.uniform_(generator=gen)
            for v in rows:
                v.normal_(generator=gen)
        return uniforms < opt.sample_rate, normals
    b = fixed_batch_size(opt)
    index = []
    for rows in per_step:
        index.append(torch.randperm(n, generator=gen)[:b])
        for v in rows:
            v.normal_(generator=gen)
    return torch.stack(index), normals


class BatchSums:
    """``sums(t, rows)``: per seed, the sum of ``rows`` (K, n, d) over that seed's batch at step t,
    in the reference's order and reduction shape (module docstring). An empty batch sums to +0,
    as the reference's ``tree_zeros``."""

    def __init__(self, selections: Sequence[Tensor], n: int) -> None:
        """``selections[k]``: seed k's :func:`replay_draws` selection (all Poisson or all fixed)."""
        sel = torch.stack(list(selections)).numpy()  # (K, T, n) bool or (K, T, b) int64
        k_seeds, steps = sel.shape[:2]
        #: per step: (flat row indices into (K n, d), [(start, stop, K_b, b)], seed order or None)
        self.plan: list[tuple[Tensor, list[tuple[int, int, int, int]], Tensor | None]] = []
        base = (np.arange(k_seeds) * n)[:, None]
        if sel.dtype != np.bool_:  # fixed size: one group, every seed, in seed order
            b = sel.shape[2]
            for t in range(steps):
                flat = torch.from_numpy((base + sel[:, t]).reshape(-1))
                self.plan.append((flat, [(0, k_seeds * b, k_seeds, b)], None))
            return
        counts = sel.sum(axis=2)  # (K, T)
        order = np.argsort(counts, axis=0, kind="stable")  # per step: seeds grouped by batch size
        by_size = np.take_along_axis(counts, order, axis=0)
        # every step's selected rows, seed by seed in ``order``, ascending sample index within a seed
        steps_sel = np.take_along_axis(sel.transpose(1, 0, 2), order.T[:, :, None], axis=1)  # (T, K, n)
        tt, kk, cols = np.nonzero(steps_sel)
        flat = torch.from_numpy(order.T[tt, kk] * n + cols)
        ends = np.cumsum(by_size.sum(axis=0)).tolist()
        identity = np.arange(k_seeds)
        for t in range(steps):
            sizes = by_size[:, t].tolist()
            groups, start, first = [], 0, 0
            for j in range(1, k_seeds + 1):
                if j == k_seeds or sizes[j] != sizes[first]:
                    kb, b = j - first, sizes[first]
                    groups.append((start, start + kb * b, kb, b))
                    start, first = start + kb * b, j
            col = order[:, t]
            back = None if np.array_equal(col, identity) else torch.from_numpy(np.argsort(col, kind="stable"))
            self.plan.append((flat[ends[t] - start : ends[t]], groups, back))

    def __call__(self, t: int, rows: Tensor) -> Tensor:
        flat, groups, back = self.plan[t]
        d = rows.shape[2]
        picked = rows.reshape(-1, d).index_select(0, flat)
        parts = [picked[a:z].view(kb, b, d).sum(dim=1) for a, z, kb, b in groups]
        out = parts[0] if len(parts) == 1 else torch.cat(parts)
        return out if back is None else out.index_select(0, back)
