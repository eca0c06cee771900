"""Python API: ``dptheory.epsilon(...)`` and ``dptheory.calibrate(...)``.

Keyword names are the CLI option names with ``_`` (the full list is in :func:`epsilon`'s
docstring); ``max_grad_norm`` is accepted as Opacus's name for ``c1``. The CLI calls exactly these
functions, so both give the same numbers.

Calibration (``target="noise_multiplier"``) returns the smallest noise multiplier whose epsilon
in the chosen mode is <= ``eps``: a safeguarded root search on log z (``accounting.calibration``); the
returned z always satisfies the target and is within a relative tolerance of 1e-6 of the
exact root. ``target="steps"`` returns the largest number of steps for a fixed z.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from accounting import validate
from accounting.algorithms.base import PrivacyParams, PrivacyReport
from accounting.errors import InvalidParameter, NotCertified, UnreachableTarget, python_names

if TYPE_CHECKING:
    from accounting.audit.result import AuditResult

__all__ = ["calibrate", "epsilon", "compare", "build_params", "CALIBRATION_RTOL"]

#: Relative tolerance of noise calibration (documented contract: <= 1e-6).
CALIBRATION_RTOL = 1e-6
TARGETS = ("noise_multiplier", "steps")

_OPTION_FIELDS = (
    "sample_rate",
    "batch_size",
    "dataset_size",
    "steps",
    "epochs",
    "c1",
    "c2",
    "grad_bound",
    "max_noise_ratio",
    "residual_clip",
    "clip_mode",
    "gamma",
    "schedule",
    "schedule_values",
    "schedule_rho",
    "projection_dim",
    "model_dim",
    "projection",
    "projection_sigma_max",
    "clients",
    "tau",
    "rounds",
    "evaluation",
)


@python_names
def build_params(
    *,
    algo: str,
    delta: float | None = None,
    noise_multiplier: float | None = None,
    schedule_file: str | None = None,
    orders: str | Sequence[float] | None = None,
    conversion: str | None = None,
    method: str | None = None,
    max_grad_norm: float | None = None,
    **options: Any,
) -> PrivacyParams:
    """Options (API/CLI spelling) -> unresolved :class:`PrivacyParams` (files read, orders parsed).

    ``max_grad_norm`` is Opacus's name for the clip norm ``c1`` (accepted as an alias)."""
    from accounting.algorithms.registry import get_algorithm

    algorithm = get_algorithm(algo)
    if max_grad_norm is not None:
        # checked here, under the name the caller typed (the algorithms only know --c1)
        if options.get("c1") is not None and options["c1"] != max_grad_norm:
            raise InvalidParameter(
                "--max-grad-norm",
                f"is Opacus's name for --c1; give one of them (got --c1 {options['c1']!r} and "
                f"--max-grad-norm {max_grad_norm!r})",
            )
        if "c1" in algorithm.unused_options:
            raise InvalidParameter("--max-grad-norm", f"does not apply to --algo {algo}")
        options = dict(options, c1=validate.positive("--max-grad-norm", max_grad_norm))
    unknown = sorted(set(options) - set(_OPTION_FIELDS))
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; allowed: {', '.join(_OPTION_FIELDS)}")
    if conversion is not None and method is not None and conversion != method:
        raise InvalidParameter("--conversion", f"conversion={conversion!r} and method={method!r} disagree")
    conv = conversion or method or "improved"
    if conv not in ("improved", "classic"):
        named = "--method" if conversion is None and method is not None else "--conversion"
        raise InvalidParameter(named, f"must be improved or classic (got {conv!r})")
    fields: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    if delta is not None:
        fields["delta"] = validate.open_unit("--delta", delta)
    if noise_multiplier is not None:
        fields["noise_multiplier"] = validate.positive("--noise-multiplier", noise_multiplier)
    if schedule_file is not None:
        if not isinstance(schedule_file, str | os.PathLike):
            raise InvalidParameter("--schedule-file", f"must be a path (got {type(schedule_file).__name__})")
        if "schedule_values" in fields:
            raise InvalidParameter("--schedule-file", "give either schedule_file or schedule_values")
        fields["schedule_values"] = _read_schedule(schedule_file)
    if "schedule_values" in fields:
        values = validate.real_array("--schedule-values", fields["schedule_values"])
        fields["schedule_values"] = tuple(values.tolist())
    if orders is not None:
        fields["orders"] = _parse_orders(orders)
    if "evaluation" in fields:
        from accounting.algorithms.d2p2 import EVALUATIONS

        if fields["evaluation"] not in EVALUATIONS:
            raise InvalidParameter(
                "evaluation", f"must be one of {', '.join(EVALUATIONS)} (got {fields['evaluation']!r})"
            )
    c2 = fields.get("c2")
    if "max_noise_ratio" in fields:
        if not (isinstance(c2, str) and c2.strip().lower() == "auto"):
            raise InvalidParameter("--max-noise-ratio", "only applies with --c2 auto")
        ratio = validate.positive("--max-noise-ratio", fields["max_noise_ratio"])
        if ratio < 1:
            raise InvalidParameter("--max-noise-ratio", f"must be >= 1 (got {ratio!r})")
    if isinstance(c2, str) and c2.strip().lower() == "auto" and algo != "dicesgd":
        raise InvalidParameter("--c2", f"does not apply to --algo {algo}")
    if isinstance(c2, str):
        if c2.strip().lower() != "auto":  # a number is passed as a number, not as text
            raise InvalidParameter("--c2", f"must be a number > 0 or 'auto' (got {c2!r:.80})")
        fields["c2"] = "auto"
    return PrivacyParams(algo=algo, conversion=conv, **fields)


