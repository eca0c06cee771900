"""Shared machinery of the private optimizers: devices, seeds, sampling, per-sample gradients.

Parameters are a ``dict[str, Tensor]`` (a pytree ``torch.func`` understands), and a loss is a
*per-sample* function ``loss_fn(params, sample) -> scalar`` where ``sample`` is a dict of
tensors without the batch dimension. Per-sample gradients come from
``vmap(grad(loss_fn), in_dims=(None, 0))``: one batched call per step, no Python loop over
samples. Every random draw (batch, noise, projection) goes through one ``torch.Generator``
owned by the optimizer, so a run is a pure function of its seed on CPU.

Speed: on small models torch.func's per-op dispatch, not arithmetic, dominates a step. Long
runs therefore replay the per-sample kernel (gradients + norms + clip factors + weighted sums)
as a traced graph of the same aten ops (:class:`TracedKernel`, ``kernel='auto'``); the numbers
are those of the vmap path (checked when tracing, and in tests/optim/test_optim_traced_kernel.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from accounting.errors import InvalidParameter

Params = dict[str, Tensor]
Batch = dict[str, Tensor]
LossFn = Callable[[Params, Batch], Tensor]

SAMPLINGS = ("poisson", "fixed")
KERNELS = ("auto", "traced", "vmap")

#: ``kernel='auto'`` traces the per-sample kernel when the run has at least this many steps
#: (known ``steps``), or after this many kernel calls (``steps=None``). Tracing costs about
#: 0.1-0.3 s once (~0.6 s for the first trace in a process, which imports sympy); replaying
#: saves roughly 0.3-0.8 ms per step on small models (break-even measured at 200-350 steps on
#: the toy problems, benchmarks/README.md), so shorter runs would not repay it.
AUTO_TRACE_STEPS = 500


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``auto`` -> CUDA when present, else CPU; ``cuda`` without CUDA is a usage error."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InvalidParameter("--device", "cuda requested but CUDA is not available (use auto or cpu)")
        return torch.device(device)
    raise InvalidParameter("--device", f"must be auto, cpu or cuda (got {device!r})")


def make_generator(device: torch.device, seed: int) -> torch.Generator:
    """One generator per run: all randomness of a run flows from ``seed``."""
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen


def per_sample_grad_fn(loss_fn: LossFn) -> Callable[[Params, Batch], Params]:
    """``(params, batch) -> {name: (B, *shape)}`` per-sample gradients via torch.func."""
    from torch.func import grad, vmap

    return vmap(grad(loss_fn), in_dims=(None, 0))


def batch_loss_fn(loss_fn: LossFn) -> Callable[[Params, Batch], Tensor]:
    """``(params, batch) -> (B,)`` per-sample losses (vectorised)."""
    from torch.func import vmap

    return vmap(loss_fn, in_dims=(None, 0))


def per_sample_norms(grads: Params) -> Tensor:
    """L2 norm of each sample's *whole* gradient (all tensors flattened together)."""
    sq = None
    for g in grads.values():
        s = g.reshape(g.shape[0], -1).pow(2).sum(dim=1)
        sq = s if sq is None else sq + s
    assert sq is not None
    return sq.sqrt()


#: Per-sample tensors with at most this many entries are summed as ``(w * g).sum(0)`` rather than by
#: a BLAS tensordot. Why: BLAS dot/gemv kernels fuse multiply-adds and pick their accumulation
#: order by shape, so a seed-batched run (dptheory.optim.batched) could not reproduce them bit for
#: bit; an elementwise product followed by torch's reduction gives the same bits per row however
#: many seeds are stacked (tests/optim/test_toy_runs_bit_equal.py). Larger tensors keep tensordot (speed).
ELEMENTWISE_SUM_MAX = 64


def weighted_sum(grads: Params, weights: Tensor) -> Params:
    """``sum_i weights[i] * grads[i]`` per tensor (see :data:`ELEMENTWISE_SUM_MAX` for how)."""
    out = {}
    for k, g in grads.items():
        if math.prod(g.shape[1:]) <= ELEMENTWISE_SUM_MAX:  # static dims only (traced kernels)
            out[k] = (weights.reshape((-1,) + (1,) * (g.dim() - 1)) * g).sum(dim=0)
        else:
            out[k] = torch.tensordot(weights, g, dims=([0], [0]))
    return out


