"""The traced per-sample kernel (TracedKernel) against the torch.func vmap path it replays."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dptheory import optim
from dptheory.optim import base
from dptheory.problems import get_problem

PROBLEMS = [
    ("quadratic", dict(d=6, n_samples=24, mu=0.2, L=1.0)),
    ("logreg-nonconvex", {}),
    ("dicesgd-b1", {}),
    ("stochastic-quadratic", {}),
]
ALGOS = [
    (optim.DPSGD, dict(c=0.5)),
    (optim.DiceSGD, dict(c1=0.5, c2=0.7)),
    (optim.D2PSGD, {}),
]


def _trajectory(opt, steps, batches=None):
    out = []
    for t in range(steps):
        opt.step(None if batches is None else batches[t % len(batches)])
        out.append(torch.cat([v.reshape(-1) for v in opt.params.values()]).clone())
    return torch.stack(out)


def _modes(opt):
    return {v["mode"] if isinstance(v, dict) else v for v in opt.kernel_info().values()}


@pytest.mark.parametrize("name,kw", PROBLEMS)
@pytest.mark.parametrize("cls,extra", ALGOS)
def test_traced_equals_vmap_under_poisson_sampling(name, kw, cls, extra):
    """Same seed, Poisson batches of varying size: the replay reproduces vmap bit for bit."""
    prob = get_problem(name, **kw)
    common = dict(lr=0.1, sample_rate=0.4, noise_multiplier=0.8, seed=11, device="cpu", **extra)
    a = cls(prob.x0, prob.loss_fn, prob.data, kernel="vmap", **common)
    b = cls(prob.x0, prob.loss_fn, prob.data, kernel="traced", **common)
    ta, tb = _trajectory(a, 25), _trajectory(b, 25)
    assert _modes(b) == {"traced"}, b.kernel_info()
    assert _modes(a) == {"vmap"}
    torch.testing.assert_close(tb, ta, rtol=0, atol=0)


def _mlp_problem(n=40, d=5, h=7, seed=0):
    """A float32 two-layer network written with nn.Module + functional_call (several tensors)."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.Tanh(), torch.nn.Linear(h, 1))
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    data = {"x": torch.randn(n, d), "y": (torch.rand(n) < 0.5).float()}

    def loss_fn(p, s):
        out = torch.func.functional_call(model, p, (s["x"].unsqueeze(0),)).squeeze()
        return torch.nn.functional.binary_cross_entropy_with_logits(out, s["y"])

    return params, loss_fn, data


@pytest.mark.parametrize("cls,extra", [(optim.DPSGD, dict(c=0.3)), (optim.DiceSGD, dict(c1=0.3, c2=0.5))])
def test_traced_multi_tensor_float32_model(cls, extra):
    """Per-layer outer products are rewritten as broadcast products: still the vmap numbers."""
    params, loss_fn, data = _mlp_problem()
    common = dict(lr=0.2, sample_rate=0.5, noise_multiplier=1.0, seed=4, device="cpu", **extra)
    a = cls(params, loss_fn, data, kernel="vmap", **common)
    b = cls(params, loss_fn, data, kernel="traced", **common)
    ta, tb = _trajectory(a, 20), _trajectory(b, 20)
    assert _modes(b) == {"traced"}
    torch.testing.assert_close(tb, ta, rtol=1e-6, atol=1e-7)


def test_batch_size_equal_to_a_model_dimension():
    """The batch size is not unified with an equal model dimension (duck shaping is off):
    a graph traced at B = d must stay right at B != d and vice versa."""
    prob = get_problem("quadratic", d=6, n_samples=30, mu=0.2, L=1.0)
    z = prob.data["z"]
    sizes = [6, 9, 2, 6, 17, 1, 30]
    batches = [{"z": z[:s]} for s in sizes]
    for order in (batches, batches[1:] + batches[:1]):
        common = dict(lr=0.1, c=0.4, noise_multiplier=0.0, device="cpu")
        a = optim.DPSGD(prob.x0, prob.loss_fn, prob.data, kernel="vmap", **common)
        b = optim.DPSGD(prob.x0, prob.loss_fn, prob.data, kernel="traced", **common)
        torch.testing.assert_close(_trajectory(b, 14, order), _trajectory(a, 14, order), rtol=0, atol=0)
        assert _modes(b) == {"traced"}


