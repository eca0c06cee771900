"""DptheoryPrivacyEngine's arguments are checked before Opacus wraps anything (hostile probe):
NaN or negative noise and norms used to pass and fail at the first ``step()`` inside torch, an
option of another dp_optimizer was silently ignored, and a few values raised untyped errors."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("opacus")

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from accounting.errors import InvalidParameter  # noqa: E402
from dptheory.integrations.opacus import DptheoryPrivacyEngine  # noqa: E402


def _setup() -> dict:
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(40, 5, generator=g), torch.randint(0, 3, (40,), generator=g)
    model = nn.Linear(5, 3)
    return dict(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=DataLoader(TensorDataset(x, y), batch_size=10),
    )


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("noise_multiplier", dict(noise_multiplier=math.nan)),
        ("noise_multiplier", dict(noise_multiplier=-1.0)),
        ("noise_multiplier", dict(noise_multiplier="1")),
        ("noise_multiplier", dict(noise_multiplier=10**400)),
        ("max_grad_norm", dict(max_grad_norm=math.nan)),
        ("max_grad_norm", dict(max_grad_norm=-1.0)),
        ("c2", dict(dp_optimizer="dicesgd", c2="auto")),
        ("projection_dim", dict(dp_optimizer="d2p2sgd", projection_dim=0)),
        ("projection_dim", dict(dp_optimizer="d2p2sgd", projection_dim=2.7)),
        ("c2", dict(c2=2.0)),
        ("schedule", dict(dp_optimizer="dicesgd", schedule="inv-k", steps=10)),
        ("gamma", dict(gamma=-1.0)),
        ("grad_bound", dict(dp_optimizer="d2p2sgd", grad_bound=3.0)),
    ],
)
def test_make_private_refuses_before_wrapping(name: str, extra: dict) -> None:
    kw = dict(noise_multiplier=1.0, max_grad_norm=1.0, **_setup())
    kw.update(extra)
    with pytest.raises(InvalidParameter) as info:
        DptheoryPrivacyEngine().make_private(**kw)
    assert info.value.option == name


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("epochs", dict(epochs=1e308)),
        ("noise_multiplier", dict(epochs=1, noise_multiplier=5.0)),
        ("c2", dict(epochs=1, c2=2.0)),
        ("schedule", dict(epochs=1, schedule="inv-k")),
        ("projection_dim", dict(epochs=1, dp_optimizer="dicesgd", projection_dim=3)),
    ],
)
def test_make_private_with_epsilon_refuses(name: str, extra: dict) -> None:
    kw = dict(target_epsilon=2.0, target_delta=1e-5, max_grad_norm=1.0, **_setup())
    kw.update(extra)
    with pytest.raises(InvalidParameter) as info:
        DptheoryPrivacyEngine().make_private_with_epsilon(**kw)
    assert info.value.option == name


def test_zero_noise_is_still_allowed_as_in_opacus() -> None:
    """Opacus takes z = 0 (no privacy); the accountant then reports epsilon = inf."""
    engine = DptheoryPrivacyEngine()
    model, opt, loader = engine.make_private(noise_multiplier=0.0, max_grad_norm=1.0, **_setup())
    assert opt.noise_multiplier == 0.0


@pytest.mark.parametrize("calibrate", [False, True])
def test_an_empty_loader_is_named(calibrate: bool) -> None:
    """1 / len(data_loader) was a ZeroDivisionError (Opacus's too)."""
    kw = _setup()
    kw["data_loader"] = DataLoader(
        TensorDataset(torch.zeros(0, 5), torch.zeros(0, dtype=torch.long)), batch_size=10
    )
    engine = DptheoryPrivacyEngine()
    with pytest.raises(InvalidParameter) as info:
        if calibrate:
            engine.make_private_with_epsilon(
                target_epsilon=2.0, target_delta=1e-5, epochs=1, max_grad_norm=1.0, **kw
            )
        else:
            engine.make_private(noise_multiplier=1.0, max_grad_norm=1.0, **kw)
    assert info.value.option == "data_loader"