def clip_factors(norms: Tensor, c: float, *, mode: str = "flat", gamma: float = 0.0) -> Tensor:
    """Per-sample scale factors.

    ``flat``: ``clip(g, C) = min(1, C/||g||) g`` (DiceSGD paper eq. (2)); a zero gradient keeps
    factor 1. ``automatic``: ``C g / (||g|| + gamma)`` (Bu et al.); its norm is < C, so the
    sensitivity (and hence the noise calibration) is the same as flat clipping at C.
    """
    if mode == "flat":
        return torch.clamp(c / norms, max=1.0)
    if mode == "automatic":
        return c / (norms + gamma)
    raise InvalidParameter("--clip-mode", f"must be flat or automatic (got {mode!r})")


def clip_vector(v: Params, c: float) -> Params:
    """``min(1, C/||v||) v`` on the whole pytree (used for DiceSGD's ``clip(e, C2)``).

    On CPU the factor is a Python float (reading a CPU scalar costs nothing). On an accelerator
    it stays a 0-d tensor, ``clamp(C/||v||, max=1)`` (``v = 0`` gives ``C/0 = inf -> 1``), so the
    step never waits for the device.
    """
    n = tree_norm(v)
    if n.device.type == "cpu":
        nf = float(n)
        f: float | Tensor = 1.0 if nf <= c else c / nf
    else:
        f = torch.clamp(c / n, max=1.0)
    return {k: t * f for k, t in v.items()}


def tree_norm(v: Params) -> Tensor:
    """L2 norm of all tensors of ``v`` flattened together (0-d tensor)."""
    total = None
    for t in v.values():
        s = t.pow(2).sum()
        total = s if total is None else total + s
    assert total is not None
    return total.sqrt()


def tree_zeros(v: Params) -> Params:
    return {k: torch.zeros_like(t) for k, t in v.items()}


def tree_randn(v: Params, gen: torch.Generator, std: float) -> Params:
    """Isotropic Gaussian with the shapes of ``v`` (drawn even when std is 0: keeps streams aligned)."""
    return {
        k: torch.randn(t.shape, generator=gen, device=t.device, dtype=t.dtype) * std for k, t in v.items()
    }


def flatten(v: Params) -> Tensor:
    return torch.cat([t.reshape(-1) for t in v.values()])


def unflatten(flat: Tensor, like: Params) -> Params:
    out, i = {}, 0
    for k, t in like.items():
        n = t.numel()
        out[k] = flat[i : i + n].reshape(t.shape)
        i += n
    return out


def to_device(data: Batch, device: torch.device) -> Batch:
    return {k: t.to(device) for k, t in data.items()}


def noise_schedule(noise_multiplier: float | Sequence[float] | np.ndarray, steps: int | None) -> np.ndarray:
    """Normalise a scalar or per-step multiplier into an array (scalar -> length-1, reused)."""
    z = np.atleast_1d(np.asarray(noise_multiplier, dtype=float))
    if z.ndim != 1 or z.size == 0:
        raise InvalidParameter("--noise-multiplier", "must be a number or a 1-D sequence")
    if not np.all(np.isfinite(z)) or np.any(z < 0):
        raise InvalidParameter("--noise-multiplier", "must be finite and >= 0")
    if steps is not None and z.size not in (1, steps):
        raise InvalidParameter("--noise-multiplier", f"schedule has {z.size} entries, expected {steps}")
    return z