def test_small_batches_run_eagerly_and_trace_later():
    """B = 0 and B = 1 never use the graph (tracing specialises them); the next B >= 2 traces."""
    prob = get_problem("quadratic", d=4, n_samples=10, mu=0.5, L=1.0)
    z = prob.data["z"]
    opt = optim.DiceSGD(prob.x0, prob.loss_fn, prob.data, lr=0.1, c1=0.3, kernel="traced", device="cpu")
    ref = optim.DiceSGD(prob.x0, prob.loss_fn, prob.data, lr=0.1, c1=0.3, kernel="vmap", device="cpu")
    batches = [{"z": z[:0]}, {"z": z[:1]}]
    t1, r1 = _trajectory(opt, 2, batches), _trajectory(ref, 2, batches)
    assert _modes(opt) == {"vmap"}  # not traced yet
    batches = [{"z": z[:5]}, {"z": z[:1]}, {"z": z[:3]}]
    t2, r2 = _trajectory(opt, 3, batches), _trajectory(ref, 3, batches)
    assert _modes(opt) == {"traced"}
    torch.testing.assert_close(torch.cat([t1, t2]), torch.cat([r1, r2]), rtol=0, atol=0)


def test_auto_policy_follows_run_length(monkeypatch):
    prob = get_problem("quadratic", d=3, n_samples=8, mu=0.5, L=1.0)
    mk = lambda **kw: optim.DPSGD(prob.x0, prob.loss_fn, prob.data, lr=0.1, device="cpu", **kw)  # noqa: E731
    short = mk(steps=base.AUTO_TRACE_STEPS - 1)
    long = mk(steps=base.AUTO_TRACE_STEPS)
    for o in (short, long):
        o.step()
    assert _modes(short) == {"vmap"} and _modes(long) == {"traced"}
    monkeypatch.setattr(base, "AUTO_TRACE_STEPS", 4)
    unknown = mk()
    for _ in range(3):
        unknown.step()
    assert _modes(unknown) == {"vmap"}
    unknown.step()
    assert _modes(unknown) == {"traced"}
    assert mk(kernel="vmap", steps=10**6).kernel == "vmap"