def _read_schedule(path: str) -> tuple[float, ...]:
    from accounting.schedules import read_schedule_file

    values = read_schedule_file(path)
    return tuple(float(v) for v in values)


def _parse_orders(orders: str | Sequence[float]) -> tuple[float, ...]:
    if isinstance(orders, str):
        from accounting.orders import parse_orders

        return tuple(float(o) for o in parse_orders(orders))
    from accounting.orders import check_orders

    return tuple(float(o) for o in check_orders(validate.real_array("--orders", orders)))


DEFAULTS = (None, "paper")


def _rdp_only_options(accountant: str, options: dict[str, Any]) -> None:
    """Options that tune the RDP path do nothing under the PLD accountant: refuse them, naming the
    one given (a silently ignored option reads as if it had been applied)."""
    if accountant != "pld":
        return
    for key, what in (
        ("conversion", "the RDP -> (eps, delta) conversion"),
        ("method", "the RDP -> (eps, delta) conversion"),
        ("evaluation", "how a schedule's RDP is evaluated"),
    ):
        if options.get(key) is not None:
            raise InvalidParameter(f"--{key}", f"applies only to --accountant rdp ({what}); PLD has none")


def _require_explicit_sampling(
    algorithm: Any, defaults: str | None, options: dict[str, Any], *, steps: bool
) -> None:
    """The API never guesses the dataset: without ``defaults="paper"`` the quantities that fix the
    sample rate and the number of steps must be given (the CLI prints the defaults it assumes and
    passes ``defaults="paper"``; a trainer calling the API would get a silently wrong z).
    Opacus makes its users pass the sample rate for the same reason."""
    if defaults not in DEFAULTS:
        raise InvalidParameter("defaults", f"must be None or 'paper' (got {defaults!r})")
    if defaults == "paper":
        return

    def given(*names: str) -> bool:
        return all(options.get(n) is not None for n in names)

    hint = "or pass defaults='paper' to use the paper's experiment"
    if algorithm.name == "clip21sgd2m":
        if steps and not given("rounds"):
            raise InvalidParameter("rounds", f"is required in the API (the number of rounds), {hint}")
        return
    if not (given("sample_rate") or given("batch_size", "dataset_size")):
        raise InvalidParameter(
            "sample_rate", f"is required in the API (or batch_size and dataset_size), {hint}"
        )
    if steps and not (
        given("steps") or given("epochs") or given("schedule_file") or given("schedule_values")
    ):
        raise InvalidParameter("steps", f"is required in the API (or epochs), {hint}")


def _check_order_floor(p: PrivacyParams, eps: float) -> None:
    """Explain an unreachable target that the order grid causes: with RDP -> 0 the improved
    conversion still gives ``log1p(-1/a) - (log(delta) + log(a)) / (a - 1)`` at order a."""
    import math

    import numpy as np

    from accounting.algorithms.base import orders_of

    orders = orders_of(p)
    a = orders[orders > 1.01]
    if p.conversion == "classic":
        floor = float(np.min(math.log(1.0 / p.delta) / (orders - 1.0)))
    else:
        floor = (
            float(np.min(np.log1p(-1.0 / a) - (math.log(p.delta) + np.log(a)) / (a - 1.0))) if a.size else 0.0
        )
    if eps < floor:
        need = 2.0 * math.log(1.0 / p.delta) / eps
        suggest = int(min(10 ** math.ceil(math.log10(need)), 1_000_000))
        raise UnreachableTarget(
            "--eps",
            f"{eps:g} is below what Renyi orders up to {orders.max():g} can certify at delta={p.delta:g} "
            f"(eps >= {floor:.4g} even with infinite noise); add larger orders, e.g. "
            f"--orders default,{suggest}",
        )