class TracedKernel:
    """Replay of a torch.func kernel as a flat graph of aten ops, traced once per run.

    Why: ``vmap(grad(loss_fn))`` re-enters torch.func's Python and dispatch layers for every op
    at every step; on small models that overhead, not arithmetic, dominates (profile in
    benchmarks/README.md). ``make_fx`` records the aten ops that torch.func emits *below* those
    layers, so replaying the graph runs the same kernels on the same shapes: the numbers are
    the eager numbers (checked at trace time, and in tests/optim/test_optim_traced_kernel.py).

    The batch size is the only symbolic dimension (every other shape is fixed for a run; a
    different signature falls back to eager), so Poisson batches of any size reuse one graph.
    Shape guards recorded while tracing are checked once per new batch size; sizes they do not
    admit (in particular 0 and 1, which tracing specialises) run eagerly. Anything that fails
    to trace, or a graph whose output differs from eager beyond float rounding on the tracing
    batch, disables the replay for good: correctness never depends on the fast path.

    Assumes what docs/architecture.md already asks of a loss: a pure function of
    ``(params, sample)``; Python state read by ``loss_fn`` is frozen at trace time.
    """

    def __init__(self, fn: Callable[[Params, Batch], Any], *, trace_at: int = 1) -> None:
        self.fn = fn
        self.trace_at = int(trace_at)
        self.calls = 0
        self.graph: Callable[..., Any] | None = None
        self.failed: str | None = None
        self.trace_seconds: float | None = None
        self._signature: tuple | None = None
        self._guards: list[Any] = []
        self._ranges: list[tuple[Any, Any]] = []
        self._sizes: dict[int, bool] = {}
        self._out_spec: Any = None

    def info(self) -> dict[str, Any]:
        state = "traced" if self.graph is not None else ("vmap (trace failed)" if self.failed else "vmap")
        return {"mode": state, "trace_seconds": self.trace_seconds, "reason": self.failed}

    def __call__(self, params: Params, batch: Batch) -> Any:
        self.calls += 1
        b = int(next(iter(batch.values())).shape[0])
        if self.failed is not None or b < 2:
            return self.fn(params, batch)
        if self.graph is None:
            if self.calls < self.trace_at:
                return self.fn(params, batch)
            return self._trace(params, batch)
        if _signature(params, batch) != self._signature or not self._admits(b):
            return self.fn(params, batch)
        try:
            return self._replay(params, batch)
        except Exception as exc:  # never observed; if the graph cannot run, eager decides
            self.graph, self.failed = None, f"replay at batch size {b}: {type(exc).__name__}: {exc}"[:300]
            return self.fn(params, batch)

    def _replay(self, params: Params, batch: Batch) -> Any:
        import torch.utils._pytree as pytree

        assert self.graph is not None
        spec, is_tensor = self._out_spec
        it = iter(self.graph(*params.values(), *batch.values()))
        return pytree.tree_unflatten([next(it) if t else None for t in is_tensor], spec)

    def _admits(self, b: int) -> bool:
        ok = self._sizes.get(b)
        if ok is None:
            import sympy

            val = sympy.Integer(b)
            try:
                ok = all(lo <= b and (hi is None or b <= hi) for lo, hi in self._ranges)
                ok = ok and all(bool(g.xreplace({s: val for s in g.free_symbols})) for g in self._guards)
            except (TypeError, ValueError):  # a guard sympy cannot decide: run this size eagerly
                ok = False
            self._sizes[b] = ok
        return ok

    def _trace(self, params: Params, batch: Batch) -> Any:
        import time

        t0 = time.perf_counter()
        reference = self.fn(params, batch)
        try:
            graph, spec, env, batch_syms = _make_graph(self.fn, params, batch)
            self.graph, self._out_spec = graph, spec
            self._signature = _signature(params, batch)
            self._guards = [g.expr for g in env.guards]
            self._ranges = []
            for s in batch_syms:
                vr = env.var_to_range.get(s)
                if vr is not None:
                    hi = vr.upper
                    self._ranges.append(
                        (int(vr.lower), int(hi) if getattr(hi, "is_Integer", False) else None)
                    )
            b = int(next(iter(batch.values())).shape[0])
            if not self._admits(b):
                raise RuntimeError(f"trace guards do not admit its own batch size {b}")
            replay = self._replay(params, batch)
            _check_close(replay, reference)
        except Exception as exc:  # any failure: stay on the eager path, say why in info()
            self.graph, self.failed = None, f"{type(exc).__name__}: {exc}"[:300]
        self.trace_seconds = time.perf_counter() - t0
        return reference


def _signature(params: Params, batch: Batch) -> tuple:
    """What a traced graph is specialised to: names, dtypes, devices, shapes but the batch size."""
    return (
        tuple((k, t.dtype, t.device, tuple(t.shape)) for k, t in params.items()),
        tuple((k, t.dtype, t.device, tuple(t.shape[1:])) for k, t in batch.items()),
    )


