"""Claims, checks and verdicts.

A :class:`Claim` is one statement of a paper (theorem, lemma, equation) together with the
checks that test it. Running a claim runs its checks *now* and combines their verdicts; no
verdict is ever stored. The combination rule is deliberately simple so a reader can audit it:

* a check that found a concrete counterexample (``refuted``) refutes the claim;
* the claim is ``confirmed`` only when every *deciding* check confirmed it;
* anything else (a check that could not decide, a missing dependency, a crash) leaves it
  ``inconclusive``.

Every claim that can be confirmed declares what a confirmation rests on (``basis``, one of
:data:`BASES`): an adversarial ``search`` over the stated domain that could have failed (the only
kind counted as "confirmed" in headlines; ``tests/verification/test_mutation.py`` checks that each such search
refutes the claim once its constant is tightened by 10%), a ``definition`` (true by definition or
by algebra, derivation in the claim), or an ``implementation`` check (our code against our code).
A refutation that holds only at a degenerate edge of the stated domain (e.g. delta -> 1) carries
``edge``: the refuting check says which edge, and the claim's result shows it.

Checks marked ``deciding=False`` are informative (e.g. "the paper's own proof chain does not
reach the stated epsilon", or an alternative reading of an ambiguous formula); they are
reported next to the deciding ones but do not move the claim's verdict, because they test a
different proposition than the one the paper states.
"""

from __future__ import annotations

import shlex
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """The three verdicts a check or claim can earn."""

    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"


KINDS = ("symbolic", "property", "empirical", "privacy")

#: what a confirmed verdict rests on (``Claim.basis``); only "search" counts as confirmed in headlines
BASES = {
    "search": "confirmed by an adversarial search over the stated domain that could have failed",
    "definition": "true by definition or by algebra (the derivation is in the claim)",
    "implementation": "implementation check: our code against our code",
}


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
    #: set on a refutation that holds only at a degenerate edge of the stated domain
    edge: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
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
        if self.edge is not None:
            out["edge"] = self.edge
        return out


@dataclass(frozen=True)
class Context:
    """Run-time options shared by all checks: the seed and whether to run the quick variant."""

    seed: int = 0
    quick: bool = False
    claim_id: str = ""
    #: the user's claims file the claim came from (``dptheory verify --claims-file``), if any
    claims_file: str = ""

    def reproduce(self, extra: str = "") -> str:
        quick = " --quick" if self.quick else ""
        cf = f" --claims-file {shlex.quote(self.claims_file)}" if self.claims_file else ""
        cmd = f"dptheory verify{cf} --claim {shlex.quote(self.claim_id)} --seed {self.seed}{quick}"
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
    #: a refutation that holds only at a degenerate edge of the stated domain says which edge
    edge: str | None = None


