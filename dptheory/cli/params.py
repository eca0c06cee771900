"""Options shared by ``dptheory calibrate``, ``dptheory epsilon`` and ``dptheory audit``.

Only argparse is imported at module level (``dptheory --help`` must stay fast and light);
accounting modules are imported inside the functions. Numbers are parsed by
:mod:`dptheory.cli.numbers` (finite, no overflow or underflow) and range-checked by the
accounting layer, which names the option in its one-line error.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from dptheory.cli.numbers import number

ALGO_NAMES = ("dpsgd", "dicesgd", "d2p2sgd", "d2psgd", "dp2sgd", "clip21sgd2m")

#: argparse dest -> keyword of dptheory.api (the same spelling, with '_').
PARAM_DESTS = (
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
    "schedule_file",
    "schedule_rho",
    "projection_dim",
    "model_dim",
    "projection",
    "projection_sigma_max",
    "clients",
    "tau",
    "rounds",
    "orders",
    "conversion",
)

DEFAULTS_HELP = """\
defaults (used when an option is not given; each report lists the ones it assumed):
  dpsgd, dicesgd   DiceSGD paper Sec. 4 / Table 2 (CIFAR-10): N = 50000, B = 1000,
                   3 epochs, C1 = C2 = 1 (dpsgd: C = 1)
  d2p2sgd, d2psgd, dp2sgd
                   D2P2 paper Sec. 4 / App. A.9, Tables 3, 5, 6 (FashionMNIST CNN):
                   N = 60000, B = 1024, 40 epochs, schedule inv-sqrt-k (d2p2sgd, d2psgd)
                   or constant (dp2sgd), model dim 37354 (Table 5 CNN), projection dim
                   0.7 x model dim, projection fresh (A_k redrawn every step)
  clip21sgd2m      rounds 1000, clients 10, tau 1: placeholders (the paper's numbers were
                   lost in the text rendering); epsilon depends only on z and rounds
  --mode           certified for every algorithm (dicesgd falls back to a labelled
                   'claimed (not certified)' number if no certified accountant exists)
"""


def _c2(text: str) -> float | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return number(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 'auto')") from None


ENVELOPE_HELP = """\
supported range (every value inside it gets a correct answer, or one line saying what to
change; --timeout SECONDS bounds the time, exit status 3):
  --sample-rate 1e-9 .. 1     --steps up to 1e9       --delta down to 1e-100
  --noise-multiplier 0.1 .. 1e4   --eps 1e-3 .. 1e3   schedule files up to 1e7 lines
  Renyi orders up to 1e6 (--orders); at tiny eps and delta the default grid (up to 2048) may
  not reach the target: widen it, e.g. --orders default,4096-65536:4096.
  Long schedules (T > 1e6) are accounted in blocks whose noise is rounded down (sound).
