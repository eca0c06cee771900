"""``DptheoryPrivacyEngine``: Opacus's ``PrivacyEngine`` with the certified accountant, certified
calibration, dptheory's optimizers and the setup lint; ``make_private_with_epsilon`` for any engine."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from opacus import PrivacyEngine
from opacus.optimizers import DPOptimizer

from accounting.errors import InvalidParameter

from .accountant import DptheoryAccountant
from .d2p2_accounting import calibrate_d2p2, d2p2_layers
from .lint import lint_setup
from .optimizers import OPTIMIZER_CLASSES, residual_clip_as_grad_bound

#: ``dp_optimizer`` names accepted by :class:`DptheoryPrivacyEngine` (``None``/"dpsgd": Opacus's own).
DP_OPTIMIZERS = ("dpsgd", "dicesgd", "d2p2sgd", "d2psgd")


class DptheoryPrivacyEngine(PrivacyEngine):
    """Opacus ``PrivacyEngine`` with a :class:`DptheoryAccountant`, certified calibration,
    dptheory's optimizers (``dp_optimizer=...``) and the setup lint.

    ``make_private(..., dp_optimizer="dicesgd", c2=..., grad_bound=...)`` or
    ``dp_optimizer="d2p2sgd"`` / ``"d2psgd"`` (``schedule``, ``steps``, ``projection_dim``,
    ``projection``, ``gamma``) builds the matching optimizer; ``dp_optimizer=None`` keeps Opacus's
    ``DPOptimizer`` (DP-SGD). ``lint="error"`` (default) refuses a setup the accountant does not
    cover, ``"warn"`` only warns, ``"off"`` skips the check.
    """

    def __init__(self, *, secure_mode: bool = False, orders: Sequence[float] | None = None) -> None:
        super().__init__(accountant="rdp", secure_mode=secure_mode)
        self.accountant = DptheoryAccountant(orders)
        self._dp_optimizer: str | None = None
        self._dp_options: dict[str, Any] = {}

    def _prepare_optimizer(self, *, optimizer, **kwargs):
        if self._dp_optimizer in (None, "dpsgd"):
            return super()._prepare_optimizer(optimizer=optimizer, **kwargs)
        if isinstance(optimizer, DPOptimizer):
            optimizer = optimizer.original_optimizer
        for k in ("distributed", "clipping", "grad_sample_mode"):
            v = kwargs.pop(k, None)
            if k == "distributed" and v:
                raise NotImplementedError(f"{self._dp_optimizer}: distributed training is not supported")
            if k == "clipping" and v not in (None, "flat"):
                raise NotImplementedError(f"{self._dp_optimizer}: only flat clipping is supported")
            if k == "grad_sample_mode" and v not in (None, "hooks", "functorch", "ew"):
                raise NotImplementedError(f"{self._dp_optimizer}: grad_sample_mode={v!r} is not supported")
        gen = kwargs.pop("noise_generator", None)
        cls = OPTIMIZER_CLASSES[self._dp_optimizer]
        opts = dict(self._dp_options)
        if self._dp_optimizer == "d2psgd":
            opts["projection"] = "none"
        return cls(optimizer, generator=gen, secure_mode=self.secure_mode, **kwargs, **opts)

    def make_private(
        self,
        *,
        module,
        optimizer,
        data_loader,
        noise_multiplier: float,
        max_grad_norm: float,
        dp_optimizer: str | None = None,
        lint: str = "error",
        criterion=None,
        poisson_sampling: bool = True,
        loss_reduction: str = "mean",
        c2: float | None = None,
        grad_bound: float | None = None,
        residual_clip: float | None = None,
        schedule: str = "constant",
        steps: int | None = None,
        projection_dim: int | None = None,
        projection: str = "fresh",
        gamma: float = 0.01,
        **kwargs,
    ):
        """Opacus's ``make_private`` plus ``dp_optimizer`` and ``lint`` (class docstring)."""
        if dp_optimizer not in (None, *DP_OPTIMIZERS):
            raise InvalidParameter(
                "--algo", f"dp_optimizer must be one of {DP_OPTIMIZERS} (got {dp_optimizer!r})"
            )
        from accounting import validate

        noise_multiplier, max_grad_norm = _checked_noise_and_norm(noise_multiplier, max_grad_norm)
        _refuse_idle_options(
            dp_optimizer or "dpsgd",
            {
                "c2": (c2, None),
                "grad_bound": (grad_bound, None),
                "residual_clip": (residual_clip, None),
                "schedule": (schedule, "constant"),
                "steps": (steps, None),
                "projection_dim": (projection_dim, None),
                "projection": (projection, "fresh"),
                "gamma": (gamma, 0.01),
            },
        )
        if isinstance(c2, str):
            raise InvalidParameter("c2", f"make_private needs a number ({c2!r:.20} is for calibration)")
        if projection_dim is not None:
            projection_dim = validate.positive_int("projection_dim", projection_dim)
        if lint not in ("error", "warn", "off"):
            raise InvalidParameter("lint", f"must be error, warn or off (got {lint!r})")
        if lint != "off":
            lint_setup(
                data_loader,
                resampled=poisson_sampling,
                criterion=criterion,
                loss_reduction=loss_reduction,
                strict=lint == "error",
            )
        n = len(data_loader.dataset)
        q = _sample_rate(data_loader)
        self._dp_optimizer = dp_optimizer
        self._dp_options = {}
        if dp_optimizer not in (None, "dpsgd"):
            self._dp_options = dict(sample_rate=q, dataset_size=n)
            if dp_optimizer == "dicesgd":
                if grad_bound is None and residual_clip is None and not getattr(self, "_dicesgd_warned", 0):
                    warnings.warn(
                        "dp_optimizer='dicesgd' without residual_clip or grad_bound: one example can move "
                        "the error feedback without bound, so the certified epsilon is far above DP-SGD's "
                        "at this noise; pass residual_clip (e.g. 0.5 * max_grad_norm) to be accounted "
                        "as DP-SGD clipped at max_grad_norm + residual_clip",
                        UserWarning,
                        stacklevel=2,
                    )
                grad_bound = residual_clip_as_grad_bound(max_grad_norm, grad_bound, residual_clip)
                self._dp_options.update(c2=c2, grad_bound=grad_bound)
            else:
                zs = None
                if schedule != "constant":
                    if steps is None:
                        raise InvalidParameter("steps", f"schedule {schedule!r} needs the number of steps")
                    from accounting.schedules import noise_multipliers

                    t = validate.positive_int("steps", steps)  # 10.9 is refused, not cut to 10
                    zs = noise_multipliers(schedule, float(noise_multiplier), t).tolist()
                self._dp_options.update(
                    noise_multipliers=zs,
                    gamma=gamma,
                    projection_dim=projection_dim,
                    projection=projection,
                )
        if criterion is not None:
            kwargs["criterion"] = criterion
        try:
            return super().make_private(
                module=module,
                optimizer=optimizer,
                data_loader=data_loader,
                noise_multiplier=noise_multiplier,
                max_grad_norm=max_grad_norm,
                poisson_sampling=poisson_sampling,
                loss_reduction=loss_reduction,
                **kwargs,
            )
        finally:
            self._dp_optimizer, self._dp_options = None, {}

    def make_private_with_epsilon(
        self,
        *,
        module,
        optimizer,
        data_loader,
        target_epsilon: float,
        target_delta: float,
        epochs: int | None = None,
        steps: int | None = None,
        max_grad_norm: float,
        dp_optimizer: str | None = None,
        c2: float | str | None = None,
        grad_bound: float | None = None,
        residual_clip: float | None = None,
        schedule: str | None = None,
        projection_dim: int | None = None,
        projection: str = "fresh",
        **kwargs,
    ):
        """Calibrate with dptheory's certified accountant, then :meth:`make_private`.

        ``epochs`` (Opacus's convention: ``len(data_loader)`` steps each) or ``steps``. DiceSGD:
        ``c2`` defaults to C1; ``c2="auto"`` picks the largest C2 whose certified noise is within 1.1x
        DP-SGD's. D2P2: ``schedule`` defaults to Table 3's ``inv-sqrt-k`` (``constant`` for DP2-SGD-like
        runs). Returns ``(module, optimizer, data_loader)`` like Opacus; ``optimizer.noise_multiplier``
        is the calibrated z and ``optimizer.privacy_report`` says how it was certified.
        """
        if "noise_multiplier" in kwargs:
            raise InvalidParameter(
                "noise_multiplier", "is what make_private_with_epsilon calibrates; give it to make_private"
            )
        _refuse_idle_options(
            dp_optimizer or "dpsgd",
            {
                "c2": (c2, None),
                "grad_bound": (grad_bound, None),
                "residual_clip": (residual_clip, None),
                "schedule": (schedule, None),
                "projection_dim": (projection_dim, None),
                "projection": (projection, "fresh"),
            },
        )
        if len(self.accountant) > 0:
            warnings.warn(
                "make_private_with_epsilon: the accountant already holds steps; the calibrated noise "
                "assumes a fresh budget",
                stacklevel=2,
            )
        n = len(data_loader.dataset)
        q = _sample_rate(data_loader)
        t = _steps_of(epochs, steps, len(data_loader))
        algo = dp_optimizer or "dpsgd"
        extra: dict[str, Any] = {}
        if algo in ("d2p2sgd", "d2psgd"):
            schedule = schedule or "inv-sqrt-k"
            params = [p for p in module.parameters() if p.requires_grad]
            report = calibrate_d2p2(
                eps=target_epsilon,
                delta=target_delta,
                sample_rate=q,
                dataset_size=n,
                steps=t,
                schedule=schedule,
                projection="none" if algo == "d2psgd" else projection,
                layers=d2p2_layers(params, projection_dim) if algo == "d2p2sgd" else [],
                orders=self.accountant.orders,
            )
            if algo == "d2p2sgd" and projection == "fixed":
                raise NotImplementedError(
                    "calibration with a fixed projection needs the drawn matrices; calibrate fresh, or call "
                    "make_private with a noise multiplier and read get_epsilon"
                )
            extra = dict(schedule=schedule, steps=t, projection_dim=projection_dim, projection=projection)
        else:
            from dptheory import api

            opts: dict[str, Any] = dict(sample_rate=q, steps=t, dataset_size=n, batch_size=q * n)
            if algo == "dicesgd":
                grad_bound = residual_clip_as_grad_bound(max_grad_norm, grad_bound, residual_clip)
                opts.update(c1=max_grad_norm, c2=max_grad_norm if c2 is None else c2, grad_bound=grad_bound)
            else:
                opts.update(c1=max_grad_norm)
            same = dict(
                eps=target_epsilon,
                delta=target_delta,
                algo=algo,
                mode="certified",
                orders=[float(o) for o in self.accountant.orders],
            )
            report = api.calibrate(**same, **opts)
            if algo == "dicesgd":
                extra = dict(c2=float(report.parameters["c2"]), grad_bound=grad_bound)
                report = _warn_dicesgd_unbounded(report, lambda **kw: api.calibrate(**same, **kw), opts)
        self._dicesgd_warned = 1  # make_private_with_epsilon already warned, with numbers
        try:
            out = self.make_private(
                module=module,
                optimizer=optimizer,
                data_loader=data_loader,
                noise_multiplier=float(report.noise_multiplier),
                max_grad_norm=max_grad_norm,
                dp_optimizer=None if algo == "dpsgd" else algo,
                **extra,
                **kwargs,
            )
        finally:
            self._dicesgd_warned = 0
        out[1].privacy_report = report
        return out


