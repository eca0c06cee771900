"""Parameters, reports and the common machinery of the per-algorithm privacy modules.

Every algorithm (``dpsgd``, ``dicesgd``, the D2P2 family, ``clip21sgd2m``) reads the same
:class:`PrivacyParams` (field names are the CLI option names with ``_``) and answers with a
:class:`PrivacyReport`. Two *modes* exist:

* ``claimed``: the paper's own privacy statement evaluated as literally as its text allows
  (each module documents its reading of the rendered formula);
* ``certified``: an upper bound on epsilon whose every step is justified in the module's
  docstring and in ``docs/algorithms.md``.

Why a resolution step (:meth:`Algorithm.resolve`): users give any subset of the options; the
missing ones come from the paper's main experiment, and the report must say which ones were
assumed (``defaults_assumed``) so that a number is never silently tied to a hidden choice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter
from accounting.json_floats import json_float, json_tree

MODES = ("claimed", "certified")
ACCOUNTANTS = ("rdp", "pld")
#: The most steps any path accepts (exact in a float; int64 step tables hold it).
MAX_STEPS = 2**53
CONVERSIONS = ("improved", "classic")
PROJECTIONS = ("fresh", "fixed")

#: PrivacyParams fields that only DiceSGD understands (given with another algorithm: an error).
DICESGD_ONLY_OPTIONS = ("residual_clip", "clip_mode", "gamma")

#: Mode label used when DiceSGD falls back to its claimed number (no certified accountant).
CLAIMED_NOT_CERTIFIED = "claimed (not certified)"


@dataclass(frozen=True)
class PrivacyParams:
    """Every parameter any algorithm takes; ``None`` means "not given" (defaults fill it in).

    Conventions (docs/architecture.md): ``noise_multiplier`` is the *base* noise std divided by
    the L2 sensitivity of the summed quantity the noise is added to; schedules scale it per
    step. ``batch_size`` is the expected batch size ``q N`` under Poisson sampling.
    ``schedule_values`` are per-step factors multiplied by ``noise_multiplier`` (a file of
    absolute multipliers is used with ``noise_multiplier=1``).
    """

    algo: str
    noise_multiplier: float | None = None
    delta: float | None = None
    sample_rate: float | None = None
    steps: int | None = None
    dataset_size: int | None = None
    batch_size: float | None = None
    c1: float | None = None
    c2: float | None = None
    grad_bound: float | None = None
    schedule: str | None = None
    schedule_values: tuple[float, ...] | None = None
    projection_dim: int | None = None
    model_dim: int | None = None
    projection: str | None = None
    clients: int | None = None
    tau: float | None = None
    rounds: int | None = None
    orders: tuple[float, ...] | None = None
    # Extensions of the contract (all optional):
    epochs: float | None = None
    conversion: str = "improved"
    projection_sigma_max: float | None = None
    max_noise_ratio: float | None = None
    schedule_rho: float | None = None
    # DiceSGD only: the residual clip R, the clipping mode of C1 and automatic clipping's gamma.
    residual_clip: float | None = None
    clip_mode: str | None = None
    gamma: float | None = None
    # D2P2 family: RDP evaluation of a schedule, "auto" (None), "exact" or "bound" (algorithms.d2p2).
    evaluation: str | None = None

    def with_(self, **changes: Any) -> PrivacyParams:
        """A copy with some fields replaced (frozen dataclass helper)."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "schedule_values" and v is not None:
                v = f"<{len(v)} per-step values>"
            elif f.name == "orders" and v is not None:
                v = f"<{len(v)} orders from {min(v):g} to {max(v):g}>"
            out[f.name] = v
        return out


