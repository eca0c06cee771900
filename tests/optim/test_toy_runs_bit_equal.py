"""The fast toy-run paths give the reference's iterates bit for bit (issue 11).

* closed-form per-sample gradients and losses equal torch.func on the problem's own ``loss_fn``;
* :func:`dptheory.optim.batched.normal_stream` equals successive ``torch.randn`` calls and leaves
  the generator where they would;
* the seed-batched engine gives, for every seed, exactly the iterates of the reference engine
  (one optimizer per seed, step by step), and the same as that seed run alone.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from accounting.errors import InvalidParameter  # noqa: E402
from dptheory import runner  # noqa: E402
from dptheory.optim.batched import normal_stream, record_steps  # noqa: E402
from dptheory.problems import get_problem  # noqa: E402

xs = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False),
    st.floats(-1e-6, 1e-6, allow_nan=False),
    st.sampled_from([0.0, -1.0, 1.0, 2.0, -2.0, 3.0, -3.0]),
)


@settings(max_examples=30, deadline=None)
@given(x=xs, c=st.floats(0.05, 12.0), a=st.floats(0.1, 10.0), L=st.floats(0.1, 5.0))
def test_closed_forms_equal_torch_func(x, c, a, L):
    for prob in (get_problem("dicesgd-b1", c=c), get_problem("clip21-example1", a=a, L=L)):
        ref = prob.per_sample_grads([x], reference=True)
        got = prob.per_sample_grads([x])
        assert np.array_equal(got, ref), (prob.name, x, got, ref)
        assert prob.loss([x]) == prob.loss([x], reference=True)
        batched = prob.metrics_batched(np.array([[[x]]]))
        single = prob.metrics(np.array([x]))
        for key, v in single.items():  # a mean of gradients cancels: absolute error at gradient scale
            assert batched[key][0, 0] == pytest.approx(v, rel=1e-12, abs=1e-12 * (1 + abs(ref).max())), key


@settings(max_examples=40, deadline=None)
@given(d=st.integers(1, 20), steps=st.integers(1, 40), seed=st.integers(0, 2**31), pre=st.integers(0, 3))
def test_normal_stream_equals_successive_draws(d, steps, seed, pre):
    g_ref, g_new = torch.Generator(), torch.Generator()
    g_ref.manual_seed(seed)
    g_new.manual_seed(seed)
    for g in (g_ref, g_new):  # an odd number of earlier normals leaves a cached value behind
        torch.randn((pre,), generator=g, dtype=torch.float64)
    ref = torch.stack([torch.randn((d,), generator=g_ref, dtype=torch.float64) for _ in range(steps)])
    got = normal_stream(g_new, steps, (d,), torch.float64)
    assert torch.equal(got, ref)
    after_ref = torch.randn((3,), generator=g_ref, dtype=torch.float64)
    after_new = torch.randn((3,), generator=g_new, dtype=torch.float64)
    assert torch.equal(after_ref, after_new)


DP_ALGOS = ("dpsgd", "dicesgd", "d2psgd")
CLIP_ALGOS = ("clipsgd", "clip21sgd", "clip21sgd2m")


def _options(data, algo: str) -> tuple[str, dict, dict]:
    noise = data.draw(st.sampled_from([0.0, 0.0, 0.3, 2.0]), label="noise")
    kw = dict(
        steps=data.draw(st.integers(1, 60), label="steps"),
        seeds=data.draw(st.integers(1, 4), label="seeds"),
        seed=data.draw(st.integers(0, 10**6), label="seed"),
        lr=data.draw(st.floats(0.01, 1.0), label="lr"),
        noise_multiplier=noise,
        device="cpu",
    )
    if algo in CLIP_ALGOS:
        popts = {"x0": data.draw(st.floats(-5, 5), label="x0")}
        kw["tau"] = data.draw(st.floats(0.05, 5.0), label="tau")
        if algo == "clip21sgd2m":
            kw["beta"] = data.draw(st.floats(0.05, 1.0), label="beta")
            kw["beta_hat"] = data.draw(st.floats(0.05, 1.0), label="beta_hat")
        return "clip21-example1", popts, kw
    c1 = data.draw(st.floats(0.1, 8.0), label="c1")
    popts = {"x0": data.draw(st.floats(-10, 10), label="x0")}
    if algo != "d2psgd":
        kw["c1"] = c1
        mode = data.draw(st.sampled_from(["flat", "automatic"]), label="clip_mode")
        kw["clip_mode"] = mode
        if mode == "automatic":
            kw["gamma"] = data.draw(st.floats(0.001, 1.0), label="gamma")
    else:
        kw["gamma"] = data.draw(st.floats(0.001, 1.0), label="gamma")
        kw["schedule"] = data.draw(st.sampled_from(["constant", "inv-k", "inv-sqrt-k"]), label="schedule")
    if algo == "dicesgd":
        kw["c2"] = data.draw(st.floats(0.01, 4.0), label="c2")  # small C2: clip(e, C2) is active
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
        for key in ("loss", "grad_norm", "dist_to_opt", "dist_to_fixed_point"):
            np.testing.assert_allclose(ra.trajectory[key], rb.trajectory[key], rtol=1e-12, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), algo=st.sampled_from(DP_ALGOS + CLIP_ALGOS))
def test_batched_engine_equals_reference_bit_for_bit(data, algo):
    problem, popts, kw = _options(data, algo)
    try:
        ref = runner.run(algo, problem, problem_options=popts, engine="reference", progress=False, **kw)
    except InvalidParameter as exc:  # diverged: the batched engine must say the same
        with pytest.raises(InvalidParameter, match=str(exc).split(":")[0][:20]):
            runner.run(algo, problem, problem_options=popts, engine="batched", progress=False, **kw)
        return
    fast = runner.run(algo, problem, problem_options=popts, engine="batched", progress=False, **kw)
    assert ref.settings.engine == "reference" and fast.settings.engine == "batched"
    _same_iterates(fast, ref)


@settings(max_examples=8, deadline=None)
@given(data=st.data(), algo=st.sampled_from(DP_ALGOS + CLIP_ALGOS))
def test_each_batched_seed_equals_its_single_seed_run(data, algo):
    problem, popts, kw = _options(data, algo)
    kw.update(seeds=3, noise_multiplier=1.0, steps=min(kw["steps"], 30), lr=min(kw["lr"], 0.1))
    many = runner.run(algo, problem, problem_options=popts, engine="batched", progress=False, **kw)
    for k, r in enumerate(many.runs):
        one = {**kw, "seeds": 1, "seed": kw["seed"] + k}
        alone = runner.run(algo, problem, problem_options=popts, engine="batched", progress=False, **one)
        assert np.array_equal(r.trajectory["x"], alone.runs[0].trajectory["x"])


def test_default_cli_runs_take_the_batched_engine():
    r = runner.run("dpsgd", "dicesgd-b1", steps=50, progress=False)
    assert r.settings.engine == "batched"
    r = runner.run("clip21sgd2m", "clip21-example1", steps=50, progress=False)
    assert r.settings.engine == "batched"


@pytest.mark.parametrize(
    "algo, problem, kw",
    [
        ("dpsgd", "quadratic", {}),  # no closed form
        ("clip21sgd2m", "stochastic-quadratic", {}),
    ],
)
def test_batched_engine_refuses_what_it_does_not_cover(algo, problem, kw):
    with pytest.raises(InvalidParameter, match="--engine"):
        runner.run(algo, problem, steps=3, engine="batched", progress=False, **kw)
    r = runner.run(algo, problem, steps=3, progress=False, **kw)
    assert r.settings.engine == "reference"


def test_record_steps_match_the_reference_recording():
    assert record_steps(10, 3) == [0, 3, 6, 9, 10]
    assert record_steps(9, 3) == [0, 3, 6, 9]
    assert record_steps(1, 1) == [0, 1]


def test_bad_engine_is_refused():
    with pytest.raises(InvalidParameter, match="--engine"):
        runner.run("dpsgd", "dicesgd-b1", steps=3, engine="fast")


@pytest.mark.slow  # tracing costs seconds; traced == vmap is tests/optim/test_optim_traced_kernel.py's job
@pytest.mark.parametrize(
    "algo, kw",
    [
        ("dpsgd", dict(c1=2.5, noise_multiplier=1.0)),
        ("dicesgd", dict(c1=0.7, c2=0.2, noise_multiplier=0.5, lr=0.3)),
    ],
)
def test_batched_engine_equals_the_traced_reference(algo, kw):
    """Runs of >= 500 steps take the traced per-sample kernel on the reference engine (the default
    path before the batched engine): the batched iterates equal those too."""
    ref = runner.run(algo, "dicesgd-b1", steps=600, engine="reference", progress=False, **kw)
    fast = runner.run(algo, "dicesgd-b1", steps=600, engine="batched", progress=False, **kw)
    _same_iterates(fast, ref)