"""


def add_privacy_options(parser: argparse.ArgumentParser, *, include_mode: bool = True) -> None:
    """Add --algo and every parameter option (and --mode/--accountant unless told not to)."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (parser.epilog + "\n\n" if parser.epilog else "") + DEFAULTS_HELP + "\n" + ENVELOPE_HELP
    parser.add_argument(
        "--algo", required=True, metavar="ALGO", help=f"algorithm: one of {', '.join(ALGO_NAMES)}"
    )
    g = parser.add_argument_group("sampling and length")
    g.add_argument("--sample-rate", type=number, metavar="Q", help="Poisson rate q in (0, 1] (default B/N)")
    g.add_argument("--batch-size", type=number, metavar="B", help="expected batch size (default: paper's)")
    g.add_argument("--dataset-size", type=number, metavar="N", help="dataset size (default: paper's)")
    g.add_argument("--steps", type=number, metavar="T", help="number of steps (default: epochs / q)")
    g.add_argument(
        "--epochs", type=number, metavar="E", help="epochs; steps = ceil(E / q) (default: paper's)"
    )
    g = parser.add_argument_group("DiceSGD / DP-SGD clipping")
    g.add_argument("--c1", type=number, metavar="C1", help="clipping threshold of gradients (default 1)")
    g.add_argument(
        "--c2",
        type=_c2,
        metavar="C2|auto",
        help="DiceSGD error-feedback clipping threshold (default 1); 'auto' = largest C2 whose certified "
        "noise is within --max-noise-ratio of DP-SGD's, or, with --residual-clip or a --grad-bound above "
        "C1, the smallest C2 with P(E^c) <= delta/100 (flush regime, docs/hidden-state.md)",
    )
    g.add_argument(
        "--grad-bound",
        type=number,
        metavar="G",
        help="optional bound on every per-example gradient norm (default: none)",
    )
    g.add_argument(
        "--max-noise-ratio", type=number, metavar="R", help="ratio used by --c2 auto (default 1.1)"
    )
    g.add_argument(
        "--residual-clip",
        type=number,
        metavar="R",
        help="dicesgd only: DiceSGD with a residual clip, error increment clip(g, C1 + R) - clip(g, C1) "
        "(norm <= R by construction); certifies the flush regime without a gradient bound",
    )
    g.add_argument(
        "--clip-mode",
        metavar="MODE",
        help="dicesgd only: flat (default, min(1, C1/||g||) g) or automatic (C1 g/(||g|| + gamma)); "
        "sets the residual bound rho used with --grad-bound",
    )
    g.add_argument(
        "--gamma", type=number, metavar="GAMMA", help="dicesgd --clip-mode automatic only (default 0.01)"
    )
    g = parser.add_argument_group("D2P2 family")
    g.add_argument(
        "--schedule",
        metavar="NAME",
        help="noise schedule: constant, inv-k, inv-sqrt-k, exp (default per algorithm, Table 3)",
    )
    g.add_argument(
        "--schedule-file",
        metavar="F",
        help="per-step values, one per line, multiplied by --noise-multiplier (default 1 with a file)",
    )
    g.add_argument(
        "--schedule-rho",
        type=number,
        metavar="RHO",
        help="rho of the exp schedule, sigma_k = sigma rho^(-k/T) (default 2)",
    )
    g.add_argument("--projection-dim", type=number, metavar="P", help="projection dim p (default 0.7 d)")
    g.add_argument("--model-dim", type=number, metavar="D", help="model dim d (default 37354)")
    g.add_argument(
        "--projection",
        choices=("fresh", "fixed"),
        help="fresh Gaussian A_k per step (default, Alg. 1) or one fixed public A",
    )
    g.add_argument(
        "--projection-sigma-max",
        type=number,
        metavar="S",
        help="largest singular value of your fixed A (as used, before the 1/sqrt(p)); exact factor S/sqrt(p) "
        "(default: none, a Gaussian high-probability bound)",
    )
    g = parser.add_argument_group("Clip21-SGD2M (local DP)")
    g.add_argument("--clients", type=number, metavar="n", help="number of clients (default 10)")
    g.add_argument("--tau", type=number, metavar="TAU", help="message clipping level tau (default 1)")
    g.add_argument("--rounds", type=number, metavar="T", help="communication rounds (default 1000)")
    g = parser.add_argument_group("accounting")
    if include_mode:
        g.add_argument(
            "--mode",
            choices=("claimed", "certified"),
            help="claimed = the paper's statement; certified = proven upper bound (default certified)",
        )
        g.add_argument(
            "--accountant",
            choices=("rdp", "pld"),
            default="rdp",
            help="rdp (default) or dp-accounting's PLD accountant where the mechanism is expressible",
        )
    g.add_argument(
        "--orders", metavar="LIST", help="Renyi orders, e.g. '1.5,2,4-64' or 'default,4096' (default grid)"
    )
    g.add_argument(
        "--conversion",
        choices=("improved", "classic"),
        default="improved",
        help="RDP -> (eps, delta): improved (default, Balle et al. 2020) or classic (Mironov 2017)",
    )