@dataclass(frozen=True)
class PrivacyReport:
    """The answer of :meth:`Algorithm.epsilon` (and of calibration).

    ``noise_std`` is the absolute std of the noise on the *averaged* update (where the
    algorithm defines one; per-client message for Clip21-SGD2M); ``order`` is the optimal
    Renyi order (``None`` for closed-form or PLD numbers). ``label`` is how the mode is shown
    to humans, e.g. ``"claimed (not certified)"``.

    Attributes:
        algo: the algorithm's registry name.
        mode: ``"certified"``, ``"claimed"``, ...
        accountant: ``"rdp"`` or ``"pld"``.
        epsilon: the epsilon at ``delta`` (an upper bound in certified mode).
        delta: the delta.
        noise_multiplier: the base noise multiplier z.
        noise_std: absolute noise std on the averaged update (or per message), where defined.
        order: the optimal Renyi order, or None.
        sample_rate: the Poisson rate q, where sampled.
        steps: the number of steps (or rounds).
        assumptions: what the number assumes, one sentence each.
        warnings: human-readable warnings.
        label: the mode as shown to humans.
        defaults_assumed: parameters filled from the paper's defaults.
        parameters: every resolved parameter.
        calibration: the calibration's bracket and iterations, when calibrated.
        details: accountant-specific facts (e.g. DiceSGD's certified regime).
    """

    algo: str
    mode: str
    accountant: str
    epsilon: float
    delta: float
    noise_multiplier: float
    noise_std: float | None
    order: float | None
    sample_rate: float | None
    steps: int
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    label: str = ""
    defaults_assumed: tuple[str, ...] = ()
    parameters: Mapping[str, Any] = field(default_factory=dict)
    calibration: Mapping[str, Any] | None = None
    #: Accountant-specific facts (DiceSGD: which certified regime gave the number, P(E^c), ...).
    details: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """One JSON-compatible object (inf/nan encoded as strings)."""
        out = {
            "algo": self.algo,
            "mode": self.mode,
            "label": self.label or self.mode,
            "accountant": self.accountant,
            "epsilon": json_float(self.epsilon),
            "delta": json_float(self.delta),
            "noise_multiplier": json_float(self.noise_multiplier),
            "noise_std": json_float(self.noise_std),
            "order": json_float(self.order),
            "sample_rate": json_float(self.sample_rate),
            "steps": self.steps,
            "assumptions": list(self.assumptions),
            "warnings": list(self.warnings),
            "defaults_assumed": list(self.defaults_assumed),
            "parameters": {k: json_float(v) for k, v in self.parameters.items()},
        }
        if self.calibration is not None:
            out["calibration"] = {k: json_float(v) for k, v in self.calibration.items()}
        if self.details is not None:
            out["details"] = json_tree(self.details)
        return out


@dataclass(frozen=True)
class Default:
    """A default value and where it comes from (shown in reports and --help)."""

    value: Any
    source: str


@dataclass(frozen=True)
class EpsilonValue:
    """Internal result of one accounting path before it becomes a report."""

    epsilon: float
    order: float | None = None
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    details: Mapping[str, Any] | None = None
    #: what produced the number when the RDP path chose another bound (e.g. DiceSGD's dominating
    #: pair, an (eps, delta) statement with no Renyi order); shown as the report's accountant
    accountant: str | None = None


# --------------------------------------------------------------------------------------------
# Shared numerical helpers
# --------------------------------------------------------------------------------------------


def orders_of(params: PrivacyParams) -> np.ndarray:
    """The order grid to use (``--orders`` or the package default)."""
    if params.orders is not None:
        return np.asarray(params.orders, dtype=float)
    from accounting.orders import DEFAULT_ORDERS

    return np.asarray(DEFAULT_ORDERS, dtype=float)


def curve_epsilon(curve: Any, delta: float, conversion: str) -> EpsilonValue:
    """RDP curve -> (epsilon, order) with the chosen conversion (its warnings passed on)."""
    from accounting.conversion import rdp_to_epsilon

    return result_epsilon(rdp_to_epsilon(curve, delta, method=conversion))


def result_epsilon(res: Any) -> EpsilonValue:
    """An :class:`accounting.conversion.EpsilonResult` as an :class:`EpsilonValue`."""
    # The conversion already reports dropped orders and an optimum on the edge of the grid.
    warns = list(getattr(res, "warnings", ()) or ())
    order = float(res.order) if res.order is not None and math.isfinite(res.order) else None
    return EpsilonValue(float(res.epsilon), order, (), tuple(warns))


def pld_event_epsilon(event: Any, delta: float) -> EpsilonValue:
    """Epsilon from the privacy-loss distribution: in closed form when ``event`` composes only
    plain Gaussians (:mod:`accounting.gaussian_pld`, exact, no grid), else dp-accounting's PLD
    accountant (pessimistic: an upper bound)."""
    from accounting.gaussian_pld import gaussian_mu, gdp_epsilon
    from accounting.interop import pld_epsilon

    mu = gaussian_mu(event)
    if mu is not None:
        eps = gdp_epsilon(mu, check_delta(delta))
        note = (
            f"accountant: exact PLD in closed form, no discretisation: the composition is mu-GDP with "
            f"mu = {mu:.6g} (Gaussian pair N(0,1) vs N(mu,1)); epsilon solves Balle & Wang's "
            "delta(eps), rounded up"
        )
        return EpsilonValue(eps, None, (note,))
    eps = float(pld_epsilon(event, delta))
    return EpsilonValue(
        eps,
        None,
        ("accountant: dp-accounting PLD (pessimistic discretisation, an upper bound)",),
    )


