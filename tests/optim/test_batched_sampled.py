"""The seed-batched engine with sampled minibatches (q < 1) and D2P2's random projection (issue 11).

For every configuration it now covers, each seed's iterates EQUAL (np.array_equal, no tolerance)
those of the reference engine (one optimizer per seed, step by step): Poisson batches through
``dptheory.runner.run``, fixed-size batches through the optimizers directly (the runner always
samples Poisson), fresh and fixed projections, the clip family with q < 1. What stays on the
reference path says why.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from accounting.errors import InvalidParameter  # noqa: E402
from dptheory import optim, runner  # noqa: E402
from dptheory.optim import batched  # noqa: E402
from dptheory.optim.batched_sampling import BatchSums, replay_draws  # noqa: E402
from dptheory.problems import get_problem  # noqa: E402

DP_ALGOS = ("dpsgd", "dicesgd", "d2psgd", "d2p2sgd", "dp2sgd")
CLIP_ALGOS = ("clipsgd", "clip21sgd", "clip21sgd2m")


def _options(data, algo: str) -> tuple[str, dict, dict]:
    """A random run of ``algo`` with q < 1; dicesgd-b1's C sets its size N = ceil(C) + 2 (3..42),
    so batches cross torch's vector widths (4, 8, 16 lanes) and the scalar tails."""
    kw = dict(
        steps=data.draw(st.integers(1, 50), label="steps"),
        seeds=data.draw(st.integers(1, 4), label="seeds"),
        seed=data.draw(st.integers(0, 10**6), label="seed"),
        lr=data.draw(st.floats(0.01, 1.0), label="lr"),
        noise_multiplier=data.draw(st.sampled_from([0.0, 0.3, 2.0]), label="noise"),
        sample_rate=data.draw(st.one_of(st.floats(0.02, 0.999), st.sampled_from([0.1, 0.5, 0.9])), label="q"),
        device="cpu",
    )
    if algo in CLIP_ALGOS:
        kw["tau"] = data.draw(st.floats(0.05, 5.0), label="tau")
        if algo == "clip21sgd2m":
            kw["beta"] = data.draw(st.floats(0.05, 1.0), label="beta")
        return "clip21-example1", {"x0": data.draw(st.floats(-5, 5), label="x0")}, kw
    c1 = data.draw(st.one_of(st.floats(0.1, 40.0), st.sampled_from([1.0, 2.5, 14.5])), label="C")
    popts = {"x0": data.draw(st.floats(-10, 10), label="x0"), "c": c1}
    if algo in ("dpsgd", "dicesgd"):
        kw["c1"] = c1
        kw["clip_mode"] = data.draw(st.sampled_from(["flat", "automatic"]), label="clip_mode")
    else:
        kw["gamma"] = data.draw(st.floats(0.001, 1.0), label="gamma")
    if algo in ("d2psgd", "d2p2sgd"):
        kw["schedule"] = data.draw(st.sampled_from(["constant", "inv-k", "inv-sqrt-k"]), label="schedule")
    if algo in ("d2p2sgd", "dp2sgd"):
        kw["projection"] = data.draw(st.sampled_from(["fresh", "fixed"]), label="projection")
        kw["projection_dim"] = data.draw(st.sampled_from([None, 1, 3]), label="p")  # p_l = min(p, 1)
    if algo == "dicesgd":
        kw["c2"] = data.draw(st.floats(0.01, 4.0), label="c2")
        if data.draw(st.booleans(), label="residual"):
            kw["residual_clip"] = data.draw(st.floats(0.01, 2.0), label="residual_clip")
    return "dicesgd-b1", popts, kw


def _same_iterates(a, b) -> None:
    assert len(a.runs) == len(b.runs)
    for ra, rb in zip(a.runs, b.runs, strict=True):
        assert ra.seed == rb.seed
        assert np.array_equal(ra.trajectory["step"], rb.trajectory["step"])
        assert np.array_equal(ra.trajectory["x"], rb.trajectory["x"]), ra.seed
        assert np.array_equal(ra.x, rb.x)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), algo=st.sampled_from(DP_ALGOS + CLIP_ALGOS))