def _make_graph(fn: Callable[[Params, Batch], Any], params: Params, batch: Batch):
    """``make_fx`` of ``fn`` on fake inputs whose batch dimension alone is symbolic.

    ``duck_shape=False`` keeps the batch size from being unified with an equal-valued model
    dimension (which would make the graph read the wrong size on other batch sizes).
    """
    import torch.utils._pytree as pytree
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    env = ShapeEnv(duck_shape=False)
    # Real tensors a loss closes over (constants) become graph constants.
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)

    def fake(t: Tensor, batched: bool) -> Tensor:
        dims = [DimDynamic.DYNAMIC if (batched and i == 0) else DimDynamic.STATIC for i in range(t.dim())]
        return mode.from_tensor(t, symbolic_context=StatelessSymbolicContext(dynamic_sizes=dims))

    pkeys, bkeys = list(params), list(batch)
    spec: list[Any] = []

    def flat_fn(*flat: Tensor) -> list[Tensor]:
        p = dict(zip(pkeys, flat[: len(pkeys)], strict=True))
        bt = dict(zip(bkeys, flat[len(pkeys) :], strict=True))
        leaves, out_spec = pytree.tree_flatten(fn(p, bt))
        spec.append((out_spec, [isinstance(v, Tensor) for v in leaves]))
        return [v for v in leaves if isinstance(v, Tensor)]

    fakes = [fake(t, False) for t in params.values()] + [fake(t, True) for t in batch.values()]
    batch_syms = [t.shape[0].node.expr for t in fakes[len(pkeys) :]]
    gm = make_fx(flat_fn, tracing_mode="symbolic")(*fakes)
    _outer_products_as_mul(gm)
    _drop_identities(gm)
    return gm.forward, spec[-1], env, batch_syms


def _same_layout(a: Any, b: Any) -> bool:
    """Same dtype, shape and strides, compared symbol by symbol (no new shape guards)."""

    def key(d: Any) -> Any:
        return ("sym", d.node.expr) if isinstance(d, torch.SymInt) else ("int", int(d))

    try:
        return (
            a.dtype == b.dtype
            and a.dim() == b.dim()
            and all(key(x) == key(y) for x, y in zip(a.shape, b.shape, strict=True))
            and all(key(x) == key(y) for x, y in zip(a.stride(), b.stride(), strict=True))
        )
    except Exception:  # unknown metadata: keep the node
        return False


def _drop_identities(gm: Any) -> None:
    """Remove nodes that return their input unchanged: each costs a dispatch per step.

    * views (``view``, ``expand``, ``permute``, ...) whose output has the input's dtype, shape and
      strides: the same memory seen the same way, so using the input is the same tensor;
    * ``x * 1`` and ``x / 1`` (vmap/grad emit these for unit scalars): bit-identical values,
      dropped only when the result has the input's layout and neither the input nor the result
      (nor any view of either) is written in place anywhere in the graph, so the aliasing the
      drop introduces can never be observed.
    """
    graph = gm.graph
    parent: dict[Any, Any] = {}

    def find(n: Any) -> Any:
        while parent.get(n, n) is not n:
            n = parent[n]
        return n

    aten = torch.ops.aten
    # Views that keep the storage offset: same shape and strides => the very same tensor.
    plain_views = {
        aten.view.default,
        aten._unsafe_view.default,
        aten.expand.default,
        aten.permute.default,
        aten.transpose.int,
        aten.t.default,
        aten.alias.default,
        aten.squeeze.dim,
        aten.squeeze.dims,
        aten.squeeze.default,
        aten.unsqueeze.default,
    }

    def is_view(n: Any) -> bool:
        """Output may share the input's memory (schema alias, or ``_unsafe_view``)."""
        if n.op != "call_function":
            return False
        schema = getattr(n.target, "_schema", None)
        aliases = schema is not None and any(r.alias_info is not None for r in schema.returns)
        return aliases or n.target is aten._unsafe_view.default

    for n in graph.nodes:
        if is_view(n) and n.args and isinstance(n.args[0], torch.fx.Node):
            parent[find(n)] = find(n.args[0])
    mutated = set()
    for n in graph.nodes:
        schema = getattr(n.target, "_schema", None)
        if n.op == "call_function" and schema is not None and schema.is_mutable:
            mutated.update(find(a) for a in n.args if isinstance(a, torch.fx.Node))
    unit_ops = {aten.mul.Scalar, aten.mul.Tensor, aten.div.Scalar, aten.div.Tensor}
    changed = False
    for n in list(graph.nodes):
        if n.op != "call_function" or not n.args or not isinstance(n.args[0], torch.fx.Node):
            continue
        src, out, vin = n.args[0], n.meta.get("val"), n.args[0].meta.get("val")
        if not isinstance(out, Tensor) or not isinstance(vin, Tensor) or not _same_layout(out, vin):
            continue
        if n.target in plain_views:
            pass
        elif n.target in unit_ops and len(n.args) == 2 and not n.kwargs:
            scalar = n.args[1]
            if isinstance(scalar, bool) or not isinstance(scalar, (int, float)) or scalar != 1:
                continue
            if find(src) in mutated or find(n) in mutated:
                continue
        else:
            continue
        n.replace_all_uses_with(src)
        graph.erase_node(n)
        changed = True
    if changed:
        graph.lint()
        gm.recompile()


