"""Small helpers shared by the claim modules."""

from __future__ import annotations

import math

from accounting.json_floats import json_float
from verification.claim import Outcome, Verdict


def g(x: float, digits: int = 6) -> float:
    """Round for evidence: ``digits`` significant digits; inf/nan in the JSON encoding of
    :mod:`accounting.json_floats` (``"inf"``, ``"-inf"``, ``"nan"``)."""
    if x is None:
        return None  # type: ignore[return-value]
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return json_float(x)
    if x == 0:
        return 0.0
    return float(f"{x:.{digits}g}")


def quick_or_full(ctx, quick, full):
    return quick if ctx.quick else full


def audit_refutes_or_silent(rows: list[dict], *, what: str, method: str) -> Outcome:
    """Verdict of an audit checked against a target: ``rows`` carry ``eps`` (the claimed target),
    ``epsilon_lower`` and ``reproduce``. A lower bound above the target refutes; anything else
    is inconclusive, since a lower bound below the claim cannot confirm it."""
    details = {"cases": rows, "rule": "refuted if a lower bound exceeds the target eps; else no verdict"}
    bad = [r for r in rows if r["epsilon_lower"] > r["eps"]]
    if bad:
        r = bad[0]
        return Outcome(
            Verdict.REFUTED,
            f"at {what} the audit proves eps >= {r['epsilon_lower']} > {r['eps']}",
            method,
            details,
            reproduce=r["reproduce"],
        )
    return Outcome(
        Verdict.INCONCLUSIVE,
        f"no refutation: the audit lower bound stays below the target in all {len(rows)} cases "
        f"(max {max(r['epsilon_lower'] for r in rows)}); soundness rests on the certified check",
        method,
        details,
        reproduce=rows[0]["reproduce"],
    )


def mean_vs_bound(mean: float, se: float, bound: float) -> Verdict:
    """Monte-Carlo mean against an upper bound with a 3-standard-error margin either way."""
    if mean - 3 * se > bound:
        return Verdict.REFUTED
    return Verdict.CONFIRMED if mean + 3 * se <= bound else Verdict.INCONCLUSIVE