def test_sampled_batched_engine_equals_reference_bit_for_bit(data, algo):
    problem, popts, kw = _options(data, algo)
    try:
        ref = runner.run(algo, problem, problem_options=popts, engine="reference", progress=False, **kw)
    except InvalidParameter as exc:  # diverged: the batched engine must say the same
        with pytest.raises(InvalidParameter, match=str(exc).split(":")[0][:20]):
            runner.run(algo, problem, problem_options=popts, engine="batched", progress=False, **kw)
        return
    fast = runner.run(algo, problem, problem_options=popts, engine="batched", progress=False, **kw)
    assert fast.settings.engine == "batched"
    _same_iterates(fast, ref)


@pytest.mark.parametrize("algo", ["dpsgd", "d2p2sgd"])
def test_q1_projection_and_auto_engine(algo):
    """q = 1 with a projection runs batched too, and ``auto`` now picks batched for q < 1."""
    kw = dict(steps=40, seeds=3, noise_multiplier=1.0, progress=False)
    ref = runner.run(algo, "dicesgd-b1", engine="reference", **kw)
    fast = runner.run(algo, "dicesgd-b1", **kw)
    assert fast.settings.engine == "batched"
    _same_iterates(fast, ref)
    auto = runner.run(algo, "dicesgd-b1", sample_rate=0.4, **kw)
    assert auto.settings.engine == "batched"


def _dp_optimizer(algo: str, prob, seed: int, kw: dict):
    common = dict(device="cpu", seed=seed, **kw["common"])
    if algo == "dpsgd":
        return optim.DPSGD(prob.x0, prob.loss_fn, prob.data, c=kw["c1"], **common)
    if algo == "dicesgd":
        return optim.DiceSGD(prob.x0, prob.loss_fn, prob.data, c1=kw["c1"], c2=kw["c2"], **common)
    return optim.D2P2SGD(prob.x0, prob.loss_fn, prob.data, projection=kw["projection"], **common)


@settings(max_examples=20, deadline=None)
@given(
    algo=st.sampled_from(["dpsgd", "dicesgd", "d2p2sgd"]),
    c=st.floats(0.5, 30.0),
    q=st.floats(0.05, 1.0, exclude_max=True),
    steps=st.integers(1, 40),
    lr=st.floats(0.01, 0.5),
    z=st.sampled_from([0.0, 1.0]),
    sampling=st.sampled_from(["fixed", "poisson"]),
    projection=st.sampled_from(["none", "fresh", "fixed"]),
    seed=st.integers(0, 10**6),
)
def test_optimizers_fixed_size_batches_equal_reference(algo, c, q, steps, lr, z, sampling, projection, seed):
    """Fixed-size batches (randperm order, not sorted) and Poisson, straight on the optimizers."""
    prob = get_problem("dicesgd-b1", c=c)
    n = prob.size
    kw = dict(
        c1=c,
        c2=0.3,
        projection=projection,
        common=dict(
            lr=lr,
            sample_rate=q,
            sampling=sampling,
            noise_multiplier=z,
            steps=steps,
            expected_batch_size=q * n,
        ),
    )
    seeds = [seed, seed + 1, seed + 2]
    ref = []
    for sd in seeds:
        o = _dp_optimizer(algo, prob, sd, kw)
        xs = [o.params["x"].clone()]
        for _ in range(steps):
            o.step()
            xs.append(o.params["x"].clone())
        ref.append(torch.stack(xs))
    opts = [_dp_optimizer(algo, prob, sd, kw) for sd in seeds]
    assert batched.dp_unsupported_reason(opts[0], prob.grads_closed_form) is None
    got = batched.run_dp(opts, prob.grads_closed_form, every=1)
    for k in range(len(seeds)):
        assert torch.equal(got[k], ref[k]), (k, sampling, projection)