def check_delta(delta: Any) -> float:
    return validate.open_unit("--delta", delta)


def check_choice(option: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidParameter(option, f"must be one of {', '.join(allowed)} (got {value!r})")
    return value


# --------------------------------------------------------------------------------------------
# Algorithm base class
# --------------------------------------------------------------------------------------------


class Algorithm:
    """One private optimizer's privacy: defaults, claimed and certified epsilon.

    Subclasses implement :meth:`defaults`, :meth:`_resolve_specific`, :meth:`noise_std` and
    ``_epsilon_<mode>(params, accountant) -> EpsilonValue``.
    """

    name: str = ""
    title: str = ""
    paper: str = ""
    #: Modes this algorithm implements (may depend on optional modules, see :meth:`available_modes`).
    modes: tuple[str, ...] = MODES
    #: Whether the mechanism uses Poisson subsampling (q, B, N, epochs make sense).
    subsampled: bool = True
    #: Whether per-step noise schedules apply (then --schedule-file fixes the number of steps).
    uses_schedule: bool = False
    #: Options that this algorithm does not use (giving one is an error: it would be silently ignored).
    unused_options: tuple[str, ...] = ()

    # -- defaults and resolution -----------------------------------------------------------

    def defaults(self) -> dict[str, Default]:
        """Defaults from the paper's main experiment, keyed by PrivacyParams field."""
        raise NotImplementedError

    def available_modes(self) -> tuple[str, ...]:
        return self.modes

    def default_mode(self) -> str:
        return "certified"

    def resolve(self, params: PrivacyParams) -> tuple[PrivacyParams, tuple[str, ...], tuple[str, ...]]:
        """Fill missing options from :meth:`defaults`; validate everything.

        Returns ``(resolved, defaults_assumed, warnings)`` where ``defaults_assumed`` lists
        human-readable "option = value (source)" strings. Idempotent.
        """
        if params.algo != self.name:
            params = params.with_(algo=self.name)
        d = self.defaults()
        assumed: list[str] = []
        warns: list[str] = []
        p = params

        if p.delta is not None:
            p = p.with_(delta=check_delta(p.delta))
        if p.noise_multiplier is not None:
            p = p.with_(noise_multiplier=validate.positive("--noise-multiplier", p.noise_multiplier))
        check_choice("--conversion", p.conversion, CONVERSIONS)
        if p.orders is not None:
            from accounting.orders import check_orders

            p = p.with_(orders=tuple(check_orders(p.orders).tolist()))

        for name in DICESGD_ONLY_OPTIONS:
            if getattr(p, name) is not None and self.name != "dicesgd":
                raise InvalidParameter(option_name(name), f"only applies to --algo dicesgd (not {self.name})")
        for name in self.unused_options:
            if getattr(p, name) is not None:
                raise InvalidParameter(option_name(name), f"does not apply to --algo {self.name}")

        if self.subsampled:
            p = self._resolve_sampling(p, d, assumed)
        p = self._resolve_specific(p, d, assumed, warns)
        return p, tuple(assumed), tuple(warns)

    def _take(self, p: PrivacyParams, name: str, d: Mapping[str, Default], assumed: list[str]) -> Any:
        v = getattr(p, name)
        if v is None and name in d:
            v = d[name].value
            assumed.append(f"{option_name(name)} = {_fmt(v)} ({d[name].source})")
        return v

    def _resolve_sampling(
        self, p: PrivacyParams, d: Mapping[str, Default], assumed: list[str]
    ) -> PrivacyParams:
        """Sample rate q, dataset size N, expected batch size B = qN and the number of steps T."""
        q = p.sample_rate
        n = p.dataset_size
        b = p.batch_size
        if n is not None:
            n = validate.positive_int("--dataset-size", n)
        if b is not None:
            b = validate.positive("--batch-size", b)
        if q is not None:
            q = validate.rate("--sample-rate", q)
            if n is not None and b is not None and not math.isclose(q, b / n, rel_tol=1e-9):
                raise InvalidParameter(
                    "--sample-rate",
                    f"conflicts with --batch-size/--dataset-size ({_fmt(b)}/{n} = {b / n:.6g}); "
                    "give one or the other",
                )
            if n is None and b is not None:
                # N is not given: take the smallest N with q N >= B (ceil, not round; a relative
                # 1e-9 absorbs the rounding of B / q). Only DiceSGD's flush regime reads N (its
                # P(E^c) grows with N), and it holds for datasets of at most N examples, so the
                # inferred value is reported among the assumptions.
                n = validate.positive_int("--dataset-size", max(1, math.ceil(b / q * (1.0 - 1e-9))))
                assumed.append(
                    f"--dataset-size = {n} (inferred as ceil(B / q) from --batch-size and --sample-rate; "
                    "give --dataset-size if the dataset is larger)"
                )
            if n is None:
                n = self._take(p, "dataset_size", d, assumed)
            if b is None:
                b = q * n
        else:
            if n is None:
                n = self._take(p, "dataset_size", d, assumed)
            if b is None:
                b = self._take(p, "batch_size", d, assumed)
            if b > n:
                raise InvalidParameter("--batch-size", f"must be <= --dataset-size ({n}) (got {_fmt(b)})")
            q = validate.rate("--sample-rate", b / n)

        steps = p.steps
        if steps is not None and p.epochs is not None:
            raise InvalidParameter("--epochs", "give either --steps or --epochs, not both")
        if self.uses_schedule and p.schedule_values is not None:
            t_file = len(p.schedule_values)
            # the values themselves first: a bad file is the error, not the step count it implies
            if t_file == 0:
                raise InvalidParameter("--schedule-file", "contains no values")
            vals = np.asarray(p.schedule_values, dtype=float)
            if not np.all(np.isfinite(vals)) or np.any(vals <= 0):
                raise InvalidParameter("--schedule-file", "every per-step value must be a finite number > 0")
            if steps is not None and int(steps) != t_file:
                raise InvalidParameter(
                    "--steps", f"conflicts with --schedule-file, which has {t_file} per-step values"
                )
            if p.epochs is not None:
                raise InvalidParameter("--epochs", "the number of steps is set by --schedule-file")
            steps = t_file
        if steps is not None:
            steps = validate.positive_int("--steps", steps)
        else:
            epochs = p.epochs
            if epochs is None:
                epochs = self._take(p, "epochs", d, assumed)
            epochs = validate.positive("--epochs", epochs)
            raw = epochs / q
            if raw > MAX_STEPS:  # checked before math.ceil: epochs / q can overflow to inf
                raise InvalidParameter(
                    "--epochs", f"gives {raw:.3g} steps; at most 2^53 (~9e15) are supported"
                )
            steps = max(1, math.ceil(raw - 1e-9))
        if steps > MAX_STEPS:  # past 2^53 counts are not exact in floats, and int64 tables overflow
            opt = "--steps" if p.steps is not None else "--epochs"
            raise InvalidParameter(opt, f"gives {steps:.3g} steps; at most 2^53 (~9e15) are supported")
        return p.with_(sample_rate=q, dataset_size=n, batch_size=b, steps=steps, epochs=None)

    def _resolve_specific(
        self, p: PrivacyParams, d: Mapping[str, Default], assumed: list[str], warns: list[str]
    ) -> PrivacyParams:
        return p

    # -- numbers ---------------------------------------------------------------------------

    def noise_std(self, p: PrivacyParams) -> float | None:
        """Absolute noise std on the averaged update at the base step (None if undefined)."""
        return None

    def parameters(self, p: PrivacyParams) -> dict[str, Any]:
        """The resolved parameters worth showing in a report."""
        keys = ["dataset_size", "batch_size", "sample_rate", "steps"] if self.subsampled else []
        return {k: getattr(p, k) for k in keys + list(self.shown_parameters)}

    shown_parameters: tuple[str, ...] = ()

    def epsilon(
        self,
        params: PrivacyParams,
        mode: str | None = None,
        accountant: str = "rdp",
    ) -> PrivacyReport:
        """Epsilon at ``params.delta`` for ``params.noise_multiplier`` in the given mode.

        ``mode=None`` means the algorithm's default mode (certified wherever it exists).
        """
        accountant = check_choice("--accountant", accountant, ACCOUNTANTS)
        p, assumed, warns = self.resolve(params)
        if p.noise_multiplier is None:
            raise InvalidParameter("--noise-multiplier", "is required (a number > 0)")
        if p.delta is None:
            raise InvalidParameter("--delta", "is required (a number in (0, 1))")
        mode, label, mode_warns = self.choose_mode(mode)
        value = self._evaluate(p, mode, accountant)
        return self.build_report(p, mode, label, accountant, value, assumed, warns + mode_warns)

    def choose_mode(self, mode: str | None) -> tuple[str, str, tuple[str, ...]]:
        """(mode, label, warnings) for a requested mode (None = default)."""
        if mode is None:
            mode = self.default_mode()
            return mode, mode, ()
        check_choice("--mode", mode, MODES)
        return mode, mode, ()

    def _evaluate(self, p: PrivacyParams, mode: str, accountant: str) -> EpsilonValue:
        fn: Callable[[PrivacyParams, str], EpsilonValue] = getattr(self, f"_epsilon_{mode}")
        return fn(p, accountant)

    def epsilon_function(
        self, params: PrivacyParams, mode: str | None, accountant: str
    ) -> tuple[
        PrivacyParams, str, str, tuple[str, ...], tuple[str, ...], Callable[[PrivacyParams], EpsilonValue]
    ]:
        """Resolve once, then return ``fn(params) -> EpsilonValue`` (the same numbers as
        :meth:`epsilon`) for calibration loops."""
        accountant = check_choice("--accountant", accountant, ACCOUNTANTS)
        p, assumed, warns = self.resolve(params)
        if p.delta is None:
            raise InvalidParameter("--delta", "is required (a number in (0, 1))")
        mode, label, mode_warns = self.choose_mode(mode)

        def fn(q: PrivacyParams) -> EpsilonValue:
            return self._evaluate(q, mode, accountant)

        return p, mode, label, assumed, warns + mode_warns, fn

    def build_report(
        self,
        p: PrivacyParams,
        mode: str,
        label: str,
        accountant: str,
        value: EpsilonValue,
        assumed: tuple[str, ...],
        warns: tuple[str, ...],
        calibration: Mapping[str, Any] | None = None,
    ) -> PrivacyReport:
        """The :class:`PrivacyReport` of one evaluation: the resolved parameters ``p``, the mode and
        its label, the accountant, the value with its order, the defaults ``assumed`` and the
        warnings; ``calibration`` describes a calibration's search when the value came from one."""
        acc_shown = accountant if mode == "certified" or accountant == "pld" else self.claimed_accountant
        if value.accountant and mode == "certified" and accountant == "rdp":
            acc_shown = value.accountant
        if accountant == "pld" and not math.isfinite(value.epsilon):
            # sound but useless; the RDP route often stays finite there (e.g. at delta ~ 1e-28)
            warns = warns + (
                "the PLD accountant gives no finite epsilon here (inf is a sound but useless bound; "
                "its discretised tail does not resolve this delta): try --accountant rdp",
            )
        return PrivacyReport(
            algo=self.name,
            mode=mode,
            accountant=acc_shown,
            epsilon=float(value.epsilon),
            delta=float(p.delta),
            noise_multiplier=float(p.noise_multiplier),
            noise_std=self.noise_std(p),
            order=value.order,
            sample_rate=p.sample_rate if self.subsampled else None,
            steps=int(self.steps_of(p)),
            assumptions=tuple(self.assumptions(p, mode)) + value.assumptions,
            warnings=tuple(dict.fromkeys(warns + value.warnings)),
            label=label,
            defaults_assumed=assumed,
            parameters=self.parameters(p),
            calibration=calibration,
            details=value.details,
        )

    #: How the accountant of a claimed number is shown (claimed numbers may be closed forms).
    claimed_accountant: str = "rdp"

    def steps_of(self, p: PrivacyParams) -> int:
        return int(p.steps)

    def assumptions(self, p: PrivacyParams, mode: str) -> list[str]:
        return ["adjacency: add/remove one example"]


def option_name(field_name: str) -> str:
    """CLI spelling of a PrivacyParams field (``schedule_values`` comes from ``--schedule-file``)."""
    if field_name == "schedule_values":
        return "--schedule-file"
    return "--" + field_name.replace("_", "-")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)