def test_failed_trace_falls_back_to_vmap(monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("cannot trace this")

    monkeypatch.setattr(base, "_make_graph", broken)
    prob = get_problem("quadratic", d=3, n_samples=8, mu=0.5, L=1.0)
    common = dict(lr=0.1, sample_rate=0.5, noise_multiplier=1.0, seed=2, device="cpu")
    a = optim.DPSGD(prob.x0, prob.loss_fn, prob.data, kernel="traced", **common)
    b = optim.DPSGD(prob.x0, prob.loss_fn, prob.data, kernel="vmap", **common)
    torch.testing.assert_close(_trajectory(a, 6), _trajectory(b, 6), rtol=0, atol=0)
    info = a.kernel_info()["clipped"]
    assert info["mode"] == "vmap (trace failed)" and "cannot trace this" in info["reason"]


def test_replay_error_falls_back_to_eager():
    def fn(p, b):
        return {"x": b["z"].sum(0) * p["x"]}

    k = base.TracedKernel(fn)
    p, b = {"x": torch.ones(2)}, {"z": torch.ones(4, 2)}
    k(p, b)
    assert k.info()["mode"] == "traced"

    def boom(*args):
        raise RuntimeError("boom")

    k.graph = boom
    torch.testing.assert_close(k(p, b)["x"], torch.full((2,), 4.0))
    assert k.info()["mode"] == "vmap (trace failed)" and "boom" in k.info()["reason"]


def test_disagreeing_graph_is_rejected():
    """The trace-time check compares the replay with eager and refuses a graph that differs."""
    k = base.TracedKernel(lambda p, b: {"x": b["z"].sum(0) * p["x"]})
    p, b = {"x": torch.ones(2)}, {"z": torch.ones(4, 2)}
    out = k(p, b)
    assert k.info()["mode"] == "traced"
    torch.testing.assert_close(out["x"], torch.full((2,), 4.0))
    with pytest.raises(RuntimeError, match="disagrees"):
        base._check_close({"x": torch.ones(2)}, {"x": torch.full((2,), 1.01)})


def test_shape_guards_decide_which_batch_sizes_replay():
    """A kernel whose trace depends on B (a fixed-length slice): sizes the recorded guard
    (2 B >= 8) rejects run eagerly; every size gives the eager numbers."""

    def fn(p, b):
        return {"x": b["z"].reshape(-1)[:8].sum() * p["x"]}

    k = base.TracedKernel(fn)
    p = {"x": torch.ones(2)}
    for n in (6, 2, 3, 4, 10):
        bt = {"z": torch.arange(2.0 * n).reshape(n, 2)}
        torch.testing.assert_close(k(p, bt)["x"], fn(p, bt)["x"], rtol=0, atol=0)
    assert k.info()["mode"] == "traced"
    assert k._sizes == {6: True, 2: False, 3: False, 4: True, 10: True}


def test_bad_kernel_name():
    from accounting.errors import InvalidParameter

    prob = get_problem("quadratic", d=3, n_samples=8, mu=0.5, L=1.0)
    with pytest.raises(InvalidParameter, match="--kernel"):
        optim.DPSGD(prob.x0, prob.loss_fn, prob.data, lr=0.1, kernel="fast")


def test_clip_vector_matches_definition():
    v = {"a": torch.tensor([3.0, 0.0], dtype=torch.float64), "b": torch.tensor([4.0], dtype=torch.float64)}
    out = base.clip_vector(v, 2.0)  # ||v|| = 5 -> scaled by 2/5
    np.testing.assert_allclose(torch.cat([out["a"], out["b"]]).numpy(), [1.2, 0.0, 1.6], rtol=1e-15)
    same = base.clip_vector(v, 5.0)
    assert all(torch.equal(same[k], v[k]) for k in v)
    zero = base.clip_vector({k: torch.zeros_like(t) for k, t in v.items()}, 1.0)
    assert all(torch.count_nonzero(t) == 0 for t in zero.values())


def test_seed_determinism_with_the_default_kernel():
    prob = get_problem("logreg-nonconvex")
    mk = lambda: optim.DiceSGD(  # noqa: E731
        prob.x0,
        prob.loss_fn,
        prob.data,
        lr=0.1,
        c1=0.3,
        sample_rate=0.2,
        noise_multiplier=1.0,
        seed=5,
        steps=600,
    )
    a, b = mk(), mk()
    torch.testing.assert_close(_trajectory(a, 12), _trajectory(b, 12), rtol=0, atol=0)
    assert _modes(a) == {"traced"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_traced_equals_vmap_on_cuda():
    prob = get_problem("logreg-nonconvex")
    common = dict(lr=0.1, c1=0.3, sample_rate=0.3, noise_multiplier=1.0, seed=1, device="cuda")
    a = optim.DiceSGD(prob.x0, prob.loss_fn, prob.data, kernel="vmap", **common)
    b = optim.DiceSGD(prob.x0, prob.loss_fn, prob.data, kernel="traced", **common)
    torch.testing.assert_close(_trajectory(b, 10), _trajectory(a, 10), rtol=1e-12, atol=1e-12)
    assert _modes(b) == {"traced"}