def _check_pld_delta(accountant: str, p: PrivacyParams) -> None:
    """Why a PLD calibration found only inf: delta below what dp-accounting's PLD resolves."""
    from accounting.interop import PLD_DELTA_SLACK

    if accountant == "pld" and p.delta is not None and p.delta <= PLD_DELTA_SLACK:
        raise InvalidParameter(
            "--delta",
            f"the pld accountant resolves delta only above {PLD_DELTA_SLACK:g} (dp-accounting's "
            "floating-point error); use --accountant rdp",
        )


def _check_eps(eps: Any) -> float:
    return validate.positive("--eps", eps)


def resolve_auto_c2(
    algorithm: Any, params: PrivacyParams, *, budget: Callable[[PrivacyParams], float], extra: list[str]
) -> PrivacyParams:
    """Replace ``c2="auto"`` by the design helper's C2 (DiceSGD only; other algorithms ignore C2).

    The C2 chosen has at most :data:`C2_DIGITS` significant digits, rounded toward the side the
    certificate allows, so the value printed in the report is exactly the one certified and a user
    who copies it gets the reported epsilon: up in the flush regime (any C2 >= the minimum
    certifies the same noise and P(E^c) only falls as C2 grows), down otherwise (a smaller C2
    shifts the hidden state less, so its epsilon is no larger).
    """
    if params.c2 != "auto":
        return params
    if algorithm.name != "dicesgd":
        return params.with_(c2=None)
    from accounting.algorithms.dicesgd import DEFAULT_MAX_NOISE_RATIO, auto_c2, auto_c2_flush

    ratio = params.max_noise_ratio
    ratio = DEFAULT_MAX_NOISE_RATIO if ratio is None else validate.positive("--max-noise-ratio", ratio)
    p, _, _ = algorithm.resolve(params.with_(c2=None))
    flush = auto_c2_flush(p)
    if flush is not None:
        flush = {**flush, "c2": _c2_digits(flush["c2"], up=True)}
        c1r = p.c1 + flush["rho"]
        c2_min = _digits(flush["c2_min"], C2_DIGITS, up=True)  # a threshold to stay above: shown up
        p_fail = _digits(flush["p_fail"], 3, up=True)  # an upper bound: shown up
        msg = (
            f"--c2 auto = {flush['c2']:.6g} = max(C1, {c2_min:.6g}); "
            f"{c2_min:.6g} = rho (1 + {flush['margin']:.3g}) with rho = {flush['rho']:.6g} "
            f"is the smallest C2 with P(E^c) <= delta/100 (others' batch <= {flush['k']}); "
            f"P(E^c) <= {p_fail:.3g} at the chosen C2, so the flush "
            "regime applies. Every C2 >= that minimum certifies the same noise and runs the same "
            "trajectory on E, so C2 is kept >= C1 as Theorem 3.7 assumes"
        )
        if budget is not _budget_at_given_noise:
            z_dp = _digits(_dpsgd_noise_at_clip(p, budget), C2_DIGITS, up=True)  # a noise: shown up
            msg += (
                f"; DP-SGD clipped at C1 + rho = {c1r:g} needs z = {z_dp:.6g} (noise std "
                f"{z_dp * c1r / p.batch_size:.4g}, i.e. {z_dp * c1r / p.c1:.6g} in DiceSGD's units "
                "sigma1 B / C1, to compare with the certified z)"
            )
        extra.append(msg)
        return params.with_(c2=flush["c2"])
    z_budget = budget(p)
    c2 = auto_c2(p, budget_noise_multiplier=z_budget, max_noise_ratio=ratio)
    c2 = c2 if c2 == p.c1 else _c2_digits(c2, up=False)  # C2 = C1 (every C2 qualifies) is kept as given
    extra.append(
        f"--c2 auto = {c2:.6g}: largest C2 whose certified DiceSGD noise is within {ratio:g}x the DP-SGD "
        f"noise (DP-SGD reference z = {z_budget:.6g})"
    )
    return params.with_(c2=c2)


#: Significant digits of the C2 chosen by ``c2="auto"`` (the report prints parameters to 6).
C2_DIGITS = 6
#: Significant digits of a calibrated z in the report (rounded up there).
Z_DIGITS = 10


def _digits(x: float, digits: int, *, up: bool) -> float:
    """``x`` rounded up (or down) to ``digits`` significant digits; unchanged if it has no more.
    The nearest double to a decimal above ``x`` is still >= ``x`` (rounding to nearest is
    monotone), so the direction survives the conversion back to float."""
    from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal

    rounding = ROUND_CEILING if up else ROUND_FLOOR
    return float(Context(prec=digits, rounding=rounding).plus(Decimal(x)))


