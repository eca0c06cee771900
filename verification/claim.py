"""Claims, checks and verdicts.

A :class:`Claim` is one statement of a paper (theorem, lemma, equation) together with the
checks that test it. Running a claim runs its checks *now* and combines their verdicts; no
verdict is ever stored. The combination rule is deliberately simple so a reader can audit it:

* a check that found a concrete counterexample (``refuted``) refutes the claim;
* the claim is ``confirmed`` only when every *deciding* check confirmed it;
* anything else (a check that could not decide, a missing dependency, a crash) leaves it
  ``inconclusive``.

Checks marked ``deciding=False`` are informative (e.g. "the paper's own proof chain does not
reach the stated epsilon", or an alternative reading of an ambiguous formula); they are
reported next to the deciding ones but do not move the claim's verdict, because they test a
different proposition than the one the paper states.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """The three verdicts a check or claim can earn."""

    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"


KINDS = ("symbolic", "property", "empirical", "privacy")


@dataclass(frozen=True)
class Plot:
    """Data for one figure; rendered to PNG by :mod:`verification.report` (matplotlib lazily).

    Keeping figures as data lets checks stay free of matplotlib and lets ``--json`` carry them.
    """

    name: str
    title: str
    xlabel: str
    ylabel: str
    series: tuple[dict, ...]  # each {"label", "x", "y", optional "style"}
    hlines: tuple[dict, ...] = ()  # each {"label", "y"}
    logx: bool = False
    logy: bool = False


@dataclass(frozen=True)
class Evidence:
    """What a check measured: the numbers a reviewer needs to re-derive its verdict.

    ``details`` holds plain JSON values (parameters, both sides of an inequality, tolerances,
    numbers of cases, seeds). ``reproduce`` is a shell command that recomputes it.
    """

    method: str
    details: dict[str, Any]
    reproduce: str
    plots: tuple[Plot, ...] = ()


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: verdict, a one-line summary, the evidence, and timing."""

    name: str
    kind: str
    verdict: Verdict
    summary: str
    evidence: Evidence
    deciding: bool = True
    reading: str | None = None
    seconds: float = 0.0
    crashed: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "kind": self.kind,
            "verdict": self.verdict.value,
            "deciding": self.deciding,
            "reading": self.reading,
            "summary": self.summary,
            "method": self.evidence.method,
            "details": self.evidence.details,
            "reproduce": self.evidence.reproduce,
            "seconds": round(self.seconds, 3),
            "crashed": self.crashed,
        }


@dataclass(frozen=True)
class Context:
    """Run-time options shared by all checks: the seed and whether to run the quick variant."""

    seed: int = 0
    quick: bool = False
    claim_id: str = ""

    def reproduce(self, extra: str = "") -> str:
        quick = " --quick" if self.quick else ""
        cmd = f"dptheory verify --claim {self.claim_id} --seed {self.seed}{quick}"
        return f"{cmd} {extra}".strip()


#: A check function receives the context and returns its verdict, summary and evidence.
CheckFn = Callable[[Context], "Outcome"]


@dataclass(frozen=True)
class Outcome:
    """What a check function returns; :meth:`Check.run` adds name, kind, timing."""

    verdict: Verdict
    summary: str
    method: str
    details: dict[str, Any]
    plots: tuple[Plot, ...] = ()
    reproduce: str | None = None


@dataclass(frozen=True)
class Check:
    """One way of testing a claim (symbolic, property-based, empirical, privacy)."""

    name: str
    kind: str
    fn: CheckFn
    deciding: bool = True
    reading: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown check kind {self.kind!r}")

    def run(self, ctx: Context) -> CheckResult:
        """Run the check; an exception becomes an ``inconclusive`` result marked ``crashed``."""
        t0 = time.perf_counter()
        try:
            out = self.fn(ctx)
        except ImportError as exc:
            # a sibling module of the project is missing or half-written: say so, do not guess
            name = getattr(exc, "name", None) or str(exc)
            reason = f"dependency {name} unavailable ({type(exc).__name__}: {exc})"
            return CheckResult(
                name=self.name,
                kind=self.kind,
                verdict=Verdict.INCONCLUSIVE,
                summary=reason,
                evidence=Evidence(method="(not run)", details={"reason": reason}, reproduce=ctx.reproduce()),
                deciding=self.deciding,
                reading=self.reading,
                seconds=time.perf_counter() - t0,
            )
        except Exception as exc:  # noqa: BLE001 - a crashing check must not stop the others
            tb = traceback.extract_tb(exc.__traceback__)
            where = f"{tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else "?"
            msg = f"{type(exc).__name__}: {exc} (at {where})"
            return CheckResult(
                name=self.name,
                kind=self.kind,
                verdict=Verdict.INCONCLUSIVE,
                summary=f"check crashed: {msg}",
                evidence=Evidence(method="(crashed)", details={}, reproduce=ctx.reproduce()),
                deciding=self.deciding,
                reading=self.reading,
                seconds=time.perf_counter() - t0,
                crashed=msg,
            )
        if not isinstance(out.verdict, Verdict):
            raise TypeError(f"check {self.name} returned a non-Verdict {out.verdict!r}")
        return CheckResult(
            name=self.name,
            kind=self.kind,
            verdict=out.verdict,
            summary=out.summary,
            evidence=Evidence(
                method=out.method,
                details=out.details,
                reproduce=out.reproduce or ctx.reproduce(),
                plots=out.plots,
            ),
            deciding=self.deciding,
            reading=self.reading,
            seconds=time.perf_counter() - t0,
        )


