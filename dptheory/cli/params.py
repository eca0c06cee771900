"""Options shared by ``dptheory calibrate``, ``dptheory epsilon`` and ``dptheory audit``.

Only argparse is imported at module level (``dptheory --help`` must stay fast and light);
accounting modules are imported inside the functions. Numbers are parsed by
:mod:`dptheory.cli.numbers` (finite, no overflow or underflow) and range-checked by the
accounting layer, which names the option in its one-line error.
"""

from __future__ import annotations

import argparse
from typing import Any

from dptheory.cli.numbers import DOWN, UP, count, fmt, number

#: argparse dest -> keyword of dptheory.api (the same spelling, with '_').
PARAM_DESTS = (
    "sample_rate",
    "batch_size",
    "dataset_size",
    "steps",
    "epochs",
    "c1",
    "max_grad_norm",
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
    "evaluation",
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
  --mode           certified for every algorithm
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
    from accounting.algo_names import ALGO_NAMES

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (parser.epilog + "\n\n" if parser.epilog else "") + DEFAULTS_HELP + "\n" + ENVELOPE_HELP
    parser.add_argument(
        "--algo", required=True, metavar="ALGO", help=f"algorithm: one of {', '.join(ALGO_NAMES)}"
    )
    g = parser.add_argument_group("sampling and length")
    g.add_argument("--sample-rate", type=number, metavar="Q", help="Poisson rate q in (0, 1] (default B/N)")
    g.add_argument("--batch-size", type=number, metavar="B", help="expected batch size (default: paper's)")
    g.add_argument("--dataset-size", type=count, metavar="N", help="dataset size (default: paper's)")
    g.add_argument("--steps", type=count, metavar="T", help="number of steps (default: epochs / q)")
    g.add_argument(
        "--epochs", type=number, metavar="E", help="epochs; steps = ceil(E / q) (default: paper's)"
    )
    g = parser.add_argument_group("DiceSGD / DP-SGD clipping")
    g.add_argument(
        "--c1",
        type=number,
        metavar="C1",
        help="clipping threshold of per-example gradients (Opacus's max_grad_norm; default 1)",
    )
    # its own dest (not an alias of --c1), so that giving both is refused instead of the last winning
    g.add_argument("--max-grad-norm", type=number, metavar="C1", help="the same as --c1 (Opacus's name)")
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
    g.add_argument("--projection-dim", type=count, metavar="P", help="projection dim p (default 0.7 d)")
    g.add_argument("--model-dim", type=count, metavar="D", help="model dim d (default 37354)")
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
    g.add_argument("--clients", type=count, metavar="n", help="number of clients (default 10)")
    g.add_argument("--tau", type=number, metavar="TAU", help="message clipping level tau (default 1)")
    g.add_argument("--rounds", type=count, metavar="T", help="communication rounds (default 1000)")
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
        "--evaluation",
        choices=("auto", "exact", "bound"),
        help="RDP of a noise schedule (D2P2 family): exact, the certified smooth-schedule/sigma-grid "
        "bound, or auto (default: exact when estimated under ~1 s, else the bound); the report says "
        "which was used",
    )
    g.add_argument(
        "--conversion",
        choices=("improved", "classic"),
        help="RDP -> (eps, delta): improved (default, Balle et al. 2020) or classic (Mironov 2017); "
        "--accountant rdp only",
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
        params = api.resolve_auto_c2(
            algorithm,
            params,
            budget=lambda p: p.noise_multiplier / (p.max_noise_ratio or api.default_max_noise_ratio()),
            extra=[],
        )
    resolved, _, _ = algorithm.resolve(params)
    return resolved


# --------------------------------------------------------------------------------------------
# Output shared by calibrate / epsilon
# --------------------------------------------------------------------------------------------


def fmt_up(x: float, digits: int = 10) -> str:
    """``x`` rounded *up* to ``digits`` significant digits (:func:`dptheory.cli.numbers.fmt`)."""
    return fmt(x, UP, digits)


def _fmt(v: Any) -> str:
    """A parameter echoed back (dataset size, clip thresholds): 6 significant digits."""
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


def render_report(report, *, command: str, note: str | None = None) -> str:
    """A readable table of a PrivacyReport, with the defaults it assumed; ``note`` (a sentence) is
    printed right under the noise rows, on the first screen."""
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
        ("delta", fmt(report.delta, UP)),
        ("noise multiplier z", fmt_up(report.noise_multiplier)),
        ("noise std", fmt_up(report.noise_std) if isinstance(report.noise_std, float) else "-"),
        ("sample rate q", fmt(report.sample_rate, DOWN)),
        ("steps T", _fmt(report.steps)),
    ]
    for k, v in report.parameters.items():
        if k in ("sample_rate", "steps"):
            continue
        # B = qN when --sample-rate is given: rounded down like q, so B / N from the table is <= q
        rows.append((k.replace("_", " "), fmt(v, DOWN) if k == "batch_size" else _fmt(v)))
    width = max(len(k) for k, _ in rows)
    lines = [f"dptheory {command}"]
    lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    if note:
        import textwrap

        at = next(i for i, (k, _) in enumerate(rows) if k == "noise std") + 2
        lines[at:at] = textwrap.wrap(
            note, 98, initial_indent="  => ", subsequent_indent="     ", break_on_hyphens=False
        )
    if report.defaults_assumed:
        lines.append("defaults assumed:")
        lines += [f"  {d}" for d in report.defaults_assumed]
    if report.assumptions:
        lines.append("assumptions:")
        lines += [f"  - {a}" for a in report.assumptions]
    return "\n".join(lines)


def render_defaults(report) -> str:
    """The "defaults assumed" block of ``report`` (as :func:`render_report` prints it); "" if none."""
    assumed = getattr(report, "defaults_assumed", None)
    if not assumed:
        return ""
    return "\n".join(["defaults assumed:", *(f"  {d}" for d in assumed)])


def _audit_cell(audit: Any) -> tuple[str, str]:
    if isinstance(audit, str):
        return audit, ""
    eps = getattr(audit, "epsilon_lower", None)
    conf = getattr(audit, "confidence", None)
    method = getattr(audit, "method", "")
    note = f"lower bound, confidence {conf:g}; {method}" if conf is not None else str(method)
    return fmt(eps, DOWN), note


def render_compare(result: dict, *, command: str) -> str:
    """claimed / certified / audit side by side."""
    rows = []
    for m in ("claimed", "certified"):
        r = result.get(m)
        z_needed = result.get(f"{m}_noise_multiplier")
        if isinstance(r, str):
            rows.append((m, r, fmt(z_needed, UP) if z_needed is not None else "", ""))
        else:
            z_cell = fmt(z_needed, UP) if z_needed is not None else ""
            rows.append((r.label or m, fmt(r.epsilon, UP), z_cell, r.accountant))
    audit = result.get("audit")
    a_eps, a_note = _audit_cell(audit)
    cert = result.get("certified")
    inst_cert = getattr(audit, "epsilon_certified", None)
    if inst_cert is not None and (
        isinstance(cert, str) or abs(inst_cert - cert.epsilon) > 1e-9 * max(1.0, abs(cert.epsilon))
    ):
        rows.append(("certified (audited instance)", fmt(inst_cert, UP), "", "the variant the audit runs on"))
    rows.append(("audit", a_eps, "", a_note))
    header = ("", "epsilon", "z for target" if "calibrated" in result else "", "how")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(4)]
    lines = [f"dptheory {command} --compare: z = {fmt(result.get('noise_multiplier'), UP)}"]
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