def test_replay_draws_are_the_reference_draws():
    """The replayed batch of each step is the one ``sample_batch`` draws, and the generator ends
    where the reference's calls leave it."""
    prob = get_problem("dicesgd-b1", c=20.0)
    for sampling in ("poisson", "fixed"):
        ref, new = (
            optim.DPSGD(
                prob.x0,
                prob.loss_fn,
                prob.data,
                lr=0.1,
                sample_rate=0.3,
                sampling=sampling,
                seed=7,
                device="cpu",
            )
            for _ in range(2)
        )
        sel, (normals,) = replay_draws(new, 25, [(1,)])
        for t in range(25):
            batch = ref.sample_batch()
            w = torch.randn((1,), generator=ref.generator, dtype=torch.float64)
            idx = sel[t].nonzero().squeeze(1) if sampling == "poisson" else sel[t]
            assert torch.equal(batch["xi"], prob.data["xi"].index_select(0, idx))
            assert torch.equal(w, normals[t])
        assert torch.equal(torch.rand(5, generator=ref.generator), torch.rand(5, generator=new.generator))


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(1, 6),
    n=st.integers(1, 40),
    d=st.sampled_from([1, 2, 3, 17]),
    steps=st.integers(1, 5),
    seed=st.integers(0, 2**31),
)
def test_batch_sums_equal_sums_of_selected_rows(k, n, d, steps, seed):
    """Each seed's batch sum equals ``rows[k][mask].sum(0)`` -- the reference's (b, d) sum -- bit
    for bit; a masked sum over all n rows would not (torch's lanes depend on the length)."""
    gen = torch.Generator().manual_seed(seed)
    masks = [torch.rand((steps, n), generator=gen) < 0.5 for _ in range(k)]
    sums = BatchSums(masks, n)
    for t in range(steps):
        scale = 1e3 ** torch.randn((k, n, d), generator=gen, dtype=torch.float64)
        rows = torch.randn((k, n, d), generator=gen, dtype=torch.float64) * scale
        got = sums(t, rows)
        for j in range(k):
            assert torch.equal(got[j], rows[j][masks[j][t]].sum(dim=0))


def test_still_unsupported_say_why():
    prob = get_problem("dicesgd-b1")
    two = {"x": torch.zeros(2, dtype=torch.float64)}
    d2p2 = optim.D2P2SGD(two, prob.loss_fn, prob.data, lr=0.1, steps=3, device="cpu", projection="fresh")
    why = batched.dp_unsupported_reason(d2p2, prob.grads_closed_form)
    assert why == "random projection (D2P2-SGD, DP2-SGD) of more than one coordinate"
    pair = {"x": torch.zeros(1, dtype=torch.float64), "y": torch.zeros(1, dtype=torch.float32)}
    sgd2 = optim.DPSGD(pair, prob.loss_fn, prob.data, lr=0.1, sample_rate=0.5, steps=3, device="cpu")
    assert batched.dp_unsupported_reason(sgd2, prob.grads_closed_form) == "parameters are not float64"
    wide = {"x": torch.zeros(65, dtype=torch.float64)}
    sgd65 = optim.DPSGD(wide, prob.loss_fn, prob.data, lr=0.1, steps=3, device="cpu")
    assert batched.dp_unsupported_reason(sgd65, prob.grads_closed_form) == (
        "a parameter tensor of more than 64 entries"
    )
    adam = optim.DiceAdam(prob.x0, prob.loss_fn, prob.data, lr=0.1, sample_rate=0.5, steps=3, device="cpu")
    assert batched.dp_unsupported_reason(adam, prob.grads_closed_form) == "DiceAdam"
    sgd = optim.DPSGD(prob.x0, prob.loss_fn, prob.data, lr=0.1, sample_rate=0.5, steps=3, device="cpu")
    assert batched.dp_unsupported_reason(sgd, None) == "the problem has no closed-form per-sample gradient"
    with pytest.raises(InvalidParameter, match="--engine.*no closed-form"):
        runner.run("dpsgd", "quadratic", steps=3, sample_rate=0.5, engine="batched", progress=False)
    with pytest.raises(InvalidParameter, match="--engine.*drawn numbers per seed"):
        runner.run("dpsgd", "dicesgd-b1", steps=2**21, sample_rate=0.5, engine="batched", progress=False)


