"""The optimizers against their special cases, their noise statistics and their seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dptheory import optim
from dptheory.optim.base import clip_factors, per_sample_norms
from dptheory.problems import get_problem


@pytest.fixture(scope="module")
def quad():
    return get_problem("quadratic", d=6, n_samples=16, mu=0.2, L=1.0)


@pytest.fixture(scope="module")
def squad():
    return get_problem("stochastic-quadratic", d=4, clients=3)


def gd_trajectory(prob, lr, steps, x0=None):
    x = prob.flat(prob.x0) if x0 is None else x0.copy()
    out = [x.copy()]
    for _ in range(steps):
        x = x - lr * prob.grad(x)
        out.append(x.copy())
    return np.array(out)


def trajectory(opt, prob, steps):
    out = [prob.flat(opt.params)]
    for _ in range(steps):
        opt.step()
        out.append(prob.flat(opt.params))
    return np.array(out)


# -- special cases ------------------------------------------------------------------------------
def test_dpsgd_without_noise_and_huge_clip_is_gd(quad):
    opt = optim.DPSGD(quad.x0, quad.loss_fn, quad.data, lr=0.3, c=1e9, noise_multiplier=0.0, device="cpu")
    np.testing.assert_allclose(trajectory(opt, quad, 25), gd_trajectory(quad, 0.3, 25), rtol=0, atol=1e-12)


def test_dpsgd_clips_to_c(quad):
    """With a small C every per-sample gradient is clipped: the step is (lr/N) sum C g_i/||g_i||."""
    c = 1e-3
    opt = optim.DPSGD(quad.x0, quad.loss_fn, quad.data, lr=0.5, c=c, device="cpu")
    g = quad.per_sample_grads(quad.flat(quad.x0))
    expect = quad.flat(quad.x0) - 0.5 * (g * (c / np.linalg.norm(g, axis=1, keepdims=True))).mean(axis=0)
    opt.step()
    np.testing.assert_allclose(quad.flat(opt.params), expect, atol=1e-14)


def test_dicesgd_with_huge_thresholds_is_gd(quad):
    opt = optim.DiceSGD(quad.x0, quad.loss_fn, quad.data, lr=0.3, c1=1e9, c2=1e9, device="cpu")
    np.testing.assert_allclose(trajectory(opt, quad, 25), gd_trajectory(quad, 0.3, 25), rtol=0, atol=1e-12)
    assert float(sum(v.abs().sum() for v in opt.e.values())) < 1e-12  # no clipping error accumulates


def test_dicesgd_error_state_matches_alg2_by_hand(quad):
    """Two steps of Alg. 2 written out in numpy with small C1, C2 (clipping active in both places)."""
    c1, c2, lr = 0.05, 0.3, 0.2
    opt = optim.DiceSGD(quad.x0, quad.loss_fn, quad.data, lr=lr, c1=c1, c2=c2, device="cpu")
    x, e = quad.flat(quad.x0), np.zeros(quad.dim)
    for _ in range(3):
        g = quad.per_sample_grads(x)
        n = np.linalg.norm(g, axis=1, keepdims=True)
        ce = e * min(1.0, c2 / np.linalg.norm(e)) if np.linalg.norm(e) > 0 else e
        v = (g * np.minimum(1, c1 / n)).mean(axis=0) + ce
        x, e = x - lr * v, e + g.mean(axis=0) - v
        opt.step()
    np.testing.assert_allclose(quad.flat(opt.params), x, atol=1e-13)
    np.testing.assert_allclose(opt.e["x"].numpy(), e, atol=1e-13)


def test_dice_adam_with_huge_thresholds_is_adam(quad):
    b1, b2, eps1, lr = 0.9, 0.99, 1e-8, 0.05
    opt = optim.DiceAdam(
        quad.x0, quad.loss_fn, quad.data, lr=lr, c1=1e9, c2=1e9, beta1=b1, beta2=b2, eps1=eps1
    )
    x = quad.flat(quad.x0)
    m1, m2 = np.zeros_like(x), np.zeros_like(x)
    for t in range(1, 16):
        g = quad.grad(x)
        m1 = b1 * m1 + (1 - b1) * g
        m2 = b2 * m2 + (1 - b2) * g * g
        x = x - lr * (m1 / (1 - b1**t)) / (np.sqrt(m2 / (1 - b2**t)) + eps1)
        opt.step()
    np.testing.assert_allclose(quad.flat(opt.params), x, atol=1e-12)


def test_clip21sgd2m_with_unit_momenta_is_clip21sgd(squad):
    """Same seeds, noise on, stochastic local gradients: the two codes give identical iterates."""
    kw = dict(lr=0.1, tau=0.5, noise_multiplier=0.7, sample_rate=0.25, seed=3, device="cpu")
    a = optim.FederatedClipping(
        squad.x0, squad.loss_fn, squad.client_data(), rule="clip21-2m", beta=1.0, beta_hat=1.0, **kw
    )
    b = optim.FederatedClipping(squad.x0, squad.loss_fn, squad.client_data(), rule="clip21", **kw)
    np.testing.assert_allclose(trajectory(a, squad, 30), trajectory(b, squad, 30), atol=1e-13)


def test_clipsgd_with_huge_tau_is_gd():
    prob = get_problem("clip21-example1")
    opt = optim.FederatedClipping(
        prob.x0, prob.loss_fn, prob.client_data(), rule="clip", lr=0.1, tau=1e9, device="cpu"
    )
    np.testing.assert_allclose(trajectory(opt, prob, 20), gd_trajectory(prob, 0.1, 20), atol=1e-13)


def test_clip21_with_huge_tau_is_gd_one_round_late(squad):
    """g^t = grad f(x^t) once clipping is off, and x^{t+1} = x^t - gamma g^t: GD delayed by round 0."""
    opt = optim.FederatedClipping(
        squad.x0, squad.loss_fn, squad.client_data(), rule="clip21", lr=0.2, tau=1e9, device="cpu"
    )
    traj = trajectory(opt, squad, 15)
    np.testing.assert_allclose(traj[1], traj[0])  # g^0 = 0: the first round does not move
    np.testing.assert_allclose(traj[1:], gd_trajectory(squad, 0.2, 14), atol=1e-12)


def test_clip_gd_is_stuck_on_example1():
    """Example 1: clipped gradients -tau and +tau cancel; Clip-GD never leaves x0."""
    prob = get_problem("clip21-example1")
    opt = optim.FederatedClipping(prob.x0, prob.loss_fn, prob.client_data(), rule="clip", lr=0.1, tau=1.0)
    assert np.all(trajectory(opt, prob, 50) == 1.0)


def test_d2psgd_without_noise_is_normalised_gd(quad):
    gamma, lr = 0.1, 0.2
    opt = optim.D2PSGD(quad.x0, quad.loss_fn, quad.data, lr=lr, gamma=gamma, device="cpu")
    x = quad.flat(quad.x0)
    for _ in range(10):
        g = quad.per_sample_grads(x)
        x = x - lr * (g / (np.linalg.norm(g, axis=1, keepdims=True) + gamma)).mean(axis=0)
        opt.step()
    np.testing.assert_allclose(quad.flat(opt.params), x, atol=1e-13)


def test_d2p2_without_projection_is_d2psgd(quad):
    z = np.linspace(2.0, 1.0, 12)
    kw = dict(lr=0.2, gamma=0.1, noise_multiplier=z, steps=12, sample_rate=0.5, seed=5, device="cpu")
    a = optim.D2P2SGD(quad.x0, quad.loss_fn, quad.data, projection="none", **kw)
    b = optim.D2PSGD(quad.x0, quad.loss_fn, quad.data, **kw)
    np.testing.assert_array_equal(trajectory(a, quad, 12), trajectory(b, quad, 12))


def test_d2p2_projection_is_unbiased_and_per_layer():
    """Default sigma_A = p^(-1/4): E[(1/sqrt p) A A^T g] = g, checked per tensor of a 2-tensor model."""
    torch.manual_seed(0)
    params = {"w": torch.zeros(3, 4, dtype=torch.float64), "b": torch.zeros(2, dtype=torch.float64)}
    data = {"u": torch.randn(32, 3, 4, dtype=torch.float64), "v": torch.randn(32, 2, dtype=torch.float64)}

    def loss(p, s):
        return (p["w"] * s["u"]).sum() + (p["b"] * s["v"]).sum()  # gradient independent of p

    opt = optim.D2P2SGD(params, loss, data, lr=1.0, gamma=1e-12, projection_dim=3, projection="fresh", seed=1)
    assert opt.p_layer == {"w": 3, "b": 2}
    g = opt.per_sample_grads(data)
    nrm = per_sample_norms(g)
    target = {k: (t / nrm.reshape(-1, *[1] * (t.dim() - 1))).mean(0) for k, t in g.items()}
    steps, acc = 1500, {k: torch.zeros_like(v) for k, v in params.items()}
    for _ in range(steps):
        before = {k: v.clone() for k, v in opt.params.items()}
        opt.step()
        for k in acc:
            acc[k] += before[k] - opt.params[k]
    for k in acc:
        est = acc[k] / steps
        assert est.shape == params[k].shape
        assert torch.allclose(est, target[k], atol=0.12 * float(target[k].abs().max()) + 0.03), k


def test_dp2sgd_rejects_decaying_noise(quad):
    from accounting.errors import InvalidParameter

    with pytest.raises(InvalidParameter):
        optim.DP2SGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, noise_multiplier=[2.0, 1.0], steps=2)


def test_automatic_clipping_is_bounded_by_c():
    norms = torch.tensor([0.0, 1e-3, 1.0, 1e6], dtype=torch.float64)
    f = clip_factors(norms, 2.0, mode="automatic", gamma=0.01)
    assert torch.all(f * norms < 2.0)
    flat = clip_factors(norms, 2.0)
    assert torch.allclose(flat * norms, torch.clamp(norms, max=2.0))


# -- sampling, noise and seeds ----------------------------------------------------------------
def test_poisson_batch_sizes(quad):
    opt = optim.DPSGD(quad.x0, quad.loss_fn, quad.data, lr=0.01, sample_rate=0.25, seed=0)
    sizes = [opt.step().batch_size for _ in range(400)]
    n, q = quad.size, 0.25
    assert abs(np.mean(sizes) - q * n) < 4 * math.sqrt(q * (1 - q) * n / 400)
    assert np.var(sizes) > 0  # Poisson, not fixed-size


def _collect_noise(opt, steps):
    out = []
    for _ in range(steps):
        opt.step()
        noise = opt.last_noise
        if isinstance(noise, dict):
            noise = torch.cat([v.reshape(-1) for v in noise.values()])
        out.append(noise.reshape(-1).numpy().copy())
    return np.concatenate(out)


def _report(**kw):
    api = pytest.importorskip("dptheory.api")
    return api.epsilon(defaults="paper", delta=1e-5, **kw)


def test_dpsgd_noise_matches_accountant(quad):
    z, c, q = 1.7, 0.5, 0.5
    opt = optim.DPSGD(
        quad.x0, quad.loss_fn, quad.data, lr=1e-3, c=c, noise_multiplier=z, sample_rate=q, steps=300, seed=2
    )
    w = _collect_noise(opt, 300)  # w_t of Alg. 1 line 6 (added to the *sum*)
    mech = opt.mechanism()
    rep = _report(
        noise_multiplier=mech["noise_multiplier"],
        algo=mech["algo"],
        sample_rate=mech["sample_rate"],
        steps=mech["steps"],
        dataset_size=mech["dataset_size"],
        batch_size=mech["batch_size"],
        c1=mech["c1"],
    )
    emp = w.std() / opt.expected_batch_size  # std of the noise in the averaged update
    assert rep.noise_std == pytest.approx(mech["noise_std"], rel=1e-12)
    assert emp == pytest.approx(rep.noise_std, rel=0.05)
    assert abs(w.mean()) < 4 * w.std() / math.sqrt(w.size)


def test_dicesgd_noise_matches_accountant(quad):
    z, c1, q = 3.0, 0.2, 0.25
    opt = optim.DiceSGD(
        quad.x0,
        quad.loss_fn,
        quad.data,
        lr=1e-3,
        c1=c1,
        c2=c1,
        noise_multiplier=z,
        sample_rate=q,
        steps=300,
        seed=4,
    )
    w = _collect_noise(opt, 300)  # w_t of Alg. 2 line 6 (added to the averaged direction)
    mech = opt.mechanism()
    rep = _report(
        noise_multiplier=z,
        algo="dicesgd",
        sample_rate=q,
        steps=300,
        dataset_size=mech["dataset_size"],
        batch_size=mech["batch_size"],
        c1=c1,
        c2=c1,
        mode="claimed",
    )
    assert rep.noise_std == pytest.approx(z * c1 / (q * quad.size), rel=1e-12)
    assert w.std() == pytest.approx(rep.noise_std, rel=0.05)


def test_clip21_noise_matches_accountant(squad):
    z, tau = 0.8, 0.3
    opt = optim.FederatedClipping(
        squad.x0,
        squad.loss_fn,
        squad.client_data(),
        rule="clip21-2m",
        lr=0.01,
        tau=tau,
        beta=0.5,
        beta_hat=0.5,
        noise_multiplier=z,
        steps=200,
    )
    w = _collect_noise(opt, 200)
    rep = _report(noise_multiplier=z, algo="clip21sgd2m", tau=tau, clients=len(squad.clients), rounds=200)
    assert rep.noise_std == pytest.approx(opt.noise_std(), rel=1e-12)
    assert w.std() == pytest.approx(rep.noise_std, rel=0.05)


def test_d2psgd_noise_follows_schedule(quad):
    z = 4.0 / np.sqrt(np.arange(1, 201))
    opt = optim.D2PSGD(
        quad.x0, quad.loss_fn, quad.data, lr=1e-3, noise_multiplier=z, steps=200, sample_rate=0.5, seed=1
    )
    b = opt.expected_batch_size
    draws = []
    for _ in range(200):
        opt.step()
        draws.append(opt.last_noise["x"].numpy().copy())
    draws = np.array(draws)  # (T, d)
    # standardise each step by its scheduled std: the result must be N(0, 1)
    std_units = draws / (z[:, None] / b)
    assert std_units.std() == pytest.approx(1.0, rel=0.06)


def test_d2p2_noise_matches_accountant_constant(quad):
    pytest.importorskip("accounting.schedules")
    z = 2.0
    opt = optim.D2PSGD(
        quad.x0,
        quad.loss_fn,
        quad.data,
        lr=1e-3,
        noise_multiplier=z,
        steps=300,
        sample_rate=0.5,
        seed=1,
        schedule="constant",
    )
    w = _collect_noise(opt, 300)
    m = opt.mechanism()
    rep = _report(
        noise_multiplier=z,
        algo="d2psgd",
        sample_rate=0.5,
        steps=300,
        dataset_size=m["dataset_size"],
        batch_size=m["batch_size"],
        schedule="constant",
    )
    assert w.std() == pytest.approx(rep.noise_std, rel=0.05)


@pytest.mark.parametrize("algo", ["dpsgd", "dicesgd", "d2p2sgd", "clip21sgd2m"])
def test_same_seed_same_run_other_seed_other_run(quad, squad, algo):
    def make(seed):
        if algo == "dpsgd":
            return optim.DPSGD(
                quad.x0, quad.loss_fn, quad.data, lr=0.1, noise_multiplier=1.0, sample_rate=0.5, seed=seed
            )
        if algo == "dicesgd":
            return optim.DiceSGD(
                quad.x0,
                quad.loss_fn,
                quad.data,
                lr=0.1,
                c1=0.5,
                noise_multiplier=1.0,
                sample_rate=0.5,
                seed=seed,
            )
        if algo == "d2p2sgd":
            return optim.D2P2SGD(
                quad.x0,
                quad.loss_fn,
                quad.data,
                lr=0.1,
                noise_multiplier=1.0,
                sample_rate=0.5,
                projection_dim=3,
                seed=seed,
            )
        return optim.FederatedClipping(
            squad.x0,
            squad.loss_fn,
            squad.client_data(),
            lr=0.1,
            beta=0.5,
            beta_hat=0.5,
            noise_multiplier=1.0,
            sample_rate=0.25,
            seed=seed,
        )

    prob = squad if algo == "clip21sgd2m" else quad
    a, b, c = (trajectory(make(s), prob, 10) for s in (7, 7, 8))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_mechanism_fields_are_privacy_params_names(quad, squad):
    from accounting.algorithms.base import PrivacyParams

    names = set(PrivacyParams.__dataclass_fields__)
    opts = [
        optim.DPSGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, steps=5),
        optim.DiceSGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, steps=5),
        optim.D2P2SGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, steps=5),
        optim.FederatedClipping(squad.x0, squad.loss_fn, squad.client_data(), lr=0.1, steps=5),
    ]
    for o in opts:
        m = o.mechanism()
        extra = set(m) - names - {"noise_std", "noise_on", "variant"}
        assert not extra, (type(o).__name__, extra)


def test_device_auto_and_bad_device(quad):
    from accounting.errors import InvalidParameter

    opt = optim.DPSGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, device="auto")
    assert opt.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(InvalidParameter, match="--device"):
            optim.DPSGD(quad.x0, quad.loss_fn, quad.data, lr=0.1, device="cuda")


@pytest.mark.slow
def test_compiled_kernel_matches_eager(quad):
    """compile=True (torch.compile of per-sample grads + clip + sum) gives the same iterates."""
    kw = dict(lr=0.2, c1=0.3, c2=0.3, noise_multiplier=1.0, sample_rate=0.5, seed=9, device="cpu")
    a = optim.DiceSGD(quad.x0, quad.loss_fn, quad.data, compile=True, **kw)
    b = optim.DiceSGD(quad.x0, quad.loss_fn, quad.data, **kw)
    np.testing.assert_allclose(trajectory(a, quad, 15), trajectory(b, quad, 15), atol=1e-10)


def test_mechanism_feeds_the_accountant_unchanged(quad, squad):
    """mechanism() -> dptheory.api.epsilon: the accountant's noise_std is the one the code draws."""
    api = pytest.importorskip("dptheory.api")
    allowed = set(api._OPTION_FIELDS) if hasattr(api, "_OPTION_FIELDS") else None
    opts = [
        optim.DPSGD(
            quad.x0, quad.loss_fn, quad.data, lr=0.1, c=0.7, noise_multiplier=1.3, sample_rate=0.5, steps=50
        ),
        optim.DiceSGD(
            quad.x0,
            quad.loss_fn,
            quad.data,
            lr=0.1,
            c1=0.4,
            c2=0.8,
            noise_multiplier=2.0,
            sample_rate=0.5,
            steps=50,
        ),
        optim.D2PSGD(
            quad.x0, quad.loss_fn, quad.data, lr=0.1, noise_multiplier=3.0, sample_rate=0.5, steps=50
        ),
        optim.FederatedClipping(
            squad.x0, squad.loss_fn, squad.client_data(), lr=0.1, tau=0.6, noise_multiplier=1.1, steps=50
        ),
    ]
    for o in opts:
        m = o.mechanism()
        kw = {
            k: v
            for k, v in m.items()
            if v is not None and k not in ("algo", "noise_multiplier", "noise_std", "noise_on", "variant")
        }
        if allowed is not None:
            kw = {k: v for k, v in kw.items() if k in allowed}
        mode = "claimed" if m["algo"] == "dicesgd" else None
        rep = api.epsilon(
            defaults="paper",
            noise_multiplier=m["noise_multiplier"],
            delta=1e-5,
            algo=m["algo"],
            mode=mode,
            **kw,
        )
        assert rep.noise_std == pytest.approx(m["noise_std"], rel=1e-12), m["algo"]
        assert rep.noise_multiplier == pytest.approx(m["noise_multiplier"]), m["algo"]
