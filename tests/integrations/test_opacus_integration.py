"""dptheory.integrations.opacus: accountant vs Opacus, calibration, optimizers vs dptheory.optim, lint."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("opacus")

import torch  # noqa: E402
from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import RDPAccountant  # noqa: E402
from opacus.accountants.analysis import rdp as opacus_rdp  # noqa: E402
from torch import nn  # noqa: E402
from torch.func import functional_call  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler  # noqa: E402

from dptheory import api  # noqa: E402
from dptheory import optim as ref  # noqa: E402
from dptheory.integrations.opacus import (  # noqa: E402
    D2P2Optimizer,
    DiceSGDOptimizer,
    DptheoryAccountant,
    DptheoryPrivacyEngine,
    SetupError,
    SetupWarning,
    d2p2_certified_epsilon,
    lint_setup,
    make_private_with_epsilon,
)

INT_ORDERS = list(range(2, 64))
CASES = [(1.1, 0.01, 1000), (0.8, 0.05, 100), (4.0, 0.001, 10), (2.0, 0.1, 300)]


def _both(z: float, q: float, steps: int, orders=None):
    theirs, ours = RDPAccountant(), DptheoryAccountant(orders)
    for _ in range(steps):
        theirs.step(noise_multiplier=z, sample_rate=q)
        ours.step(noise_multiplier=z, sample_rate=q)
    return theirs, ours


# ---------------------------------------------------------------------------------- accountant
@pytest.mark.parametrize("z,q,steps", CASES)
def test_same_epsilon_as_opacus_on_integer_orders(z, q, steps):
    theirs, ours = _both(z, q, steps, orders=INT_ORDERS)
    rdp_theirs = np.asarray(opacus_rdp.compute_rdp(q=q, noise_multiplier=z, steps=steps, orders=INT_ORDERS))
    np.testing.assert_allclose(ours._rdp.rdp_curve().rdp, rdp_theirs, rtol=1e-9, atol=0)
    e_theirs = theirs.get_epsilon(1e-5, alphas=INT_ORDERS)
    assert ours.get_epsilon(1e-5) == pytest.approx(e_theirs, rel=1e-9)
    assert len(ours) == steps


@pytest.mark.parametrize("z,q,steps", CASES)
def test_never_larger_than_opacus_when_its_optimum_is_an_integer_order(z, q, steps):
    """Default grids: ours (a superset of Opacus's) is never larger when Opacus's optimum is an
    integer order; with a fractional optimum the documented gap (absolute-value series) applies."""
    theirs, ours = _both(z, q, steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e_theirs, order = theirs.get_privacy_spent(delta=1e-5)
    e_ours = ours.get_epsilon(1e-5)
    if float(order).is_integer():
        assert e_ours <= e_theirs * (1 + 1e-9)
    else:
        assert e_ours <= e_theirs * (1 + 1e-3)  # the fractional-order gap, small at these z
    # on Opacus's integer orders alone, ours is never larger
    assert e_ours <= theirs.get_epsilon(1e-5, alphas=list(range(2, 64))) * (1 + 1e-9)


def test_fractional_order_gap_is_ours_being_certified():
    """Where ours exceeds Opacus (order 1.1, z = 0.5, q = 0.2), Opacus's value is the true one and
    ours an upper bound on it: checked against high-precision quadrature."""
    mp = pytest.importorskip("mpmath")
    z, q, a = 0.5, 0.2, 1.1
    ours = DptheoryAccountant(orders=[a])
    ours.step(noise_multiplier=z, sample_rate=q)
    r_ours = float(ours._rdp.rdp_curve().rdp[0])
    r_theirs = float(opacus_rdp.compute_rdp(q=q, noise_multiplier=z, steps=1, orders=[a])[0])
    mp.mp.dps = 30
    qq, s, aa = mp.mpf(q), mp.mpf(z), mp.mpf(a)

    def f(x):
        return mp.npdf(x, 0, s) * ((1 - qq) + qq * mp.e ** ((2 * x - 1) / (2 * s**2))) ** aa

    truth = float(mp.log(mp.quad(f, [-mp.inf, -5, 0, 1, 3, 6, mp.inf])) / (aa - 1))
    assert r_theirs == pytest.approx(truth, rel=1e-8)
    assert r_ours >= truth
    assert r_ours / truth - 1 < 0.07  # the documented 6% gap


def test_accountant_interface_and_checkpoints(tmp_path):
    acc = DptheoryAccountant()
    assert acc.mechanism() == "dptheory-rdp" and len(acc) == 0 and acc.get_epsilon(1e-5) == 0.0
    for _ in range(5):
        acc.step(noise_multiplier=1.0, sample_rate=0.01)
    acc.step(noise_multiplier=1.5, sample_rate=0.01)
    assert len(acc) == 6 and acc.history == [(1.0, 0.01, 5), (1.5, 0.01, 1)]
    eps = acc.get_epsilon(1e-5)
    engine = PrivacyEngine()
    engine.accountant = acc
    model = nn.Linear(2, 1)
    path = tmp_path / "ckpt.pt"
    engine.save_checkpoint(path=path, module=model)
    engine2 = PrivacyEngine()
    engine2.accountant = DptheoryAccountant()
    engine2.load_checkpoint(path=path, module=nn.Linear(2, 1))
    assert engine2.get_epsilon(1e-5) == eps and len(engine2.accountant) == 6
    # an Opacus RDP checkpoint is replayed
    theirs = RDPAccountant()
    for _ in range(5):
        theirs.step(noise_multiplier=1.0, sample_rate=0.01)
    mine = DptheoryAccountant()
    mine.load_state_dict(theirs.state_dict())
    assert len(mine) == 5
    # an edited checkpoint is refused
    sd = acc.state_dict()
    sd["history"] = [(1.0, 0.01, 1)]
    with pytest.raises(ValueError):
        DptheoryAccountant().load_state_dict(sd)
    zero = DptheoryAccountant()
    zero.step(noise_multiplier=0.0, sample_rate=0.1)
    assert zero.get_epsilon(1e-5) == math.inf


# ------------------------------------------------------------------------------ calibration
def _data(n=40, d=5, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64), torch.randint(0, k, (n,), generator=g)


def _model(seed=1):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).double()


def _train(model, optimizer, loader):
    crit = nn.CrossEntropyLoss()
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        loss = crit(out, y) if len(y) else out.sum()
        loss.backward()
        optimizer.step()


@pytest.mark.parametrize("dp_optimizer", [None, "d2psgd"])
def test_make_private_with_epsilon_is_certified(dp_optimizer):
    x, y = _data()
    loader = DataLoader(TensorDataset(x, y), batch_size=10)
    model = _model()
    engine = DptheoryPrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, opt, dl = engine.make_private_with_epsilon(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=loader,
            target_epsilon=3.0,
            target_delta=1e-5,
            epochs=2,
            max_grad_norm=1.0,
            dp_optimizer=dp_optimizer,
        )
        for _ in range(2):
            _train(m, opt, dl)
    assert len(engine.accountant) == 8
    eps = engine.get_epsilon(1e-5)
    assert eps <= 3.0 and eps == pytest.approx(3.0, rel=1e-4)
    assert opt.privacy_report.noise_multiplier > 0


def test_make_private_with_epsilon_on_a_plain_engine():
    x, y = _data()
    model = _model()
    engine = PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, opt, _ = make_private_with_epsilon(
            engine,
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=DataLoader(TensorDataset(x, y), batch_size=10),
            target_epsilon=2.0,
            target_delta=1e-5,
            epochs=3,
            max_grad_norm=1.0,
        )
    want = api.calibrate(eps=2.0, delta=1e-5, algo="dpsgd", sample_rate=0.25, steps=12).noise_multiplier
    assert opt.noise_multiplier == pytest.approx(want, rel=1e-5)
    assert isinstance(engine.accountant, DptheoryAccountant)


# ------------------------------------------------------------------------------- optimizers
N, B = 20, 5
X, Y = _data(N)
BATCHES = [[0, 3, 4, 9, 11], [1, 2], [5, 6, 7, 8, 10, 12, 13], [], [14, 15, 19]]
LR, C1, SEED = 0.1, 0.5, 7
M0 = _model()


def _loss(params, s):
    return nn.functional.cross_entropy(functional_call(M0, params, (s["x"][None],)), s["y"][None])


def _run_opacus(dp_optimizer, z, **kw):
    model = _model()
    engine = DptheoryPrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm, opt, _ = engine.make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=LR),
            data_loader=DataLoader(TensorDataset(X, Y), batch_size=B),
            noise_multiplier=z,
            max_grad_norm=C1,
            dp_optimizer=dp_optimizer,
            noise_generator=torch.Generator().manual_seed(SEED),
            **kw,
        )
        for idx in BATCHES:
            i = torch.tensor(idx, dtype=torch.long)
            _train(gm, opt, [(X[i], Y[i])])
    return {k: v.detach() for k, v in model.named_parameters()}, engine, opt


def _run_ref(cls, z, **kw):
    params = {k: v.detach().clone() for k, v in _model().named_parameters()}
    opt = cls(params, _loss, {"x": X, "y": Y}, lr=LR, sample_rate=B / N, noise_multiplier=z, seed=SEED,
              device="cpu", kernel="vmap", **kw)  # fmt: skip
    for idx in BATCHES:
        i = torch.tensor(idx, dtype=torch.long)
        opt.step(batch={"x": X[i], "y": Y[i]})
    return opt.params


def _max_diff(a, b):
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@pytest.mark.parametrize("grad_bound", [None, 1e6])
def test_dicesgd_optimizer_equals_reference(grad_bound):
    ours, engine, opt = _run_opacus("dicesgd", 1.3, c2=0.3, grad_bound=grad_bound)
    want = _run_ref(ref.DiceSGD, 1.3, c1=C1, c2=0.3)
    assert _max_diff(ours, want) < 1e-6
    assert isinstance(opt, DiceSGDOptimizer) and len(engine.accountant) == len(BATCHES)
    # accounted by the certified DiceSGD accountant, not DP-SGD's
    cert = api.epsilon(noise_multiplier=1.3, delta=1e-5, algo="dicesgd", mode="certified", sample_rate=B / N,
                       steps=len(BATCHES), dataset_size=N, batch_size=B, c1=C1, c2=0.3,
                       grad_bound=grad_bound)  # fmt: skip
    assert engine.get_epsilon(1e-5) == pytest.approx(cert.epsilon, rel=1e-12)
    dpsgd = api.epsilon(noise_multiplier=1.3, delta=1e-5, algo="dpsgd", sample_rate=B / N, steps=len(BATCHES))
    assert engine.get_epsilon(1e-5) > dpsgd.epsilon


@pytest.mark.parametrize("projection", ["fresh", "fixed", "none"])
def test_d2p2_optimizer_equals_reference(projection):
    from accounting.schedules import noise_multipliers

    zs = noise_multipliers("inv-sqrt-k", 2.0, len(BATCHES))
    algo = "d2psgd" if projection == "none" else "d2p2sgd"
    ours, engine, opt = _run_opacus(
        algo, 2.0, schedule="inv-sqrt-k", steps=len(BATCHES), projection=projection
    )
    if projection == "none":
        want = _run_ref(ref.D2PSGD, zs, steps=len(BATCHES))
    else:
        want = _run_ref(ref.D2P2SGD, zs, steps=len(BATCHES), projection=projection)
    assert _max_diff(ours, want) < 1e-6
    assert isinstance(opt, D2P2Optimizer) and len(engine.accountant) == len(BATCHES)
    eps = engine.get_epsilon(1e-5)
    if projection == "none":
        cert = api.epsilon(
            noise_multiplier=2.0, delta=1e-5, algo="d2psgd", mode="certified", sample_rate=B / N,
            steps=len(BATCHES), dataset_size=N, batch_size=B, schedule="inv-sqrt-k",
        )  # fmt: skip
        assert eps == pytest.approx(cert.epsilon, rel=1e-9)
    else:  # the projection's sensitivity factor (> 1 for fresh here) costs privacy
        plain = d2p2_certified_epsilon(multipliers=zs, sample_rate=B / N, delta=1e-5, projection="none")[0]
        assert eps > plain


def test_per_layer_fresh_factor_reduces_to_single_matrix():
    from accounting.projection import _fresh_factor_x, layerwise_fresh_factor_x

    assert layerwise_fresh_factor_x([(50, 1.0)], 20.0) == pytest.approx(_fresh_factor_x(50, 20.0, 1.0))
    # the smallest layer dominates, never below any single layer's own factor
    lay = [(100, 100**-0.25), (3, 3**-0.25)]
    assert layerwise_fresh_factor_x(lay, 20.0) >= max(_fresh_factor_x(p, 20.0, s) for p, s in lay) * (
        1 - 1e-12
    )


def test_dptheory_optimizers_refuse_dpsgd_accounting():
    model = _model()
    engine = PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, opt, _ = engine.make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=DataLoader(TensorDataset(X, Y), batch_size=B),
            noise_multiplier=1.0,
            max_grad_norm=1.0,
        )
    dice = DiceSGDOptimizer(opt.original_optimizer, noise_multiplier=1.0, max_grad_norm=1.0,
                            expected_batch_size=B, sample_rate=B / N, dataset_size=N)  # fmt: skip
    with pytest.raises(TypeError, match="certified dicesgd accountant"):
        dice.attach_step_hook(engine.accountant.get_optimizer_hook_fn(sample_rate=B / N))
    dice.attach_step_hook(DptheoryAccountant().get_optimizer_hook_fn(sample_rate=B / N))


# ------------------------------------------------------------------------------------ lint
def _loader(**kw):
    return DataLoader(TensorDataset(X, Y), batch_size=B, **kw)


def test_lint_fixed_size_shuffled_loader():
    with pytest.raises(SetupError, match="fixed-size batches but the accountant assumes Poisson"):
        lint_setup(_loader(shuffle=True))
    model = _model()
    with pytest.raises(SetupError, match="Poisson"):
        DptheoryPrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=_loader(shuffle=True), noise_multiplier=1.0, max_grad_norm=1.0,
            poisson_sampling=False,
        )  # fmt: skip
    from opacus.data_loader import DPDataLoader

    assert lint_setup(DPDataLoader.from_data_loader(_loader())) == []
    assert lint_setup(_loader(shuffle=True), resampled=True) == []


def test_lint_weighted_sampler():
    sampler = WeightedRandomSampler(torch.linspace(0.1, 1.0, N), num_samples=N)
    with pytest.raises(
        SetupError, match="WeightedRandomSampler changes each example's inclusion probability"
    ):
        lint_setup(_loader(sampler=sampler))
    with pytest.warns(SetupWarning, match="WeightedRandomSampler is dropped"):
        lint_setup(_loader(sampler=sampler), resampled=True)


def test_lint_gradient_accumulation():
    with pytest.raises(SetupError, match=r"effective sample rate is 4 x q = 0\.4"):
        lint_setup(sample_rate=0.1, accumulation_steps=4)


def test_lint_noise_sum_vs_mean():
    rep = api.calibrate(eps=2.0, delta=1e-5, algo="dpsgd", sample_rate=0.01, steps=100, dataset_size=10_000)
    b = rep.parameters["batch_size"]
    z, c = rep.noise_multiplier, 1.0
    assert b == pytest.approx(100)
    # right: std z C on the sum, or z C / B on the mean
    assert lint_setup(noise_std=z * c, noise_on="sum", report=rep) == []
    assert lint_setup(noise_std=z * c / b, noise_on="mean", report=rep) == []
    # calibrated for the mean (z C / B) but added to the sum: B times too little
    with pytest.raises(SetupError, match="calibrated for the mean is added to the sum"):
        lint_setup(noise_std=z * c / b, noise_on="sum", report=rep)
    # calibrated for the sum (z C) but added to the mean: B times too much
    with pytest.warns(SetupWarning, match="calibrated for the sum is added to the mean"):
        lint_setup(noise_std=z * c, noise_on="mean", report=rep)
    with pytest.warns(SetupWarning, match="criterion reduces by 'sum'"):
        lint_setup(criterion=nn.CrossEntropyLoss(reduction="sum"), loss_reduction="mean")


def test_dicesgd_optimizer_residual_clip_equals_reference():
    """residual_clip=R (enforced as the gradient bound C1 + R) is the optimizer core's residual clip,
    and is accounted by the certified flush-regime bound with the same R."""
    ours, engine, opt = _run_opacus("dicesgd", 1.3, c2=0.3, residual_clip=0.5)
    want = _run_ref(ref.DiceSGD, 1.3, c1=C1, c2=0.3, residual_clip=0.5)
    assert _max_diff(ours, want) < 1e-6
    assert opt.grad_bound == pytest.approx(C1 + 0.5)
    cert = api.epsilon(noise_multiplier=1.3, delta=1e-5, algo="dicesgd", mode="certified", sample_rate=B / N,
                       steps=len(BATCHES), dataset_size=N, batch_size=B, c1=C1, c2=0.3,
                       residual_clip=0.5)  # fmt: skip
    assert engine.get_epsilon(1e-5) == pytest.approx(cert.epsilon, rel=1e-12)
    from accounting.errors import InvalidParameter

    with pytest.raises(InvalidParameter, match="--residual-clip"):
        _run_opacus("dicesgd", 1.3, c2=0.3, residual_clip=0.5, grad_bound=2.0)