@pytest.mark.slow  # tracing costs seconds
def test_sampled_batched_engine_equals_the_traced_reference():
    """>= 500 steps: the reference replays a traced kernel for batches of 2 or more, eager below."""
    kw = dict(steps=520, seeds=2, sample_rate=0.4, noise_multiplier=1.0, progress=False)
    kw["problem_options"] = {"c": 6.0}
    for algo in ("dpsgd", "dicesgd", "d2p2sgd"):
        ref = runner.run(algo, "dicesgd-b1", engine="reference", **kw)
        fast = runner.run(algo, "dicesgd-b1", engine="batched", **kw)
        _same_iterates(fast, ref)


def test_cli_engine_option(capsys):
    """``dptheory run --engine``: both engines print the same numbers; bad values exit 2, one line."""
    from dptheory.cli.main import main

    argv = ["run", "--algo", "dicesgd", "--problem", "dicesgd-b1", "--sample-rate", "0.5", "--steps", "30"]
    argv += ["--seeds", "3", "--noise-multiplier", "1", "--json"]
    outs = {}
    for engine in ("reference", "batched"):
        assert main([*argv, "--engine", engine]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["settings"]["engine"] == engine
        outs[engine] = out["x"]["values"]  # final x per seed, printed with full precision
    assert outs["reference"] == outs["batched"]
    quadratic = ["quadratic" if a == "dicesgd-b1" else a for a in argv]  # a problem with no batched engine
    for bad in ([*argv, "--engine", "fast"], [*quadratic, "--engine", "batched"]):
        assert main(bad) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--engine" in err


def _sampled_runs(test):
    """The (algorithm, n, q, sampling, steps, seed) cases the batched-vs-reference tests draw."""
    cases = given(
        algo=st.sampled_from(["dpsgd", "dicesgd", "d2psgd"]),
        n=st.integers(2, 30),
        q=st.floats(0.05, 1.0),
        sampling=st.sampled_from(["poisson", "fixed"]),
        steps=st.integers(1, 25),
        seed=st.integers(0, 10**6),
    )
    return settings(max_examples=12, deadline=None)(cases(test))


def _quadratic_3d(n: int, seed: int):
    """f(x; a_i) = sum((x - a_i)^2) / 2 on R^3: torch.func's per-sample gradient is x - a_i
    exactly (2 (x - a) / 2 rounds nowhere), a closed form for a vector of more than one entry."""
    a = torch.randn((n, 3), generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 3

    def loss(params, sample):
        return ((params["x"] - sample["a"]) ** 2).sum() / 2

    def grads(x):
        return x.unsqueeze(-2) - a

    return {"x": torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)}, loss, {"a": a}, grads


@_sampled_runs
def test_vector_of_three_entries_equals_reference(algo, n, q, sampling, steps, seed):
    """d = 3 (per-sample norms sum three squares; batch sums reduce (b, 3) along dim 0)."""
    _assert_batched_equals_reference(_quadratic_3d(n, seed), algo, n, q, sampling, steps, seed)


def _assert_batched_equals_reference(problem, algo, n, q, sampling, steps, seed) -> None:
    """Two seeds through the batched engine equal the reference optimizers at every step (the
    parameters flattened in order, as ``base.flatten`` concatenates them)."""
    x0, loss, data, grads = problem
    common = dict(lr=0.2, sample_rate=q, sampling=sampling, noise_multiplier=0.5, steps=steps, device="cpu")
    common["expected_batch_size"] = q * n

    def make(sd):
        if algo == "dpsgd":
            return optim.DPSGD(x0, loss, data, c=2.0, seed=sd, **common)
        if algo == "dicesgd":
            return optim.DiceSGD(x0, loss, data, c1=2.0, c2=0.5, seed=sd, **common)
        return optim.D2PSGD(x0, loss, data, gamma=0.1, seed=sd, **common)

    seeds = [seed, seed + 1]
    opts = [make(sd) for sd in seeds]
    assert batched.dp_unsupported_reason(opts[0], grads) is None
    got = batched.run_dp(opts, grads, every=1)
    for k, sd in enumerate(seeds):
        o = make(sd)
        for t in range(1, steps + 1):
            o.step()
            want = torch.cat([p.reshape(-1) for p in o.params.values()])
            assert torch.equal(got[k, t], want), (k, t)


def _three_tensors(n: int, seed: int):
    """Parameters w (2, 2), b () and v (1,) with f = |w - A_i|^2/2 + (b - c_i)^2/2 + |v - e_i|^2/2:
    torch.func's per-sample gradients are the differences exactly; the closed form returns them
    concatenated in the parameters' order (base.flatten), as every ``grads_closed_form`` does."""
    gen = torch.Generator().manual_seed(seed)
    data = {
        "A": torch.randn((n, 2, 2), generator=gen, dtype=torch.float64) * 3,
        "c": torch.randn((n,), generator=gen, dtype=torch.float64),
        "e": torch.randn((n, 1), generator=gen, dtype=torch.float64) * 5,
    }

    def loss(params, sample):
        w = ((params["w"] - sample["A"]) ** 2).sum() / 2
        return w + (params["b"] - sample["c"]) ** 2 / 2 + ((params["v"] - sample["e"]) ** 2).sum() / 2

    flat = torch.cat([data["A"].reshape(n, 4), data["c"][:, None], data["e"]], dim=1)  # (n, 6)

    def grads(x):
        return x.unsqueeze(-2) - flat

    x0 = {
        "w": torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64),
        "b": torch.tensor(0.25, dtype=torch.float64),
        "v": torch.tensor([-1.5], dtype=torch.float64),
    }
    return x0, loss, data, grads