def _c2_digits(c2: float, *, up: bool) -> float:
    return _digits(c2, C2_DIGITS, up=up)


def _printable_pld_noise(eps_of: Callable[[float], float], z: float, eps: float) -> float:
    """The smallest of a few z' >= ``z`` with :data:`Z_DIGITS` digits whose epsilon meets ``eps``.

    dp-accounting's pessimistic PLD epsilon is an upper bound at every z but is not monotone in z at
    the scale of its grid (d2p2sgd claimed, q = 0.01, T = 1000, delta = 1e-10: 0.0999999983 at
    z = 81.490363995 but 0.1000000016 at 81.490364, the z printed rounded up), so the printed z is
    evaluated itself, and moved up by 1e-7, 4e-7, ... relative until its epsilon meets the target.
    """
    for k in range(8):
        factor = 1.0 if k == 0 else 1.0 + 1e-7 * 4.0 ** (k - 1)
        zk = _digits(z * factor, Z_DIGITS, up=True)
        if eps_of(zk) <= eps:
            return zk
    raise UnreachableTarget(
        "--eps", f"the pld accountant's epsilon does not settle below {eps:g} near z = {z:.6g}"
    )


def _with_extra(report: PrivacyReport, extra: list[str]) -> PrivacyReport:
    if not extra:
        return report
    return replace(report, defaults_assumed=tuple(report.defaults_assumed) + tuple(extra))


@python_names
def epsilon(
    *,
    noise_multiplier: float | None = None,
    delta: float,
    algo: str,
    mode: str | None = None,
    accountant: str = "rdp",
    defaults: str | None = None,
    **options: Any,
) -> PrivacyReport:
    """Epsilon of ALGO at ``delta`` for base noise multiplier ``noise_multiplier``.

    ``defaults=None`` (the default) requires the sampling options (``sample_rate`` or
    ``batch_size`` + ``dataset_size``; ``steps`` or ``epochs``; ``rounds`` for clip21sgd2m);
    ``defaults="paper"`` fills what is missing from the paper's main experiment, as the CLI does.

    ``mode=None`` is the algorithm's default (certified). With ``schedule_file`` the per-step
    values are multiplied by ``noise_multiplier``, which then defaults to 1.

    Every option (``None`` = not given; ranges in ``dptheory epsilon --help``):

    * sampling and length: ``sample_rate`` (Poisson rate q), ``batch_size`` (expected B = qN),
      ``dataset_size`` (N), ``steps`` (T), ``epochs`` (T = ceil(epochs / q));
    * clipping (dpsgd, dicesgd): ``c1`` (clip norm; alias ``max_grad_norm``, Opacus's name),
      ``c2`` (DiceSGD's error clip, a number or ``"auto"``), ``max_noise_ratio`` (for
      ``c2="auto"``), ``grad_bound`` (a bound on every per-example gradient norm),
      ``residual_clip`` (DiceSGD's residual clip R), ``clip_mode`` (``"flat"`` or
      ``"automatic"``), ``gamma`` (automatic clipping's gamma);
    * D2P2 family: ``schedule`` (``constant``, ``inv-k``, ``inv-sqrt-k``, ``exp``),
      ``schedule_file`` (a file of per-step factors) or ``schedule_values`` (a sequence),
      ``schedule_rho`` (the exp schedule's rho), ``projection_dim``, ``model_dim``,
      ``projection`` (``"fresh"`` or ``"fixed"``), ``projection_sigma_max``, ``evaluation``
      (``"auto"``, ``"exact"`` or ``"bound"``: how a schedule's RDP is evaluated; auto is exact
      when estimated under about a second; the report's assumptions say which was used);
    * Clip21-SGD2M: ``clients``, ``tau``, ``rounds``;
    * accounting: ``orders`` (a ``--orders`` string or a sequence), ``conversion`` or its alias
      ``method`` (``"improved"`` or ``"classic"``).

    Args:
        noise_multiplier: the base noise multiplier z (default 1 with ``schedule_file``).
        delta: the target delta, in (0, 1).
        algo: the algorithm (one of ``accounting.algo_names.ALGO_NAMES``: ``dpsgd``, ``dicesgd``, ...).
        mode: ``"certified"`` (the default), ``"claimed"``, or another mode the algorithm lists.
        accountant: ``"rdp"`` or ``"pld"``.
        defaults: None (every sampling option required) or ``"paper"``.
        **options: the options listed above.

    Returns:
        A :class:`PrivacyReport`; its epsilon is unrounded (round it up when printing).

    Raises:
        InvalidParameter: a missing, unknown or out-of-range option, named by its Python keyword.
    """
    from accounting.algorithms.registry import get_algorithm

    algorithm = get_algorithm(algo)
    _rdp_only_options(accountant, options)
    _require_explicit_sampling(algorithm, defaults, options, steps=True)
    if noise_multiplier is None:
        if options.get("schedule_file") is None and options.get("schedule_values") is None:
            raise InvalidParameter("--noise-multiplier", "is required (a number > 0)")
        noise_multiplier = 1.0
    params = build_params(algo=algo, delta=delta, noise_multiplier=noise_multiplier, **options)
    if params.delta is None:
        raise InvalidParameter("--delta", "is required (a number in (0, 1))")
    extra: list[str] = []
    params = resolve_auto_c2(
        algorithm,
        params,
        budget=_budget_at_given_noise,
        extra=extra,
    )
    return _with_extra(algorithm.epsilon(params, mode, accountant), extra)