@dataclass(frozen=True)
class Check:
    """One way of testing a claim (symbolic, property-based, empirical, privacy)."""

    name: str
    kind: str
    fn: CheckFn
    deciding: bool = True
    reading: str | None = None
    #: False for a check that structurally cannot return ``refuted`` (every failure maps to
    #: inconclusive). Such a check cannot decide a universal claim: :meth:`Claim.run` demotes it
    #: to informative unless the claim is existential (a verified witness proves an existential).
    can_refute: bool = True

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown check kind {self.kind!r}")

    def _crashed(self, ctx: Context, msg: str, t0: float) -> CheckResult:
        """A contained crash: ``inconclusive``, marked ``crashed`` with ``msg``."""
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

    def run(self, ctx: Context) -> CheckResult:
        """Run the check; an exception becomes an ``inconclusive`` result marked ``crashed``."""
        from verification.guard import guarded

        t0 = time.perf_counter()
        try:
            with guarded():  # print() goes to stderr; sys.exit/os._exit become UserExit (a crash)
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
            # a UserExit points at the user's sys.exit / os._exit, not at the guard that caught it
            src = exc.__context__ if exc.__context__ is not None and type(exc).__name__ == "UserExit" else exc
            tb = [f for f in traceback.extract_tb(src.__traceback__) if not f.filename.endswith("guard.py")]
            where = f"{tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else "?"
            return self._crashed(ctx, f"{type(exc).__name__}: {exc} (at {where})", t0)
        if not isinstance(out, Outcome) or not isinstance(out.verdict, Verdict):
            # a user's check (--claims-file) can return anything: contain it like a crash
            got = out.verdict if isinstance(out, Outcome) else out
            msg = f"TypeError: check {self.name} returned {got!r}, not an Outcome with a Verdict"
            return self._crashed(ctx, msg, t0)
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
            edge=out.edge if out.verdict is Verdict.REFUTED else None,
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
    #: the statement's domain as data (parameters with the ranges the paper states, constraints)
    domain: Any = None
    #: plausible readings of ambiguous formulas (``verification.search.Reading``)
    readings: tuple[Any, ...] = ()
    #: claims this one is derived from: it is confirmed only if every premise is confirmed
    depends_on: tuple[str, ...] = ()
    #: "there exists ...": a verified witness confirms, a failure to find one is inconclusive
    existential: bool = False
    #: what a confirmation of this claim rests on: a key of :data:`BASES` (None: not stated)
    basis: str | None = None

    def __post_init__(self) -> None:
        if self.basis is not None and self.basis not in BASES:
            raise ValueError(f"claim {self.id}: basis must be one of {sorted(BASES)}, got {self.basis!r}")

    def run(
        self,
        ctx: Context | None = None,
        *,
        on_check: Callable[[str], None] | None = None,
        premises: dict[str, Verdict] | None = None,
    ) -> ClaimResult:
        """Run every check (each with its own crash guard) and combine the verdicts.

        ``premises`` maps each id in ``depends_on`` to its verdict; where it is not given, the
        premises are run here (same seed and quick flag).
        """
        ctx = ctx or Context()
        ctx = replace(ctx, claim_id=self.id)
        results = []
        for check in self.checks:
            if on_check is not None:
                on_check(f"{self.id}:{check.name}")
            r = check.run(ctx)
            if r.deciding and not check.can_refute and not self.existential:
                r = replace(
                    r,
                    deciding=False,
                    summary=f"[informative: this check cannot return refuted] {r.summary}",
                )
            results.append(r)
        if self.depends_on and premises is None:
            from verification import registry

            premises = {pid: registry.CLAIMS[pid].run(ctx).verdict for pid in self.depends_on}
        prem = tuple((pid, (premises or {}).get(pid, Verdict.INCONCLUSIVE)) for pid in self.depends_on)
        return ClaimResult(claim=self, checks=tuple(results), premises=prem)


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
    premises: tuple[tuple[str, Verdict], ...] = ()

    @property
    def own_verdict(self) -> Verdict:
        """The verdict of this claim's own deciding checks, before its premises are considered."""
        return combine(self.checks)

    @property
    def unconfirmed_premises(self) -> tuple[tuple[str, Verdict], ...]:
        return tuple((pid, v) for pid, v in self.premises if v is not Verdict.CONFIRMED)

    @property
    def verdict(self) -> Verdict:
        v = combine(self.checks)
        if v is Verdict.REFUTED and self.reading_split:
            return Verdict.INCONCLUSIVE  # no headline reading: refuted only if every reading is
        if v is Verdict.CONFIRMED and self.unconfirmed_premises:
            return Verdict.INCONCLUSIVE  # a derivation is no stronger than its premises
        return v

    @property
    def reading_split(self) -> bool:
        """True when the claim declares readings, none is the headline (the proof does not decide),
        and not every reading is refuted: the claim then reports the split instead of a refutation."""
        rds = self.claim.readings
        if not rds or any(r.headline for r in rds):
            return False
        return any(r["verdict"] != Verdict.REFUTED.value for r in self.readings_json())

    @property
    def basis(self) -> str | None:
        """What the verdict rests on when it is ``confirmed`` (the claim's declared basis), else None."""
        return self.claim.basis if self.verdict is Verdict.CONFIRMED else None

    @property
    def edge(self) -> str | None:
        """For a refutation that holds only at a degenerate edge of the stated domain: which edge.

        Without declared readings: the claim's refutation is edge-only when every refuting deciding
        check carries an edge. With readings (each must be refuted): the edges of every reading
        whose refutation is edge-only."""
        if self.verdict is not Verdict.REFUTED:
            return None
        groups: list[list[CheckResult]]
        if self.claim.readings and not any(r.headline for r in self.claim.readings):
            groups = [[r for r in self.checks if r.reading == rd.name] for rd in self.claim.readings]
        else:
            groups = [[r for r in self.checks if r.deciding]]
        edges = []
        for grp in groups:
            refuting = [r for r in grp if r.verdict is Verdict.REFUTED]
            if refuting and all(r.edge for r in refuting):
                edges += [r.edge for r in refuting if r.edge not in edges]
        return "; ".join(edges) if edges else None

    @property
    def crashed(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.checks if r.crashed)

    @property
    def summary(self) -> str:
        deciding = [r for r in self.checks if r.deciding]
        v = self.verdict
        prefix = ""
        if v is not self.own_verdict and self.own_verdict is Verdict.REFUTED:
            prefix = "refuted under some readings only, and the proof does not pick one: "
            v = self.own_verdict
        elif v is not self.own_verdict:
            prefix = (
                "derived from premises that are not confirmed ("
                + ", ".join(f"{pid}: {pv.value}" for pid, pv in self.unconfirmed_premises)
                + "); its own checks would confirm: "
            )
            v = self.own_verdict
        if not deciding:
            return (
                prefix
                + "no deciding check (only informative ones): "
                + " | ".join(f"{r.name}: {r.summary}" for r in self.checks)
            )
        if v is Verdict.REFUTED:
            pick = [r for r in deciding if r.verdict is Verdict.REFUTED]
        elif v is Verdict.CONFIRMED:
            pick = deciding
        else:
            pick = [r for r in deciding if r.verdict is Verdict.INCONCLUSIVE] or deciding
        text = prefix + " | ".join(f"{r.name}: {r.summary}" for r in pick)
        per = self.readings_json()
        if len({r["verdict"] for r in per}) > 1:  # the verdict depends on the reading: say so
            text += (
                " [per reading: "
                + "; ".join(
                    f"{r['reading']}{' (headline)' if r['headline'] else ''}: {r['verdict']}" for r in per
                )
                + "]"
            )
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
            **({"basis": self.basis} if self.basis else {}),
            **({"edge": self.edge} if self.edge else {}),
            "summary": self.summary,
            "statement": c.statement,
            "formula": c.formula,
            "assumptions": list(c.assumptions),
            "evidence": [r.to_json() for r in self.checks],
            "seconds": round(self.seconds, 3),
            "depends_on": [{"id": pid, "verdict": v.value} for pid, v in self.premises],
            "domain": c.domain.describe() if c.domain is not None else None,
            "readings": self.readings_json(),
        }

    def readings_json(self) -> list[dict[str, Any]]:
        """One entry per declared reading: why it is plausible and the verdict of its checks."""
        out = []
        for rd in self.claim.readings:
            mine = [r for r in self.checks if r.reading == rd.name]
            verdict = combine([replace(r, deciding=True) for r in mine]) if mine else Verdict.INCONCLUSIVE
            out.append({"reading": rd.name, "why": rd.why, "headline": rd.headline, "verdict": verdict.value})
        return out