def _warn_dicesgd_unbounded(report, calibrate, opts: dict[str, Any]):
    """DiceSGD calibrated without ``residual_clip`` or ``grad_bound`` certifies a huge noise (the
    paper's unbounded error feedback): warn, naming ``residual_clip`` and the noise it would need
    (:mod:`dptheory.dicesgd_hint`), and add the warning to the report."""
    from dataclasses import replace

    from dptheory import dicesgd_hint

    alt = dicesgd_hint.trainable_alternative(report, calibrate=calibrate, options=opts)
    if alt is None:
        return report
    from dptheory.cli.numbers import UP, fmt

    r = alt["residual_clip"]
    msg = (
        f"dp_optimizer='dicesgd' without residual_clip or grad_bound: the certified noise multiplier is "
        f"z = {fmt(report.noise_multiplier, UP)} (one example can move the error feedback without bound); "
        f"pass residual_clip={r:g} (or grad_bound={alt['grad_bound']:g}) to train at z = "
        f"{fmt(alt['noise_multiplier'], UP)} for the same target"
        + " (DP-SGD clipped at max_grad_norm + residual_clip, the flush regime)"
        * alt["flush_regime"]
    )
    warnings.warn(msg, UserWarning, stacklevel=3)
    return replace(report, warnings=(*report.warnings, msg))


