"""The frozen result of an audit (a lower bound on epsilon on a concrete worst-case instance)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from accounting.json_floats import json_float as _jf

__all__ = ["AuditResult"]


@dataclass(frozen=True)
class AuditResult:
    """epsilon_lower: the true epsilon(delta) of the mechanism exceeds it (exactly, or with
    probability >= ``confidence`` over the audit's own randomness) on ``instance``.

    ``epsilon_claimed`` / ``epsilon_certified`` are the paper's and our upper-bound numbers at
    the same noise (``None`` where a mode does not exist).  ``verdict`` compares them:
    ``"claim refuted on this instance"`` when ``epsilon_lower > epsilon_claimed``.

    Attributes:
        algo: the algorithm audited.
        instance: the worst-case instance, in words.
        noise_multiplier: the noise multiplier audited.
        delta: the delta.
        epsilon_lower: the lower bound on the true epsilon.
        confidence: its confidence (1.0 for exact lower bounds).
        epsilon_claimed: the paper's number, or None.
        epsilon_certified: our upper bound, or None.
        method: how the lower bound was computed.
        assumptions_checked: ``(assumption, holds)`` pairs.
        seed: the audit's seed, where it samples.
        samples: its sample count, where it samples.
        details: method-specific facts.
        warnings: human-readable warnings.
    """

    algo: str
    instance: str
    noise_multiplier: float
    delta: float
    epsilon_lower: float
    confidence: float
    epsilon_claimed: float | None
    epsilon_certified: float | None
    method: str
    assumptions_checked: tuple[tuple[str, bool], ...] = ()
    seed: int | None = None
    samples: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def refutes_claim(self) -> bool:
        """True when the instance's epsilon provably exceeds the claimed epsilon."""
        return self.epsilon_claimed is not None and self.epsilon_lower > self.epsilon_claimed

    @property
    def verdict(self) -> str:
        if self.epsilon_certified is not None and self.epsilon_lower > self.epsilon_certified * (1 + 1e-9):
            return "INCONSISTENT: lower bound exceeds certified upper bound (bug)"
        if self.refutes_claim:
            return "claim refuted on this instance (epsilon_lower > epsilon_claimed)"
        if self.epsilon_claimed is None:
            return "no claimed number to test"
        return "consistent with the claim on this instance"

    def to_json(self) -> dict[str, Any]:
        return {
            "algo": self.algo,
            "instance": self.instance,
            "noise_multiplier": _jf(float(self.noise_multiplier)),
            "delta": _jf(float(self.delta)),
            "epsilon_lower": _jf(float(self.epsilon_lower)),
            "confidence": _jf(float(self.confidence)),
            "epsilon_claimed": None if self.epsilon_claimed is None else _jf(float(self.epsilon_claimed)),
            "epsilon_certified": None
            if self.epsilon_certified is None
            else _jf(float(self.epsilon_certified)),
            "method": self.method,
            "verdict": self.verdict,
            "refutes_claim": self.refutes_claim,
            "assumptions_checked": [
                {"assumption": a, "holds": bool(ok)} for a, ok in self.assumptions_checked
            ],
            "seed": self.seed,
            "samples": self.samples,
            "details": {k: _jf(v) if isinstance(v, float) else v for k, v in self.details.items()},
            "warnings": list(self.warnings),
        }