def _outer_products_as_mul(gm: Any) -> None:
    """Rewrite ``bmm(a, b)`` with contraction length 1 as the broadcast product ``a * b``.

    vmap turns each per-sample outer product (the weight gradient of any linear layer:
    ``delta_i a_i^T``) into a batched matmul with inner dimension 1, which BLAS runs as B tiny
    GEMMs. Each output entry is one product either way (no accumulation), so the values are
    identical; the elementwise kernel is an order of magnitude faster on CPU.
    """
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.bmm.default:
            continue
        a, b = node.args[:2]
        va, vb = a.meta.get("val"), b.meta.get("val")
        if va is None or vb is None or not (isinstance(va.shape[-1], int) and va.shape[-1] == 1):
            continue
        with gm.graph.inserting_before(node):
            mul = gm.graph.call_function(torch.ops.aten.mul.Tensor, (a, b))
        mul.meta = dict(node.meta)
        node.replace_all_uses_with(mul)
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.graph.lint()
        gm.recompile()


def _check_close(got: Any, want: Any) -> None:
    """Raise unless the replayed outputs equal the eager ones up to float rounding."""
    import torch.utils._pytree as pytree

    g, w = pytree.tree_leaves(got), pytree.tree_leaves(want)
    if len(g) != len(w) or any((a is None) != (b is None) for a, b in zip(g, w, strict=True)):
        raise RuntimeError("traced kernel returned a different structure")
    g, w = [a for a in g if a is not None], [b for b in w if b is not None]
    if len(g) != len(w):
        raise RuntimeError("traced kernel returned a different structure")
    for a, b in zip(g, w, strict=True):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise RuntimeError("traced kernel returned a different shape or dtype")
        tol = 1e3 * torch.finfo(b.dtype).eps * (1.0 + float(b.abs().max())) if b.numel() else 0.0
        if b.numel() and float((a - b).abs().max()) > tol:
            raise RuntimeError("traced kernel disagrees with eager torch.func")


class DataDependentBatchSizeWarning(UserWarning):
    """A private optimizer was built without ``expected_batch_size``: B was derived from ``len(data)``."""


def resolve_expected_batch_size(
    expected_batch_size: float | None, sample_rate: float, dataset_size: int, private: bool
) -> tuple[float, str]:
    """``(B, source)``: the public constant the update is normalised by and the noise is scaled with.

    Why a constant: the accountant compares a dataset D with D' = D + {xi'} (add/remove), and its
    sensitivity (C/B for the averaged update) is valid only if both runs divide by the *same* B.
    ``B = q len(data)`` would give D' the larger B = q (N + 1), a different mechanism. So B (as
    Opacus' ``expected_batch_size``, or ``q N`` for a public N) is a constructor argument.

    Omitted: we fall back to ``q len(data)`` computed once, which equals the accountant's B exactly
    when ``len(data)`` *is* the public N (e.g. the toy problems, whose N is part of the problem). For
    a private run (any noise multiplier > 0) the fallback is loud: a
    :class:`DataDependentBatchSizeWarning`, and the optimizer's ``batch_size_source`` records it.
    """
    if expected_batch_size is None:
        b = sample_rate * dataset_size
        if private:
            import warnings

            warnings.warn(
                f"expected_batch_size not given: using sample_rate * len(data) = {b:g}. The privacy "
                "guarantee assumes B is a public constant, the same for neighbouring datasets; pass "
                "expected_batch_size (e.g. q * N for the public dataset size N)",
                DataDependentBatchSizeWarning,
                stacklevel=4,
            )
        return b, "sample_rate * len(data) (fallback: expected_batch_size not given)"
    b = float(expected_batch_size)
    if not math.isfinite(b) or b <= 0:
        raise InvalidParameter("--batch-size", f"expected batch size must be a finite number > 0 (got {b!r})")
    return b, "given (public constant)"


