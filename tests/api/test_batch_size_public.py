"""B is a public constant: adding one example changes neither the noise nor the normalisation.

The accountant compares D with D' = D + {xi'} under one fixed B (issue 10's review). These tests
build each per-sample optimizer on D and on D' with the same ``expected_batch_size`` and check
that the noise std, the noise drawn and the 1/B normalisation are identical, so that the two runs
differ only by the new example's own (clipped) contribution. They also pin the documented
fallback (warning when private and B is omitted) and the runner's one-tensor guard for D2P2.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from accounting.errors import InvalidParameter  # noqa: E402
from dptheory import optim  # noqa: E402
from dptheory.problems import PROBLEM_NAMES, get_problem  # noqa: E402


@pytest.fixture(scope="module")
def quad():
    return get_problem("quadratic", d=4, n_samples=8, mu=0.2, L=1.0)


def _with_extra_example(prob, scale: float = 3.0):
    """``data`` plus one far-away example (so that its gradient is clipped)."""
    extra = {k: v[:1] * scale + 1.0 for k, v in prob.data.items()}
    return {k: torch.cat([v, extra[k]]) for k, v in prob.data.items()}


ALGOS = {
    "dpsgd": lambda: (optim.DPSGD, dict(c=0.3)),
    "dicesgd": lambda: (optim.DiceSGD, dict(c1=0.3, c2=0.5)),
    "d2psgd": lambda: (optim.D2PSGD, dict(gamma=0.01)),
    "d2p2sgd": lambda: (optim.D2P2SGD, dict(gamma=0.01, projection_dim=2)),
}


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_noise_and_normalisation_do_not_depend_on_the_data(quad, algo):
    cls, kw = ALGOS[algo]()
    b = 6.0  # public constant, deliberately not q * len(data)
    common = dict(lr=0.1, noise_multiplier=1.7, sample_rate=1.0, steps=3, seed=5, device="cpu")
    d1 = quad.data
    d2 = _with_extra_example(quad)
    a = cls(quad.x0, quad.loss_fn, d1, expected_batch_size=b, **common, **kw)
    c = cls(quad.x0, quad.loss_fn, d2, expected_batch_size=b, **common, **kw)
    assert a.expected_batch_size == c.expected_batch_size == b
    assert a.batch_size_source == c.batch_size_source == "given (public constant)"
    for t in range(3):
        assert a.noise_std(t) == c.noise_std(t)
    assert a.mechanism()["noise_std"] == c.mechanism()["noise_std"]
    assert a.mechanism()["batch_size"] == c.mechanism()["batch_size"] == b
    a.step()
    c.step()
    for k in a.last_noise:  # full batch: no sampling draws, the noise streams line up exactly
        assert torch.equal(a.last_noise[k], c.last_noise[k])
    if algo in ("dpsgd", "d2psgd"):
        # x'_1 - x_1 = -(lr / B) * f(g') g' for the new example only: normalisation by the same B
        from torch.func import grad

        p0 = {k: v.detach().clone() for k, v in quad.x0.items()}
        sample = {k: v[-1] for k, v in d2.items()}
        gn = grad(quad.loss_fn)(p0, sample)["x"].numpy()
        nrm = float(np.linalg.norm(gn))
        f = min(1.0, 0.3 / nrm) if algo == "dpsgd" else 1.0 / (nrm + 0.01)
        diff = quad.flat(c.params) - quad.flat(a.params)
        np.testing.assert_allclose(diff, -0.1 / b * f * gn, rtol=1e-9, atol=1e-14)


def test_private_run_without_batch_size_warns_and_says_so(quad):
    with pytest.warns(optim.DataDependentBatchSizeWarning, match="expected_batch_size"):
        o = optim.DPSGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, noise_multiplier=1.0, sample_rate=0.5)
    assert o.expected_batch_size == 0.5 * quad.size
    assert "fallback" in o.batch_size_source


def test_non_private_run_without_batch_size_is_silent(quad):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o = optim.DiceSGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, sample_rate=0.5)
    assert o.expected_batch_size == 0.5 * quad.size


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_expected_batch_size_is_refused(quad, bad):
    with pytest.raises(InvalidParameter, match="--batch-size"):
        optim.DPSGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, expected_batch_size=bad)


def test_fixed_size_sampling_draws_round_b(quad):
    o = optim.DPSGD(
        quad.x0, quad.loss_fn, quad.data, lr=0.1, sample_rate=0.5, sampling="fixed", expected_batch_size=3
    )
    assert o.step().batch_size == 3


def test_runner_passes_the_accountants_b(monkeypatch):
    """dptheory run: the optimizer's B is the accountant's batch_size, and no fallback warning fires."""
    from dptheory import runner

    with warnings.catch_warnings():
        warnings.simplefilter("error", optim.DataDependentBatchSizeWarning)
        res = runner.run(
            "dicesgd",
            "quadratic",
            steps=3,
            noise_multiplier=1.0,
            delta=1e-5,
            sample_rate=0.25,
            mode="claimed",
        )
    assert res.mechanism["batch_size"] == res.privacy["report"]["parameters"]["batch_size"]
    assert res.mechanism["batch_size"] == 0.25 * 64


def test_every_problem_has_one_parameter_tensor():
    """The runner accounts D2P2's projection for one tensor: true of every registered problem."""
    for name in PROBLEM_NAMES:
        assert len(get_problem(name).x0) == 1, name


def test_runner_refuses_a_projected_run_on_several_tensors():
    from dptheory import runner

    prob = get_problem("quadratic", d=4)
    prob.x0 = {"w": torch.zeros(3, dtype=torch.float64), "b": torch.zeros(1, dtype=torch.float64)}
    s = runner.settings_for("d2p2sgd", "quadratic", defaults=prob, steps=5)
    with pytest.raises(InvalidParameter, match="--problem"):
        runner.check_one_projected_tensor(s, prob)
    s = runner.settings_for("d2psgd", "quadratic", defaults=prob, steps=5)
    runner.check_one_projected_tensor(s, prob)  # no projection: nothing to account per layer