def default_max_noise_ratio() -> float:
    """DiceSGD's default cap on the noise ratio used when ``c2="auto"`` picks C2."""
    from accounting.algorithms.dicesgd import DEFAULT_MAX_NOISE_RATIO

    return DEFAULT_MAX_NOISE_RATIO


def _budget_at_given_noise(p: PrivacyParams) -> float:
    """``--c2 auto`` at a given z: DiceSGD at z must be at least as private as DP-SGD at z / R."""
    return p.noise_multiplier / (p.max_noise_ratio or default_max_noise_ratio())


def _calibrate_decreasing(
    fn: Callable[[float], float], target: float, option: str, start: float | None = None
) -> tuple[float, dict[str, Any]]:
    """Smallest x with fn(x) <= target (fn decreasing) via accounting.calibration."""
    from accounting.calibration import calibrate_decreasing

    res = calibrate_decreasing(fn, target, option=option, rtol=CALIBRATION_RTOL, start=start)
    info = {"iterations": getattr(res, "iterations", None), "rtol": CALIBRATION_RTOL}
    bracket = getattr(res, "bracket", None)
    if bracket is not None:
        info["bracket_low"], info["bracket_high"] = float(bracket[0]), float(bracket[1])
    return float(res.value), info


class _NotCoarsened(Exception):
    """The coarse pre-pass would compute exactly the real thing: not worth running."""


def _coarse_start(eps_of: Callable[[float], float], eps: float) -> float | None:
    """A starting guess for calibrating a long schedule: the root under coarse sigma-grid bounds
    (:func:`accounting.rdp.coarse_bounds`, each evaluation ~10-50x cheaper), to 1e-3.

    Only a starting point: the real search still brackets and evaluates everything it returns,
    so the answer does not depend on this guess beyond the last digits (rtol).  None when the
    schedule is too short to be coarsened or the coarse target is unreachable."""
    from accounting.calibration import calibrate_decreasing
    from accounting.rdp import coarse_bounds

    with coarse_bounds() as state:

        def coarse(z: float) -> float:
            e = eps_of(z)
            if not state["used"]:
                raise _NotCoarsened
            return e

        try:
            return calibrate_decreasing(coarse, eps, option="--eps", rtol=1e-3).value
        except (_NotCoarsened, UnreachableTarget):
            return None


def _auto_exact_with_cheaper_bound(p: PrivacyParams) -> bool:
    """``evaluation="auto"`` evaluates this schedule exactly while the smooth bound would be
    cheaper (accounting.algorithms.d2p2): the search then starts from the bound's root."""
    if (p.evaluation or "auto") != "auto" or p.schedule in (None, "constant", "file") or not p.steps:
        return False
    from accounting.algorithms.d2p2 import exact_is_cheap
    from accounting.schedule_bound import smooth_pays
    from accounting.schedules import DEFAULT_RHO

    rho = DEFAULT_RHO if p.schedule_rho is None else float(p.schedule_rho)
    steps = int(p.steps)
    return exact_is_cheap(steps) and smooth_pays(p.schedule, 1.0, steps, rho=rho)


def _bound_start(bound_of: Callable[[float], float], eps: float) -> float | None:
    """A starting guess: the root under the certified smooth bound (each evaluation ~10x cheaper
    than the exact one), to 1e-4.  Only a start: the exact search brackets and evaluates everything
    it returns, so the answer does not depend on it beyond rtol; it saves most exact evaluations."""
    from accounting.calibration import calibrate_decreasing

    try:
        return calibrate_decreasing(bound_of, eps, option="--eps", rtol=1e-4).value
    except UnreachableTarget:
        return None