@_sampled_runs
def test_several_parameter_tensors_equal_reference(algo, n, q, sampling, steps, seed):
    """Several tensors (a matrix, a scalar, a one-entry vector): norms, sums, clip(e, C2) and the
    noise go tensor by tensor as in the reference; the iterates are equal at every step."""
    _assert_batched_equals_reference(_three_tensors(n, seed), algo, n, q, sampling, steps, seed)


@pytest.mark.parametrize("shape", [(2, 2), (), (4, 4)])
@pytest.mark.parametrize("q", [1.0, 0.5])
def test_one_tensor_of_any_shape_equals_reference(shape, q):
    """One tensor that is not a vector: a matrix (16 entries: torch's vectorised normals), a scalar."""
    n = 12
    data = {"A": torch.randn((n, *shape), generator=torch.Generator().manual_seed(0), dtype=torch.float64)}
    flat = data["A"].reshape(n, -1)

    def loss(params, sample):
        return ((params["w"] - sample["A"]) ** 2).sum() / 2

    def grads(x):
        return x.unsqueeze(-2) - flat

    x0 = {"w": torch.full(shape, 0.7, dtype=torch.float64)}
    common = dict(lr=0.2, sample_rate=q, noise_multiplier=0.5, steps=30, device="cpu")
    common["expected_batch_size"] = q * n
    for cls, kw in ((optim.DPSGD, dict(c=2.0)), (optim.DiceSGD, dict(c1=2.0, c2=0.5))):
        got = batched.run_dp([cls(x0, loss, data, seed=sd, **kw, **common) for sd in (0, 1)], grads, every=1)
        for k in (0, 1):
            o = cls(x0, loss, data, seed=k, **kw, **common)
            for t in range(1, 31):
                o.step()
                assert torch.equal(got[k, t], o.params["w"].reshape(-1)), (cls.__name__, k, t)
