"""Opacus's own PrivacyEngine methods with the swapped accountant (issue 19 §2):
``privacy_engine.accountant = DptheoryAccountant()`` then Opacus's ``make_private``,
``make_private_with_epsilon`` and ``get_epsilon``; DiceSGD without a residual clip warns."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("opacus")

import torch  # noqa: E402
from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from accounting.errors import InvalidParameter  # noqa: E402
from dptheory import api  # noqa: E402
from dptheory.cli.numbers import UP, fmt  # noqa: E402
from dptheory.integrations.opacus import DptheoryAccountant, DptheoryPrivacyEngine  # noqa: E402

N, BATCH, DELTA = 40, 10, 1e-5
Q = BATCH / N


def _loader(seed: int = 0) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(N, 5, generator=g), torch.randint(0, 3, (N,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=BATCH)


def _train(model, optimizer, loader, epochs: int) -> None:
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            out = model(x)
            (nn.functional.cross_entropy(out, y) if len(y) else out.sum()).backward()
            optimizer.step()


def _swapped() -> PrivacyEngine:
    engine = PrivacyEngine()
    engine.accountant = DptheoryAccountant()
    return engine


def test_history_assignment_is_what_get_epsilon_certifies():
    """Opacus's get_noise_multiplier sets ``accountant.history`` and reads get_epsilon."""
    acc = DptheoryAccountant()
    acc.history = [(1.3, 0.02, 50), (0.9, 0.02, 7)]
    stepped = DptheoryAccountant()
    for z, n in ((1.3, 50), (0.9, 7)):
        for _ in range(n):
            stepped.step(noise_multiplier=z, sample_rate=0.02)
    assert len(acc) == 57 and acc.history == stepped.history
    assert acc.get_epsilon(DELTA) == pytest.approx(stepped.get_epsilon(DELTA), rel=1e-12)
    acc.history = [(2.0, 0.02, 10)]  # replaced, not added
    want = api.epsilon(noise_multiplier=2.0, delta=DELTA, algo="dpsgd", sample_rate=0.02, steps=10).epsilon
    assert acc.get_epsilon(DELTA) == pytest.approx(want, rel=1e-9) and len(acc) == 10


def test_opacus_get_noise_multiplier_accepts_the_mechanism():
    z = get_noise_multiplier(
        target_epsilon=2.0, target_delta=DELTA, sample_rate=Q, steps=12, accountant="dptheory-rdp"
    )
    eps = api.epsilon(noise_multiplier=z, delta=DELTA, algo="dpsgd", sample_rate=Q, steps=12).epsilon
    assert eps <= 2.0  # Opacus's bisection keeps the upper end: certified by our accountant
    assert eps > 1.9  # and it is tight to Opacus's tolerance (0.01) plus bisection slack


def test_opacus_make_private_with_epsilon_then_get_epsilon():
    engine = _swapped()
    model = nn.Linear(5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's secure-RNG notice
        m, opt, dl = PrivacyEngine.make_private_with_epsilon(
            engine,
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=_loader(),
            target_epsilon=2.0,
            target_delta=DELTA,
            epochs=3,
            max_grad_norm=1.0,
        )
        _train(m, opt, dl, epochs=3)
    assert isinstance(engine.accountant, DptheoryAccountant)
    assert len(engine.accountant) == 3 * N // BATCH
    eps = engine.get_epsilon(DELTA)
    want = api.epsilon(
        noise_multiplier=opt.noise_multiplier, delta=DELTA, algo="dpsgd", sample_rate=Q, steps=12
    ).epsilon
    assert eps == pytest.approx(want, rel=1e-9) and eps <= 2.0


def test_opacus_make_private_then_get_epsilon():
    engine = _swapped()
    model = nn.Linear(5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, opt, dl = engine.make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=_loader(),
            noise_multiplier=1.2,
            max_grad_norm=1.0,
        )
        _train(m, opt, dl, epochs=2)
    want = api.epsilon(noise_multiplier=1.2, delta=DELTA, algo="dpsgd", sample_rate=Q, steps=8).epsilon
    assert engine.get_epsilon(DELTA) == pytest.approx(want, rel=1e-9)


def test_history_of_a_certified_run_cannot_be_overwritten():
    acc = DptheoryAccountant()
    mech = {"algo": "dicesgd", "sample_rate": 0.1, "dataset_size": 100, "batch_size": 10,
            "c1": 1.0, "c2": 1.0, "grad_bound": None}  # fmt: skip
    acc.step_certified(mech, 2.0)
    with pytest.raises(InvalidParameter, match="cannot be set"):
        acc.history = [(1.0, 0.1, 3)]


def _dicesgd_private(**extra):
    """DiceSGD through the engine's make_private_with_epsilon: (engine, optimizer, warnings raised)."""
    engine = DptheoryPrivacyEngine()
    model = nn.Linear(5, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, opt, _ = engine.make_private_with_epsilon(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=_loader(),
            target_epsilon=2.0,
            target_delta=DELTA,
            epochs=3,
            max_grad_norm=1.0,
            dp_optimizer="dicesgd",
            **extra,
        )
    return engine, opt, caught


def test_dicesgd_without_residual_clip_warns_with_the_usable_noise():
    engine, opt, caught = _dicesgd_private()
    ours = [str(w.message) for w in caught if "residual_clip" in str(w.message)]
    assert len(ours) == 1 and opt.privacy_report.warnings == (ours[0],)
    usable = api.calibrate(
        eps=2.0, delta=DELTA, algo="dicesgd", sample_rate=Q, steps=12, dataset_size=N, batch_size=BATCH,
        residual_clip=0.5, orders=[float(o) for o in engine.accountant.orders],
    ).noise_multiplier  # fmt: skip
    # the printed z is rounded up: copying it never gives an epsilon above the target
    assert f"z = {fmt(usable, UP)}" in ours[0] and float(fmt(usable, UP)) >= usable
    assert usable < opt.noise_multiplier


def test_dicesgd_with_residual_clip_does_not_warn():
    _, opt, caught = _dicesgd_private(residual_clip=0.5)
    assert not [w for w in caught if "residual_clip" in str(w.message)]
    assert opt.privacy_report.warnings == ()