@python_names
def calibrate(
    *,
    eps: float,
    delta: float,
    algo: str,
    mode: str | None = None,
    accountant: str = "rdp",
    target: str = "noise_multiplier",
    noise_multiplier: float | None = None,
    progress: Callable[[float, float], None] | None = None,
    defaults: str | None = None,
    **options: Any,
) -> PrivacyReport:
    """Calibrate ALGO to (eps, delta) in the chosen mode.

    ``target="noise_multiplier"``: the smallest base noise multiplier z with eps(z) <= ``eps``
    (root search on log z, relative tolerance :data:`CALIBRATION_RTOL`; the result always satisfies
    the target). ``target="steps"``: the largest number of steps with eps <= ``eps`` at the given
    ``noise_multiplier``. Raises ``UnreachableTarget`` (``--eps``) when no value reaches it.
    ``progress(value, epsilon)``, if given, is called after every evaluation (long schedules
    take a minute: the CLI shows a progress bar with it).  ``defaults`` as in :func:`epsilon`.

    Options: every option of :func:`epsilon` -- ``sample_rate``, ``batch_size``, ``dataset_size``,
    ``steps``, ``epochs``, ``c1`` (alias ``max_grad_norm``), ``c2`` (with ``"auto"``: the design
    helper, ``max_noise_ratio``), ``grad_bound``, ``residual_clip``, ``clip_mode``, ``gamma``,
    ``schedule``, ``schedule_file``, ``schedule_values``, ``schedule_rho``, ``projection_dim``,
    ``model_dim``, ``projection``, ``projection_sigma_max``, ``evaluation``, ``clients``, ``tau``,
    ``rounds``, ``orders``, ``conversion``/``method`` -- except that ``steps``, ``epochs``,
    ``rounds`` and schedule files cannot be given with ``target="steps"``.

    Args:
        eps: the target epsilon (> 0).
        delta: the target delta, in (0, 1).
        algo: the algorithm, as in :func:`epsilon`.
        mode: the mode calibrated in (default: the algorithm's default, certified).
        accountant: ``"rdp"`` or ``"pld"``.
        target: ``"noise_multiplier"`` or ``"steps"``.
        noise_multiplier: the fixed noise multiplier when ``target="steps"``.
        progress: called as ``progress(value, epsilon)`` after every evaluation.
        defaults: None or ``"paper"``, as in :func:`epsilon`.
        **options: the options listed above.

    Returns:
        A :class:`PrivacyReport` at the calibrated value, with ``calibration`` filled in.

    Raises:
        InvalidParameter: a missing, unknown or out-of-range option, named by its Python keyword.
        UnreachableTarget: no value of the target reaches ``eps``.
    """
    report_progress = progress or (lambda value, epsilon: None)
    from accounting.algorithms.registry import get_algorithm

    eps = _check_eps(eps)
    if target not in TARGETS:
        raise InvalidParameter("--target", f"must be one of {', '.join(TARGETS)} (got {target!r})")
    algorithm = get_algorithm(algo)
    _rdp_only_options(accountant, options)
    _require_explicit_sampling(algorithm, defaults, options, steps=target == "noise_multiplier")
    extra: list[str] = []
    if target == "noise_multiplier":
        if noise_multiplier is not None:
            raise InvalidParameter("--noise-multiplier", "is what calibrate computes; do not give it")
        params = build_params(algo=algo, delta=delta, **options)
        if params.delta is None:
            raise InvalidParameter("--delta", "is required (a number in (0, 1))")
        params = resolve_auto_c2(algorithm, params, budget=lambda p: _dpsgd_noise_for(p, eps), extra=extra)
        p, mode_, label, assumed, warns, fn = algorithm.epsilon_function(params, mode, accountant)

        seen: dict[float, Any] = {}  # z -> result: the final report reuses the search's evaluation

        def eps_of(z: float) -> float:
            seen[z] = fn(p.with_(noise_multiplier=z))
            report_progress(z, seen[z].epsilon)
            return seen[z].epsilon

        start = None
        if accountant == "rdp" and p.schedule not in (None, "constant"):
            start = _coarse_start(lambda z: fn(p.with_(noise_multiplier=z)).epsilon, eps)
            if start is None and _auto_exact_with_cheaper_bound(p):
                bound = lambda z: fn(p.with_(noise_multiplier=z, evaluation="bound")).epsilon  # noqa: E731
                start = _bound_start(bound, eps)
        try:
            z, info = _calibrate_decreasing(eps_of, eps, "--eps", start=start)
        except UnreachableTarget:
            if accountant == "rdp":
                _check_order_floor(p, eps)  # a more helpful message when the order grid is the cause
            _check_pld_delta(accountant, p)
            raise
        if accountant == "pld":
            z = _printable_pld_noise(eps_of, z, eps)
        p = p.with_(noise_multiplier=z)
        value = seen[z] if z in seen else fn(p)  # exactly what `epsilon` reports at this z
        if not value.epsilon <= eps:  # the calibration contract; never report a violating z
            raise UnreachableTarget(
                "--eps", f"calibration could not certify eps <= {eps:g} (got {value.epsilon:.6g})"
            )
        info.update(target="noise_multiplier", eps_target=eps)
        report = algorithm.build_report(p, mode_, label, accountant, value, assumed, warns, calibration=info)
        return _with_extra(report, extra)

    # target == "steps"
    if noise_multiplier is None:
        raise InvalidParameter("--noise-multiplier", "is required when calibrating --steps")
    for opt in ("steps", "epochs", "rounds", "schedule_file", "schedule_values"):
        if options.get(opt) is not None:
            raise InvalidParameter(
                f"--{opt.replace('_', '-')}", "cannot be given when calibrating the number of steps"
            )
    if options.get("c2") == "auto":
        raise InvalidParameter("--c2", "'auto' cannot be combined with calibrating the number of steps")
    params = build_params(algo=algo, delta=delta, noise_multiplier=noise_multiplier, **options)
    if params.delta is None:
        raise InvalidParameter("--delta", "is required (a number in (0, 1))")
    field = "rounds" if algorithm.name == "clip21sgd2m" else "steps"
    p0, mode_, label, assumed, warns, fn = algorithm.epsilon_function(
        params.with_(**{field: 1}), mode, accountant
    )
    assumed = tuple(a for a in assumed if not a.startswith(("--epochs", "--rounds")))

    def eps_of_steps(t: int) -> float:
        q, _, _ = algorithm.resolve(params.with_(**{field: int(t)}))
        e = fn(q).epsilon
        report_progress(float(t), e)
        return e

    from accounting.calibration import calibrate_steps

    res = calibrate_steps(eps_of_steps, eps, option="--eps")
    t = int(res.value)
    p, _, _ = algorithm.resolve(params.with_(**{field: t}))
    value = fn(p)
    if not value.epsilon <= eps:
        raise UnreachableTarget("--eps", f"no number of steps reaches eps <= {eps:g}")
    info = {"target": "steps", "eps_target": eps, "iterations": getattr(res, "iterations", None)}
    report = algorithm.build_report(p, mode_, label, accountant, value, assumed, warns, calibration=info)
    return report