@dataclass(frozen=True)
class Claim:
    """A paper's statement and the checks that test it."""

    id: str
    paper: str
    location: str
    statement: str
    formula: str
    assumptions: tuple[str, ...]
    checks: tuple[Check, ...]
    notes: str = ""
    #: Claims this one is derived from (a corollary from its theorem): it is confirmed only if
    #: every premise is confirmed too; otherwise at most inconclusive, with the reason.
    depends_on: tuple[str, ...] = ()
    #: Non-empty when the rendering lost the statement and the checks test a reconstruction: a
    #: reconstructed number can refute nothing the paper wrote and confirms nothing either, so
    #: such a claim is at most inconclusive.
    lost_text: str = ""

    def run(
        self, ctx: Context | None = None, *, on_check: Callable[[str], None] | None = None
    ) -> ClaimResult:
        """Run every check (each with its own crash guard) and combine the verdicts."""
        ctx = ctx or Context()
        ctx = Context(seed=ctx.seed, quick=ctx.quick, claim_id=self.id)
        results = []
        for check in self.checks:
            if on_check is not None:
                on_check(f"{self.id}:{check.name}")
            results.append(check.run(ctx))
        caps: list[str] = []
        if self.lost_text:
            caps.append(
                f"statement lost in the rendering ({self.lost_text}); the checks test a reconstruction"
            )
        for pid in self.depends_on:
            from verification import registry

            premise = registry.CLAIMS[pid].run(Context(seed=ctx.seed, quick=ctx.quick))
            if premise.verdict is not Verdict.CONFIRMED:
                caps.append(f"depends on {pid}, which is {premise.verdict.value}")
        return ClaimResult(claim=self, checks=tuple(results), caps=tuple(caps))


def combine(results: Sequence[CheckResult]) -> Verdict:
    """Combine deciding checks: any refuted -> refuted; all confirmed -> confirmed; else inconclusive."""
    deciding = [r for r in results if r.deciding]
    if not deciding:
        return Verdict.INCONCLUSIVE
    if any(r.verdict is Verdict.REFUTED for r in deciding):
        return Verdict.REFUTED
    if all(r.verdict is Verdict.CONFIRMED for r in deciding):
        return Verdict.CONFIRMED
    return Verdict.INCONCLUSIVE


@dataclass(frozen=True)
class ClaimResult:
    """A claim with the results of its checks; the verdict is derived, never stored."""

    claim: Claim
    checks: tuple[CheckResult, ...] = field(default_factory=tuple)
    #: Reasons that cap a confirmation at inconclusive (lost text, unconfirmed premises).
    caps: tuple[str, ...] = ()

    @property
    def verdict(self) -> Verdict:
        v = combine(self.checks)
        if v is Verdict.CONFIRMED and self.caps:
            return Verdict.INCONCLUSIVE
        return v

    @property
    def crashed(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.checks if r.crashed)

    @property
    def summary(self) -> str:
        deciding = [r for r in self.checks if r.deciding]
        v = self.verdict
        if v is Verdict.REFUTED:
            pick = [r for r in deciding if r.verdict is Verdict.REFUTED]
        elif v is Verdict.CONFIRMED:
            pick = deciding
        else:
            pick = [r for r in deciding if r.verdict is Verdict.INCONCLUSIVE] or deciding
        text = " | ".join(f"{r.name}: {r.summary}" for r in pick)
        if v is Verdict.INCONCLUSIVE and self.caps and combine(self.checks) is Verdict.CONFIRMED:
            return "capped at inconclusive: " + "; ".join(self.caps) + " | checks: " + text
        return text

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.checks)

    def to_json(self) -> dict[str, Any]:
        c = self.claim
        return {
            "id": c.id,
            "paper": c.paper,
            "location": c.location,
            "verdict": self.verdict.value,
            "summary": self.summary,
            "statement": c.statement,
            "formula": c.formula,
            "assumptions": list(c.assumptions),
            "depends_on": list(c.depends_on),
            "caps": list(self.caps),
            "evidence": [r.to_json() for r in self.checks],
            "seconds": round(self.seconds, 3),
        }