@dataclass
class StepInfo:
    """What one step did: batch size drawn and the noise actually added (for audits/tests)."""

    batch_size: int
    noise: Params | None


class PrivateOptimizer:
    """Common part of the single-server per-sample-gradient methods (DPSGD-GC, DiceSGD, D2P2).

    The optimizer owns the dataset so that the *sampling* (Poisson at rate q, as the accountant
    assumes; or fixed-size uniform batches) is part of the algorithm, like line 3 of each paper's
    pseudo-code. ``B`` below is the expected batch size ``expected_batch_size``, a public constant
    (``q N`` for the public dataset size N, docs/architecture.md): the update is divided by it and
    the noise scaled with it, so adding an example to ``data`` changes neither. When it is omitted,
    :func:`resolve_expected_batch_size` documents the fallback (``q len(data)``, with a warning
    for private runs).

    ``kernel`` chooses how the per-sample kernel runs eagerly: ``vmap`` (torch.func at every
    step), ``traced`` (replay a graph traced at the first batch of size >= 2) or ``auto``
    (traced when ``steps >= AUTO_TRACE_STEPS``, or after that many steps when ``steps`` is not
    given; vmap otherwise, since tracing costs ~0.1-0.6 s once). ``compile=True`` overrides it.
    """

    algo: str = "base"

    def __init__(
        self,
        params: Params,
        loss_fn: LossFn,
        data: Batch,
        *,
        lr: float,
        sample_rate: float = 1.0,
        noise_multiplier: float | Sequence[float] | np.ndarray = 0.0,
        steps: int | None = None,
        seed: int = 0,
        device: str | torch.device = "auto",
        sampling: str = "poisson",
        schedule: str | None = None,
        compile: bool = False,
        kernel: str = "auto",
        expected_batch_size: float | None = None,
    ) -> None:
        self.device = resolve_device(device)
        self.params: Params = {k: v.detach().to(self.device).clone() for k, v in params.items()}
        self.data = to_device(data, self.device)
        self.loss_fn = loss_fn
        self.dataset_size = int(next(iter(self.data.values())).shape[0])
        if not (0 < sample_rate <= 1) or math.isnan(sample_rate):
            raise InvalidParameter("--sample-rate", f"must be in (0, 1] (got {sample_rate!r})")
        if sampling not in SAMPLINGS:
            raise InvalidParameter("--sampling", f"must be one of {SAMPLINGS} (got {sampling!r})")
        if not lr > 0 or not math.isfinite(lr):
            raise InvalidParameter("--lr", f"must be a finite number > 0 (got {lr!r})")
        self.lr = float(lr)
        self.sample_rate = float(sample_rate)
        self.sampling = sampling
        self.steps = steps
        self.z = noise_schedule(noise_multiplier, steps)
        self.schedule = schedule or ("constant" if self.z.size == 1 else "custom")
        # torch.compile the per-sample-gradient + clip + sum kernel (dynamic batch size). Same
        # numbers as eager up to float rounding; the first call compiles (tens of seconds).
        self.compile = bool(compile)
        if kernel not in KERNELS:
            raise InvalidParameter("--kernel", f"must be one of {KERNELS} (got {kernel!r})")
        # Eager execution of the same kernel: ``vmap`` dispatches through torch.func at every
        # step; ``traced`` replays the aten ops torch.func emits (see TracedKernel); ``auto``
        # traces only runs long enough to repay the one-off tracing cost.
        self.kernel = kernel
        self._kernels: dict[bool, Callable[..., Any]] = {}
        self.expected_batch_size, self.batch_size_source = resolve_expected_batch_size(
            expected_batch_size, self.sample_rate, self.dataset_size, bool(np.any(self.z > 0))
        )
        self.seed = int(seed)
        self.generator = make_generator(self.device, seed)
        self.t = 0  # number of steps taken
        self._psg = per_sample_grad_fn(loss_fn)
        self.last_noise: Params | None = None

    # -- randomness -------------------------------------------------------------------------
    def noise_multiplier_at(self, t: int) -> float:
        """Base multiplier times the schedule entry of step ``t`` (0-based)."""
        if self.z.size == 1:
            return float(self.z[0])
        if t >= self.z.size:
            raise InvalidParameter("--steps", f"noise schedule has only {self.z.size} steps")
        return float(self.z[t])

    def sample_batch(self) -> Batch:
        """Poisson: each example independently with prob. q. Fixed: round(B) without replacement."""
        n = self.dataset_size
        if self.sample_rate >= 1.0:
            return self.data
        if self.sampling == "poisson":
            mask = torch.rand(n, generator=self.generator, device=self.device) < self.sample_rate
            idx = mask.nonzero().squeeze(1)
        else:
            b = min(n, max(1, round(self.expected_batch_size)))
            idx = torch.randperm(n, generator=self.generator, device=self.device)[:b]
        return {k: v.index_select(0, idx) for k, v in self.data.items()}

    def per_sample_grads(self, batch: Batch) -> Params:
        return self._psg(self.params, batch)

    # -- API ----------------------------------------------------------------------------------
    def step(self, batch: Batch | None = None) -> StepInfo:
        """One iteration. ``batch`` overrides the optimizer's own sampling (benchmarks)."""
        if batch is None:
            batch = self.sample_batch()
        b = int(next(iter(batch.values())).shape[0])
        info = self._step(batch, b)
        self.t += 1
        return info

    def _step(self, batch: Batch, b: int) -> StepInfo:  # pragma: no cover - abstract
        raise NotImplementedError

    def _summed(
        self, batch: Batch, b: int, fn: Callable[[Tensor], Tensor], *, raw: bool = False
    ) -> tuple[Params, Params | None]:
        """``(sum_i fn(||g_i||) g_i, sum_i g_i if raw)``; an empty Poisson batch sums to zero.

        ``fn`` must be the same function of the norms at every call of a given optimizer (the
        kernel is built, and compiled or traced, once per ``raw``; a traced or compiled kernel
        keeps the thresholds ``fn`` read at that time, so they are fixed for the run).
        """
        if b == 0:
            return tree_zeros(self.params), (tree_zeros(self.params) if raw else None)
        kernel = self._kernels.get(raw)
        if kernel is None:
            psg = self._psg

            def kernel(params: Params, batch: Batch) -> tuple[Params, Params | None]:
                g = psg(params, batch)
                scaled = weighted_sum(g, fn(per_sample_norms(g)))
                total = {k: t.sum(dim=0) for k, t in g.items()} if raw else None
                return scaled, total

            if self.compile:
                kernel = torch.compile(kernel, dynamic=True)
            elif self.kernel != "vmap":
                kernel = TracedKernel(kernel, trace_at=self._trace_at())
            self._kernels[raw] = kernel
        return kernel(self.params, batch)

    def _trace_at(self) -> int:
        """Kernel call at which ``kernel='auto'`` traces (1 = at once): see :data:`AUTO_TRACE_STEPS`."""
        if self.kernel == "traced":
            return 1
        if self.steps is not None:
            return 1 if self.steps >= AUTO_TRACE_STEPS else 2**62
        return AUTO_TRACE_STEPS

    def kernel_info(self) -> dict[str, Any]:
        """How the per-sample kernels run (``vmap``/``traced``/``compiled``) and the tracing cost."""
        out: dict[str, Any] = {}
        for raw, k in self._kernels.items():
            key = "clipped+raw" if raw else "clipped"
            out[key] = k.info() if isinstance(k, TracedKernel) else ("compiled" if self.compile else "vmap")
        return out

    def mechanism(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """The mechanism this code realises, with PrivacyParams field names (see subclasses)."""
        raise NotImplementedError

    def noise_std(self, t: int = 0) -> float:  # pragma: no cover - abstract
        """Std of each coordinate of the noise the code adds at step ``t``, in update units."""
        raise NotImplementedError

    def _noise_fields(self) -> dict[str, Any]:
        """Noise part of ``mechanism()``: base multiplier, schedule name, per-step values
        (a constant schedule is left implicit: accountants without schedules refuse the option)."""
        if self.schedule == "constant" and self.z.size == 1:
            return {"noise_multiplier": float(self.z[0])}
        return {
            "noise_multiplier": float(self.z[0]),
            "schedule": self.schedule,
            "schedule_values": None if self.z.size == 1 else self.z.tolist(),
        }

    @property
    def model_dim(self) -> int:
        return sum(v.numel() for v in self.params.values())