def _dpsgd_noise_at_clip(p: PrivacyParams, budget: Callable[[PrivacyParams], float]) -> float:
    """DP-SGD's certified z (sigma / C, any clip C) for the same target: the budget function's value."""
    return float(budget(p))


def _dpsgd_noise_for(p: PrivacyParams, eps: float) -> float:
    """DP-SGD's certified noise multiplier for (eps, delta) at the same q and T (``--c2 auto``)."""
    from accounting.algorithms.registry import get_algorithm

    dpsgd = get_algorithm("dpsgd")
    base = PrivacyParams(
        algo="dpsgd",
        delta=p.delta,
        sample_rate=p.sample_rate,
        dataset_size=p.dataset_size,
        batch_size=p.batch_size,
        steps=p.steps,
        c1=p.c1,
        orders=p.orders,
        conversion=p.conversion,
    )
    q, mode_, _, _, _, fn = dpsgd.epsilon_function(base, "certified", "rdp")
    z, _ = _calibrate_decreasing(lambda z: fn(q.with_(noise_multiplier=z)).epsilon, eps, "--eps")
    return z


@python_names
def compare(
    *,
    delta: float,
    algo: str,
    eps: float | None = None,
    noise_multiplier: float | None = None,
    accountant: str = "rdp",
    mode: str | None = None,
    audit_samples: int = 20_000,
    audit_confidence: float = 0.99,
    audit_seed: int = 0,
    defaults: str | None = None,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Claimed, certified and audit side by side (``--compare``).

    Give exactly one of ``eps`` (the noise is first calibrated in ``mode``, default the
    algorithm's default mode) and ``noise_multiplier``; all three are then evaluated at that
    noise multiplier.  Bad input raises :class:`InvalidParameter`, as :func:`epsilon` does.  An
    entry that does not exist for this algorithm (no certified bound, no audit of it, a target
    that mode cannot reach) is a string ``"n/a (why)"``; every other entry is a report (or a
    number for the ``*_noise_multiplier`` keys).  The audit uses ``accounting.audit.run_audit``.
    ``progress(stage)``, if given, is called before each of the (up to 6) stages; options as in
    :func:`epsilon`.

    Args:
        delta: the target delta, in (0, 1).
        algo: the algorithm, as in :func:`epsilon`.
        eps: the target epsilon to calibrate to (exclusive with ``noise_multiplier``).
        noise_multiplier: the noise multiplier to evaluate at (exclusive with ``eps``).
        accountant: ``"rdp"`` or ``"pld"``.
        mode: the mode ``eps`` is calibrated in.
        audit_samples: Monte Carlo samples of the audit.
        audit_confidence: the audit's confidence.
        audit_seed: the audit's seed.
        defaults: None or ``"paper"``, as in :func:`epsilon`.
        progress: called as ``progress(stage)`` before each stage.
        **options: as in :func:`epsilon`.

    Returns:
        A dict of claimed, certified and audit entries: reports, numbers, or ``"n/a (why)"``.

    Raises:
        InvalidParameter: bad input, named by its Python keyword.
    """
    stage = progress or (lambda name: None)
    from accounting.algorithms.registry import get_algorithm

    if (eps is None) == (noise_multiplier is None):
        raise InvalidParameter(
            "--noise-multiplier" if eps is None else "--eps",
            "give exactly one of eps (calibrate the noise first) or noise_multiplier",
        )
    audit_samples = validate.positive_int("--audit-samples", audit_samples)
    audit_confidence = validate.open_unit("--audit-confidence", audit_confidence)
    if not audit_confidence > 0.5:  # as run_audit's confidence
        raise InvalidParameter("--audit-confidence", f"must be in (0.5, 1) (got {audit_confidence:g})")
    if validate.nonnegative("--audit-seed", audit_seed) != int(audit_seed):
        raise InvalidParameter("--audit-seed", f"must be an integer >= 0 (got {audit_seed!r})")
    algorithm = get_algorithm(algo)
    _require_explicit_sampling(algorithm, defaults, options, steps=True)
    options = dict(options, defaults="paper")  # checked once above; the calls below reuse it
    out: dict[str, Any] = {}
    if eps is not None:
        stage("calibrate")
        main = calibrate(eps=eps, delta=delta, algo=algo, mode=mode, accountant=accountant, **options)
        out["calibrated"] = main
        z = main.noise_multiplier
        for m in ("claimed", "certified"):
            if main.mode == m and main.label == m and _acc(m, accountant) == accountant:
                out[f"{m}_noise_multiplier"] = main.noise_multiplier  # already calibrated
                continue
            stage(f"calibrate {m}")
            try:
                r = calibrate(
                    eps=eps, delta=delta, algo=algo, mode=m, accountant=_acc(m, accountant), **options
                )
                out[f"{m}_noise_multiplier"] = r.noise_multiplier
            except _UNAVAILABLE as err:
                out[f"{m}_noise_multiplier"] = f"n/a ({err.message})"
    else:
        z = validate.positive("--noise-multiplier", noise_multiplier)
        # bad input raises here, before any entry could turn it into an "n/a"
        epsilon(noise_multiplier=z, delta=delta, algo=algo, mode=mode, accountant=accountant, **options)
    for m in ("claimed", "certified"):
        stage(f"epsilon {m}")
        try:
            out[m] = epsilon(
                noise_multiplier=z, delta=delta, algo=algo, mode=m, accountant=_acc(m, accountant), **options
            )
        except _UNAVAILABLE as err:
            out[m] = f"n/a ({err.message})"
    stage("audit")
    try:
        out["audit"] = _audit(algorithm, z, delta, options, audit_samples, audit_confidence, int(audit_seed))
    except InvalidParameter as err:
        out["audit"] = f"n/a ({err.message})"
    except NotImplementedError as err:
        out["audit"] = f"n/a ({err})"
    out["noise_multiplier"] = z
    return out


#: What makes one entry of :func:`compare` unavailable (not bad input): no certified bound, a
#: target the mode cannot reach.
_UNAVAILABLE = (NotCertified, UnreachableTarget)


def _acc(mode: str, accountant: str) -> str:
    """Claimed numbers that are closed forms refuse pld; compare falls back to rdp for them."""
    return accountant if mode == "certified" else "rdp"


def _audit(algorithm, z, delta, options, samples, confidence, seed) -> AuditResult:
    """The audit at noise ``z``; raises InvalidParameter / NotImplementedError where there is none."""
    from accounting.audit import run_audit

    options = {k: v for k, v in options.items() if k != "defaults"}
    params = build_params(algo=algorithm.name, delta=delta, noise_multiplier=z, **options)
    extra: list[str] = []
    params = resolve_auto_c2(
        algorithm,
        params,
        budget=_budget_at_given_noise,
        extra=extra,
    )
    resolved, _, _ = algorithm.resolve(params)
    return run_audit(resolved, samples=samples, confidence=confidence, seed=seed)