def options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The API keyword arguments given on the command line (None = not given)."""
    out: dict[str, Any] = {}
    for dest in PARAM_DESTS:
        v = getattr(args, dest, None)
        if v is not None:
            out[dest] = v
    if out.get("clip_mode") == "automatic" and "grad_bound" not in out:
        # on the command line the mode only sets the residual bound read with --grad-bound
        from accounting.errors import InvalidParameter

        raise InvalidParameter("--clip-mode", "automatic only applies with --grad-bound (it sets rho)")
    return out


def params_from_args(args: argparse.Namespace):
    """Resolved :class:`~accounting.algorithms.base.PrivacyParams` (paper defaults filled in).

    Uses ``args.noise_multiplier`` and ``args.delta`` when present. ``--c2 auto`` is resolved
    with the noise budget ``noise_multiplier / max_noise_ratio`` (see dptheory.api.epsilon).
    """
    from accounting.algorithms.registry import get_algorithm
    from dptheory import api

    algorithm = get_algorithm(args.algo)
    z = getattr(args, "noise_multiplier", None)
    delta = getattr(args, "delta", None)
    params = api.build_params(algo=args.algo, delta=delta, noise_multiplier=z, **options_from_args(args))
    if params.c2 == "auto":
        if z is None or delta is None:
            from accounting.errors import InvalidParameter

            raise InvalidParameter("--c2", "'auto' needs --noise-multiplier and --delta here")
        params = api._resolve_auto_c2(
            algorithm,
            params,
            budget=lambda p: p.noise_multiplier / (p.max_noise_ratio or api._default_ratio()),
            extra=[],
        )
    resolved, _, _ = algorithm.resolve(params)
    return resolved


# --------------------------------------------------------------------------------------------
# Output shared by calibrate / epsilon
# --------------------------------------------------------------------------------------------


def fmt_up(x: float, digits: int = 10) -> str:
    """``x`` to ``digits`` significant digits, rounded *up*: a noise multiplier or epsilon copied
    from the table must never be smaller than the computed one (rounding to nearest could give a
    noise just below the calibrated one, whose epsilon is then above the target)."""
    if not (isinstance(x, float) and math.isfinite(x)) or x <= 0:
        return f"{x:.{digits}g}"
    # Decimal(x) is exact; rounding it toward +inf at ``digits`` significant digits gives d >= x,
    # and parsing d back rounds to nearest, which is monotone, so float(text) >= x exactly.
    # (Adding one unit in the last digit to a nearest-rounded float could round down again at
    # 16+ digits, where the step is below the float spacing.)
    from decimal import ROUND_CEILING, Context, Decimal

    d = Context(prec=digits, rounding=ROUND_CEILING).plus(Decimal(x))
    text = f"{float(d):.{digits}g}"  # the usual float layout; exact round trip for <= 15 digits
    if float(text) < x:  # 16-17 digits: the decimal spacing is below the float spacing
        text = str(d)
    return text


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def emit_warnings(warnings, stream=None) -> None:
    """Every warning on stderr, one line each (also in --json mode, where they are in the object)."""
    import sys

    stream = stream or sys.stderr
    for w in warnings:
        stream.write(f"warning: {w}\n")


def render_report(report, *, command: str) -> str:
    """A readable table of a PrivacyReport, with the defaults it assumed."""
    from accounting.algorithms.registry import get_algorithm

    alg = get_algorithm(report.algo)
    rows: list[tuple[str, str]] = [
        ("algorithm", f"{report.algo}  ({alg.title}; {alg.paper})"),
        ("mode", report.label or report.mode),
        ("accountant", report.accountant),
    ]
    cal = report.calibration
    if cal:
        if cal.get("target") == "steps":
            rows.append(("target", f"eps <= {_fmt(cal.get('eps_target'))}: largest number of steps"))
        else:
            rows.append(
                (
                    "target",
                    f"eps <= {_fmt(cal.get('eps_target'))} "
                    f"(smallest noise, rel. tol. {cal.get('rtol', 1e-6):g})",
                )
            )
    rows += [
        ("epsilon", fmt_up(report.epsilon) + (f"  (Renyi order {report.order:g})" if report.order else "")),
        ("delta", _fmt(report.delta)),
        ("noise multiplier z", fmt_up(report.noise_multiplier)),
        ("noise std", fmt_up(report.noise_std) if isinstance(report.noise_std, float) else "-"),
        ("sample rate q", _fmt(report.sample_rate)),
        ("steps T", _fmt(report.steps)),
    ]
    for k, v in report.parameters.items():
        if k in ("sample_rate", "steps"):
            continue
        rows.append((k.replace("_", " "), _fmt(v)))
    width = max(len(k) for k, _ in rows)
    lines = [f"dptheory {command}"]
    lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    if report.defaults_assumed:
        lines.append("defaults assumed:")
        lines += [f"  {d}" for d in report.defaults_assumed]
    if report.assumptions:
        lines.append("assumptions:")
        lines += [f"  - {a}" for a in report.assumptions]
    return "\n".join(lines)


def _audit_cell(audit: Any) -> tuple[str, str]:
    if isinstance(audit, str):
        return audit, ""
    eps = getattr(audit, "epsilon_lower", None)
    conf = getattr(audit, "confidence", None)
    method = getattr(audit, "method", "")
    note = f"lower bound, confidence {conf:g}; {method}" if conf is not None else str(method)
    return _fmt(eps), note


def render_compare(result: dict, *, command: str) -> str:
    """claimed / certified / audit side by side."""
    rows = []
    for m in ("claimed", "certified"):
        r = result.get(m)
        z_needed = result.get(f"{m}_noise_multiplier")
        if isinstance(r, str):
            rows.append((m, r, _fmt(z_needed) if z_needed is not None else "", ""))
        else:
            rows.append(
                (r.label or m, _fmt(r.epsilon), _fmt(z_needed) if z_needed is not None else "", r.accountant)
            )
    audit = result.get("audit")
    a_eps, a_note = _audit_cell(audit)
    cert = result.get("certified")
    inst_cert = getattr(audit, "epsilon_certified", None)
    if inst_cert is not None and (
        isinstance(cert, str) or abs(inst_cert - cert.epsilon) > 1e-9 * max(1.0, abs(cert.epsilon))
    ):
        rows.append(("certified (audited instance)", _fmt(inst_cert), "", "the variant the audit runs on"))
    rows.append(("audit", a_eps, "", a_note))
    header = ("", "epsilon", "z for target" if "calibrated" in result else "", "how")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(4)]
    lines = [f"dptheory {command} --compare: z = {_fmt(result.get('noise_multiplier'))}"]
    lines.append("  " + "  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        lines.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    if hasattr(audit, "instance"):
        lines.append(f"  audit instance: {audit.instance}")
        lines.append(f"  audit verdict: {audit.verdict}")
    return "\n".join(line.rstrip() for line in lines)


def compare_to_json(result: dict) -> dict:
    out: dict[str, Any] = {"noise_multiplier": result.get("noise_multiplier")}
    for key, v in result.items():
        if key == "noise_multiplier":
            continue
        if hasattr(v, "to_json"):
            out[key] = v.to_json()
        else:
            out[key] = v
    return out
