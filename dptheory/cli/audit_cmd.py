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

from dptheory.cli.numbers import DOWN, UP, fmt

DEFAULT_SAMPLES = 20_000


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
        metavar="M",
        help="Monte Carlo audits (dicesgd) only: trajectories per neighbour (20000)",
    )
    g.add_argument(
        "--confidence",
        type=number,
        metavar="C",
        help="Monte Carlo audits (dicesgd) only: confidence in (0.5, 1) (0.99)",
    )
    g.add_argument("--seed", type=integer, default=0, metavar="S", help="random seed (0)")
    g.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def run(args) -> int:
    from accounting import validate
    from accounting.audit import run_audit
    from accounting.errors import InvalidParameter
    from dptheory.cli.params import emit_warnings, options_from_args, params_from_args

    given = (("--samples", args.samples), ("--confidence", args.confidence))
    mc_given = [o for o, v in given if v is not None]
    if mc_given and args.algo != "dicesgd":  # options that do nothing are errors, not silently ignored
        raise InvalidParameter(mc_given[0], "only applies to Monte Carlo audits (dicesgd); this one is exact")
    if args.accountant != "rdp":  # the audit's claimed/certified epsilons are RDP-accounted
        raise InvalidParameter("--accountant", "does not apply to audit (its epsilons are RDP-accounted)")
    samples = validate.positive_int("--samples", DEFAULT_SAMPLES if args.samples is None else args.samples)
    confidence = validate.open_unit("--confidence", 0.99 if args.confidence is None else args.confidence)
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
    from dptheory.cli.progress import wanted

    # a bar on a terminal only, never with --json (its machine-read runs stay quiet on stderr)
    result = run_audit(params, samples=samples, confidence=confidence, seed=int(seed), progress=wanted(args))
    if mc_given and result.samples is None:
        raise InvalidParameter(mc_given[0], "does not apply: this instance's audit is exact (no sampling)")
    readings = claimed_by_reading(params) if result.algo == "dicesgd" else None
    emit_warnings(result.warnings)
    if args.json:
        out = result.to_json()
        if calibration is not None:
            out["calibration"] = calibration
        if readings is not None:
            out["epsilon_claimed_by_reading"] = [
                {**r, "refuted": bool(result.epsilon_lower > r["epsilon_claimed"])} for r in readings
            ]
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(result, calibration, readings) + "\n")
    return 0


def claimed_by_reading(params) -> list[dict[str, Any]]:
    """Theorem 3.7's claimed epsilon under both readings of its flattened ``min{C 2, G' 2}``.

    The proof's last step bounds C2 by C/B, so the rendered "C 2" is C^2 with C >= B C2 (headline,
    evaluated at the smallest C = B C2); App. C.4 / Algorithm 4 instead use C2^2.
    """
    from accounting.algorithms.dicesgd import theorem37_epsilon, theorem37_inputs
    from accounting.algorithms.registry import get_algorithm

    p, _assumed, _warns = get_algorithm("dicesgd").resolve(params)
    kw = theorem37_inputs(p)
    return [
        {
            "reading": "C^2 with C = B C2 (the proof's last step; headline)",
            "headline": True,
            "epsilon_claimed": theorem37_epsilon(**kw, reading="proof"),
        },
        {
            "reading": "C2^2 (App. C.4 / Algorithm 4)",
            "headline": False,
            "epsilon_claimed": theorem37_epsilon(**kw, reading="c2"),
        },
    ]


def _verdict(result, readings: list | None) -> str:
    if not readings or result.verdict.startswith("INCONSISTENT"):
        return result.verdict
    refuted = [r["headline"] for r in readings if result.epsilon_lower > r["epsilon_claimed"]]
    if len(refuted) == len(readings):
        return "claim refuted on this instance under both readings (epsilon_lower > epsilon_claimed)"
    if refuted:
        which = "the headline" if refuted[0] else "the non-headline"
        return f"claim refuted on this instance under {which} reading only"
    return "consistent with the claim on this instance under both readings"


def _fmt(v: Any, direction: str = UP) -> str:
    """Upper bounds (claimed, certified), z and delta rounded up; the lower bound down."""
    return "n/a" if v is None else fmt(v, direction)


def render(result, calibration: dict[str, Any] | None = None, readings: list | None = None) -> str:
    """Human-readable table of an AuditResult (with Theorem 3.7's claimed eps per reading for DiceSGD)."""
    conf = "exact (deterministic)" if result.confidence >= 1 else f"confidence {result.confidence:g}"
    rows = [("algorithm", result.algo)]
    if calibration:
        rows.append(
            (
                "noise calibrated",
                f"z = {_fmt(calibration['noise_multiplier'])} for eps = "
                f"{calibration['eps_target']!r} ({calibration['mode']})",
            )
        )
    rows += [
        ("noise multiplier z", _fmt(result.noise_multiplier)),
        ("delta", _fmt(result.delta)),
        ("epsilon lower bound", f"{_fmt(result.epsilon_lower, DOWN)}  ({conf})"),
    ]
    if readings:
        for r in readings:
            verdict = "refuted" if result.epsilon_lower > r["epsilon_claimed"] else "not refuted"
            rows.append((f"epsilon claimed, {r['reading']}", f"{_fmt(r['epsilon_claimed'])}  ({verdict})"))
    else:
        rows.append(("epsilon claimed", _fmt(result.epsilon_claimed)))
    rows += [
        ("epsilon certified", _fmt(result.epsilon_certified)),
        ("verdict", _verdict(result, readings)),
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