def make_private_with_epsilon(privacy_engine: PrivacyEngine, **kwargs: Any):
    """:meth:`DptheoryPrivacyEngine.make_private_with_epsilon` for any Opacus ``PrivacyEngine`` (DP-SGD):
    swaps in a :class:`DptheoryAccountant` when the engine has another accountant."""
    if isinstance(privacy_engine, DptheoryPrivacyEngine):
        return privacy_engine.make_private_with_epsilon(**kwargs)
    if kwargs.get("dp_optimizer") not in (None, "dpsgd"):
        raise InvalidParameter("--algo", "DiceSGD / D2P2 need DptheoryPrivacyEngine")
    if not isinstance(privacy_engine.accountant, DptheoryAccountant):
        if len(privacy_engine.accountant) > 0:
            raise ValueError("the engine's accountant already holds steps; it cannot be replaced")
        privacy_engine.accountant = DptheoryAccountant()
    helper = DptheoryPrivacyEngine.__new__(DptheoryPrivacyEngine)
    helper.__dict__.update(privacy_engine.__dict__)
    helper._dp_optimizer, helper._dp_options = None, {}
    out = DptheoryPrivacyEngine.make_private_with_epsilon(helper, **kwargs)
    privacy_engine.dataset = helper.dataset
    return out


def _sample_rate(data_loader: Any) -> float:
    """Opacus's ``1 / len(data_loader)``; an empty loader is refused, not a ZeroDivisionError."""
    if len(data_loader) == 0:
        raise InvalidParameter("data_loader", "has no batches (an empty dataset?)")
    return 1.0 / len(data_loader)


