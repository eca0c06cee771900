"""`dptheory audit`: a lower bound on epsilon on the algorithm's worst-case instance.

    dptheory audit --algo ALGO [parameter options as calibrate]
                   [--noise-multiplier Z | --eps E --mode claimed|certified] --delta D
                   [--samples M] [--confidence 0.99] [--seed S] [--json]

With ``--eps`` the noise is first calibrated in ``--mode`` (``dptheory.api.calibrate``), so
``--mode claimed`` audits the noise the paper prescribes for that epsilon.  The instance, the
method (exact or Monte Carlo with Clopper-Pearson) and the paper's assumptions checked on the
instance are printed; see ``accounting.audit`` and docs/audits.md.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def register(sub) -> None:
    from dptheory.cli.numbers import integer, number
    from dptheory.cli.params import add_privacy_options

    p = sub.add_parser(
        "audit",
        help="lower-bound epsilon on a worst-case instance (exact or Monte Carlo with confidence)",
        description=(
            "Audit ALGO: compute epsilon_lower, a number the mechanism's true epsilon(delta) exceeds "
            "on a concrete worst-case instance (exactly, or with the stated confidence), next to the "
            "claimed and certified epsilon at the same noise."
        ),
    )
    add_privacy_options(p)
    g = p.add_argument_group("audit")
    g.add_argument("--noise-multiplier", type=number, metavar="Z", help="noise multiplier to audit")
    g.add_argument("--eps", type=number, metavar="E", help="calibrate the noise for this epsilon (in --mode)")
    g.add_argument("--delta", type=number, metavar="D", required=True, help="delta in (0, 1)")
    g.add_argument(
        "--samples",
        type=integer,
        default=20_000,
        metavar="M",
        help="Monte Carlo trajectories per neighbour (20000)",
    )
    g.add_argument("--confidence", type=number, default=0.99, metavar="C", help="confidence level (0.99)")
    g.add_argument("--seed", type=integer, default=0, metavar="S", help="random seed (0)")
    g.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def run(args) -> int:
    from accounting import validate
    from accounting.audit import run_audit
    from accounting.errors import InvalidParameter
    from dptheory.cli.params import emit_warnings, options_from_args, params_from_args

    samples = validate.positive_int("--samples", args.samples)
    confidence = validate.open_unit("--confidence", args.confidence)
    seed = validate.nonnegative("--seed", args.seed)
    if seed != int(seed):
        raise InvalidParameter("--seed", f"must be an integer >= 0 (got {args.seed!r})")
    validate.open_unit("--delta", args.delta)

    calibration: dict[str, Any] | None = None
    if args.eps is not None:
        if args.noise_multiplier is not None:
            raise InvalidParameter("--eps", "give either --noise-multiplier or --eps, not both")
        from dptheory import api

        report = api.calibrate(
            eps=args.eps,
            delta=args.delta,
            algo=args.algo,
            mode=args.mode,
            defaults="paper",
            **options_from_args(args),
        )
        args.noise_multiplier = report.noise_multiplier
        if getattr(args, "c2", None) == "auto" and "c2" in report.parameters:
            args.c2 = report.parameters["c2"]
        calibration = {
            "eps_target": float(args.eps),
            "mode": report.label or report.mode,
            "noise_multiplier": report.noise_multiplier,
            "epsilon_at_calibrated_noise": report.epsilon,
        }
    elif args.noise_multiplier is None:
        raise InvalidParameter("--noise-multiplier", "is required (or give --eps to calibrate the noise)")
    elif args.mode is not None:
        raise InvalidParameter("--mode", "only applies with --eps (it picks how the noise is calibrated)")

    params = params_from_args(args)
    result = run_audit(params, samples=samples, confidence=confidence, seed=int(seed), progress=True)
    emit_warnings(result.warnings)
    if args.json:
        out = result.to_json()
        if calibration is not None:
            out["calibration"] = calibration
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(result, calibration) + "\n")
    return 0


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def render(result, calibration: dict[str, Any] | None = None) -> str:
    """Human-readable table of an AuditResult."""
    conf = "exact (deterministic)" if result.confidence >= 1 else f"confidence {result.confidence:g}"
    rows = [("algorithm", result.algo)]
    if calibration:
        rows.append(
            (
                "noise calibrated",
                f"z = {_fmt(calibration['noise_multiplier'])} for eps = "
                f"{_fmt(calibration['eps_target'])} ({calibration['mode']})",
            )
        )
    rows += [
        ("noise multiplier z", _fmt(result.noise_multiplier)),
        ("delta", _fmt(result.delta)),
        ("epsilon lower bound", f"{_fmt(result.epsilon_lower)}  ({conf})"),
        ("epsilon claimed", _fmt(result.epsilon_claimed)),
        ("epsilon certified", _fmt(result.epsilon_certified)),
        ("verdict", result.verdict),
        ("instance", result.instance),
        ("method", result.method),
    ]
    if result.samples:
        rows.append(("samples / seed", f"{result.samples} per neighbour / {result.seed}"))
    width = max(len(k) for k, _ in rows)
    lines = ["dptheory audit"] + [f"  {k.ljust(width)}  {v}" for k, v in rows]
    if result.assumptions_checked:
        lines.append("assumptions checked on the instance:")
        for text, ok in result.assumptions_checked:
            lines.append(f"  [{'ok' if ok else 'VIOLATED'}] {text}")
    return "\n".join(lines)