def _steps_of(epochs: Any, steps: Any, batches_per_epoch: int) -> int:
    """The number of steps to calibrate for: ``steps`` (an integer: 10.9 is refused, not cut to
    10), or ``epochs x len(data_loader)`` rounded *up* (2.7 epochs of 10 batches are 27 steps;
    truncating to 2 epochs would calibrate for fewer steps than are trained)."""
    from accounting import validate

    if (epochs is None) == (steps is None):
        raise InvalidParameter("steps", "give exactly one of epochs or steps")
    if steps is not None:
        return validate.positive_int("steps", steps)
    e = validate.positive("epochs", epochs)
    total = e * batches_per_epoch * (1.0 - 1e-12)
    if total >= validate.MAX_COUNT:  # math.ceil of inf (epochs = 1e308) raised OverflowError
        raise InvalidParameter("epochs", f"must give at most 2**53 steps (got {epochs!r} epochs)")
    return validate.positive_int("epochs", math.ceil(total))


#: The options of one dp_optimizer each; given to another, they would be silently ignored.
_OWN_OPTIONS = {
    "dpsgd": (),
    "dicesgd": ("c2", "grad_bound", "residual_clip"),
    "d2p2sgd": ("schedule", "steps", "projection_dim", "projection", "gamma"),
}
_OWN_OPTIONS["d2psgd"] = _OWN_OPTIONS["d2p2sgd"]  # one optimizer class


def _refuse_idle_options(algo: str, given: dict[str, Any]) -> None:
    """One :class:`InvalidParameter` for an option set away from its default that ``algo`` does
    not use (``c2`` with DP-SGD, ``schedule`` with DiceSGD), as the command line refuses them."""
    own = _OWN_OPTIONS[algo]
    for name, (value, default) in given.items():
        if value != default and name not in own:
            raise InvalidParameter(name, f"does not apply to dp_optimizer={algo!r} (got {value!r:.40})")


def _checked_noise_and_norm(noise_multiplier: Any, max_grad_norm: Any) -> tuple[float, Any]:
    """``noise_multiplier`` >= 0 (Opacus allows 0: no privacy) and ``max_grad_norm`` > 0, or a
    sequence of them (Opacus's per-layer clipping): NaN or -1 used to pass and fail at the first
    ``step()`` inside torch."""
    from accounting import validate

    z = validate.nonnegative("noise_multiplier", noise_multiplier)
    if isinstance(max_grad_norm, list | tuple):
        return z, [validate.positive("max_grad_norm", c) for c in max_grad_norm]
    return z, validate.positive("max_grad_norm", max_grad_norm)
