"""The public claim API: declare your paper's claims and check them like the built-in ones.

Write a file that defines ``CLAIMS`` (a list of :class:`Claim`, or a function returning one)
and run ``dptheory verify --claims-file my_paper_claims.py [--report DIR] [--json]``. Everything
a claims file needs is importable from this one module; what it re-exports is stable (see
``docs/api.md``), the modules behind it (``verification.*``) are internal.

* claims and checks: :class:`Claim`, :class:`Check`, :class:`Outcome`, :class:`Verdict`,
  :class:`Context`, :class:`Plot`;
* domains and readings: :class:`Param`, :class:`Constraint`, :class:`Domain`, :class:`Reading`,
  :func:`adversarial_search`, :func:`pointwise`;
* deciding-check helpers: :func:`search_check` (adversarial search plus an exact replay of the
  worst point), :func:`privacy_outcome` (claimed noise against ``certified`` and the audit),
  :func:`mean_vs_bound` (Monte-Carlo mean against a bound, 3 standard errors);
* audits and toy runs: :func:`audit`, :func:`certified_epsilon`, :func:`toy_run`;
* sympy helpers: :func:`equal_after_substitution`, :func:`inhomogeneous_terms`,
  :func:`leading_rate`;
* running: :func:`run_claims`, :func:`load_claims_file`, :func:`write_report`.

Import cost: numpy only. scipy, sympy, torch, mpmath and matplotlib load inside the helpers
that need them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from accounting.errors import python_names
from verification.claim import (
    KINDS,
    Check,
    CheckFn,
    CheckResult,
    Claim,
    ClaimResult,
    Context,
    Evidence,
    Outcome,
    Plot,
    Verdict,
    combine,
)
from verification.search import (
    Constraint,
    Domain,
    Param,
    Reading,
    SearchResult,
    adversarial_search,
    pointwise,
)
from verification.userfile import ClaimsFileError, load_claims_file, validate_claims

__all__ = [
    # claims, checks, verdicts
    "Claim",
    "Check",
    "CheckFn",
    "Outcome",
    "Verdict",
    "Context",
    "Plot",
    "Evidence",
    "CheckResult",
    "ClaimResult",
    "KINDS",
    "combine",
    # domains, readings, search
    "Param",
    "Constraint",
    "Domain",
    "Reading",
    "SearchResult",
    "adversarial_search",
    "pointwise",
    # deciding-check helpers
    "search_check",
    "privacy_outcome",
    "mean_vs_bound",
    # audits, accountant, toy runs
    "audit",
    "audit_command",
    "certified_epsilon",
    "toy_run",
    # sympy helpers
    "equal_after_substitution",
    "inhomogeneous_terms",
    "leading_rate",
    # running
    "run_claims",
    "load_claims_file",
    "validate_claims",
    "ClaimsFileError",
    "write_report",
]


# ------------------------------------------------------------------------------------ search


def search_check(
    domain: Domain,
    ratio: Callable[[dict[str, Any]], Any],
    *,
    exact: Callable[[dict[str, float]], float] | None = None,
    what: str = "LHS/RHS",
    samples: tuple[int, int] = (256, 2048),
    maxiter: tuple[int, int] = (20, 60),
    extra_points: Sequence[dict[str, float]] = (),
    reproduce: Callable[[dict[str, float]], str] | str | None = None,
) -> CheckFn:
    """A deciding check for "for all points of ``domain``: ratio <= 1" that can fail.

    ``ratio`` is vectorised (``{name: ndarray} -> ndarray``; wrap a scalar function with
    :func:`pointwise`); > 1 is a violation. The search (:func:`adversarial_search`, sizes
    ``samples``/``maxiter`` as (quick, full)) looks for the worst point; a float candidate is
    never the verdict: ``exact(point)`` re-computes the ratio there in exact or high-precision
    arithmetic (mpmath, fractions) and the check refutes only if that exceeds 1 at a point that
    satisfies every constraint. Without ``exact`` the float ratio is replayed once and the
    evidence says so. No violation: ``confirmed`` on the searched domain, with the coverage and
    the largest ratio found in the evidence (and its exact value where ``exact`` is given).
    ``reproduce`` is a command, or a function of the counterexample that returns one.
    """

    def check(ctx: Context) -> Outcome:
        res = adversarial_search(
            domain,
            ratio,
            samples=samples[0] if ctx.quick else samples[1],
            maxiter=maxiter[0] if ctx.quick else maxiter[1],
            seed=ctx.seed,
            extra_points=extra_points,
        )
        details = res.details()
        method = "adversarial search over the stated domain" + (
            " + exact replay of the worst point" if exact is not None else " (float ratio, no exact replay)"
        )
        point = res.argmax
        replay = None
        if point is not None:
            replay = float(exact(point)) if exact is not None else float(_scalar_ratio(ratio, point))
            details["worst_point_replayed_ratio"] = replay
            details["replay"] = "exact (user's exact function)" if exact is not None else "float (no exact)"
        cx = res.counterexample
        if cx is not None and replay is not None and replay > 1.0 and domain.contains(cx):
            # the worst point is rarely the clearest: shrink it to the shortest decimals that
            # still violate (verified with the same replay) and report that one
            from verification.shrink import shrink_point

            replay_fn = exact if exact is not None else (lambda q: _scalar_ratio(ratio, q))
            small, spent = shrink_point(cx, domain, lambda q: float(replay_fn(q)) > 1.0)
            replay = float(replay_fn(small))
            details["worst_point"] = dict(cx)
            details["counterexample"] = small
            details["counterexample_ratio"] = replay
            details["shrink_evaluations"] = spent
            cx = small
            where = ", ".join(f"{k}={v:.6g}" for k, v in cx.items())
            cmd = reproduce(cx) if callable(reproduce) else reproduce
            return Outcome(
                Verdict.REFUTED,
                f"counterexample at {where}: {what} = {replay:.6g} > 1"
                + ("" if exact is not None else " (float evaluation)"),
                method,
                details,
                reproduce=cmd,
            )
        if cx is not None:
            return Outcome(
                Verdict.INCONCLUSIVE,
                f"the float search found {what} = {res.max_ratio:.6g} but the replay gives {replay:.6g} "
                "<= 1: rounding, not a counterexample; " + res.summary(),
                method,
                details,
            )
        return Outcome(
            Verdict.CONFIRMED,
            f"no violation on the searched domain: {res.summary()}"
            + (f"; exact ratio at the worst point {replay:.6g}" if exact is not None and replay else ""),
            method,
            details,
        )

    return check


def _scalar_ratio(ratio: Callable[[dict[str, Any]], Any], point: dict[str, float]) -> float:
    import numpy as np

    return float(np.asarray(ratio({k: np.array([v]) for k, v in point.items()}), dtype=float).reshape(-1)[0])


def mean_vs_bound(mean: float, se: float, bound: float) -> Verdict:
    """A Monte-Carlo mean against an upper bound, 3 standard errors either way.

    refuted if mean - 3 se > bound; confirmed if mean + 3 se <= bound; else inconclusive.
    """
    if mean - 3 * se > bound:
        return Verdict.REFUTED
    return Verdict.CONFIRMED if mean + 3 * se <= bound else Verdict.INCONCLUSIVE


# ------------------------------------------------------------------------- privacy wiring


def certified_epsilon(*, algo: str, noise_multiplier: float, delta: float, **options: Any) -> float:
    """Our certified epsilon (an upper bound with a derivation; see docs/algorithms.md) of
    ``algo`` at ``noise_multiplier`` and ``delta``; ``options`` as for :func:`dptheory.epsilon`
    (``sample_rate``, ``steps``, ``rounds``, ``c1``, ...). Raises if no certified mode exists."""
    from dptheory.api import epsilon

    return float(
        epsilon(
            algo=algo, noise_multiplier=noise_multiplier, delta=delta, mode="certified", **options
        ).epsilon
    )


@python_names
def audit(
    *,
    algo: str,
    noise_multiplier: float,
    delta: float,
    samples: int = 1000,
    confidence: float = 0.99,
    seed: int = 0,
    **options: Any,
) -> Any:
    """A lower bound on the true epsilon (``AuditResult.epsilon_lower``) from the project's audit
    of ``algo`` on a worst-case instance (``accounting.audit``; see docs/audits.md)."""
    from accounting.algorithms.registry import get_algorithm
    from accounting.audit import run_audit
    from dptheory.api import build_params

    params = build_params(algo=algo, delta=delta, noise_multiplier=noise_multiplier, **options)
    resolved, _, _ = get_algorithm(algo).resolve(params)
    return run_audit(resolved, samples=samples, confidence=confidence, seed=seed)


def audit_command(
    *, algo: str, noise_multiplier: float, delta: float, samples: int, seed: int, **options
) -> str:
    """The ``dptheory audit`` command line that reproduces :func:`audit` with these arguments."""
    opts = " ".join(
        f"--{k.replace('_', '-')} {v!r}" if isinstance(v, str) else f"--{k.replace('_', '-')} {v}"
        for k, v in options.items()
        if v is not None
    )
    # --samples is an error where the audit is exact (every algorithm but DiceSGD with G > C1)
    g, c1 = options.get("grad_bound"), options.get("c1") or 1.0
    monte_carlo = algo == "dicesgd" and not (g is not None and g <= c1)
    mc = f" --samples {samples}" if monte_carlo else ""
    return (
        f"dptheory audit --algo {algo} --noise-multiplier {noise_multiplier!r} --delta {delta!r} "
        f"{opts}{mc} --seed {seed}"
    ).replace("  ", " ")


def privacy_outcome(
    algo: str,
    cases: Sequence[Mapping[str, Any]],
    *,
    samples: int = 1000,
    seed: int = 0,
    use_audit: bool = True,
) -> Outcome:
    """Check a paper's noise prescription: the project's rule for privacy claims.

    Each case holds ``eps`` (the paper's claimed epsilon), ``delta``, ``noise_multiplier`` (the
    noise the paper prescribes for that eps) and the algorithm's options (``sample_rate``,
    ``steps``, ...). Per case: the audit's lower bound and our certified upper bound at that noise.

    * refuted if some audit lower bound exceeds the claimed eps (a concrete instance leaks more);
    * confirmed (sound) if the certified eps is <= the claimed eps in every case;
    * inconclusive otherwise (the gap is in the evidence).
    """
    rows = []
    for case in cases:
        c = dict(case)
        eps, delta, z = float(c.pop("eps")), float(c.pop("delta")), float(c.pop("noise_multiplier"))
        row: dict[str, Any] = {"eps_claimed": eps, "delta": delta, "noise_multiplier": z, **c}
        row["eps_certified"] = certified_epsilon(algo=algo, noise_multiplier=z, delta=delta, **c)
        if use_audit:
            res = audit(algo=algo, noise_multiplier=z, delta=delta, samples=samples, seed=seed, **c)
            row["eps_audit_lower"] = float(res.epsilon_lower)
            row["audit_instance"] = res.instance
            row["reproduce"] = audit_command(
                algo=algo, noise_multiplier=z, delta=delta, samples=samples, seed=seed, **c
            )
        rows.append(row)
    details = {
        "algo": algo,
        "cases": rows,
        "rule": "refuted if an audit lower bound > claimed eps; confirmed if certified eps <= claimed eps "
        "in every case; else inconclusive",
    }
    method = "certified accountant + audit lower bound at the prescribed noise"
    bad = [r for r in rows if r.get("eps_audit_lower", -math.inf) > r["eps_claimed"]]
    if bad:
        r = bad[0]
        return Outcome(
            Verdict.REFUTED,
            f"at noise multiplier {r['noise_multiplier']:.6g} the audit proves "
            f"eps >= {r['eps_audit_lower']:.6g} > claimed {r['eps_claimed']:.6g}",
            method,
            details,
            reproduce=r["reproduce"],
        )
    if all(r["eps_certified"] <= r["eps_claimed"] for r in rows):
        worst = max(r["eps_certified"] / r["eps_claimed"] for r in rows)
        return Outcome(
            Verdict.CONFIRMED,
            f"sound in all {len(rows)} cases: certified eps <= claimed eps (max ratio {worst:.4g})",
            method,
            details,
        )
    gap = max(r["eps_certified"] / r["eps_claimed"] for r in rows)
    return Outcome(
        Verdict.INCONCLUSIVE,
        f"certified eps exceeds the claim by up to {gap:.4g}x, and no audit refutes it",
        method,
        details,
    )


# ------------------------------------------------------------------------------- toy runs


def toy_run(
    algo: str, problem: str, *, problem_options: Mapping[str, Any] | None = None, **options: Any
) -> Any:
    """Run the project's torch optimizer ``algo`` on toy problem ``problem`` (see ``dptheory run
    --help`` for the options: ``steps``, ``lr``, ``seeds``, ``seed``, ``noise_multiplier``, ``c1``,
    ...). Returns a ``dptheory.runner.RunResult`` (``.summary()``, ``.runs[k].x``,
    ``.fixed_point``, ``.to_json()``). Imports torch."""
    from dptheory.runner import run

    return run(algo, problem, problem_options=dict(problem_options or {}), progress=False, **options)


# --------------------------------------------------------------------------------- sympy


def equal_after_substitution(
    lhs: Any, rhs: Any, symbols: list[Any], *, seed: int = 0, cases: int = 20
) -> dict:
    """Whether two sympy expressions are identical (simplified difference + numeric spot check)."""
    from verification.symbolic import equal_after_substitution as f

    return f(lhs, rhs, symbols, seed=seed, cases=cases)


def inhomogeneous_terms(expr: Any, units: dict[Any, dict[str, Any]]) -> tuple[str, list[str]]:
    """Dimensional analysis: the unit of ``expr`` and the sub-expressions that mix units."""
    from verification.symbolic import inhomogeneous_terms as f

    return f(expr, units)


def leading_rate(expr: Any, var: Any, candidates: list[Any]) -> dict:
    """The dominant term of ``expr`` as ``var`` tends to infinity, among ``candidates``."""
    from verification.symbolic import leading_rate as f

    return f(expr, var, candidates)


# ------------------------------------------------------------------------------- running


def run_claims(
    claims: Sequence[Claim], *, seed: int = 0, quick: bool = False, progress: bool | None = False
) -> list[ClaimResult]:
    """Run claims (yours, built-in ones, or both) as ``dptheory verify`` does; premises named in
    ``depends_on`` are looked up among ``claims`` first, then among the built-in claims."""
    from verification.engine import run_claims as run

    claims = list(claims)
    return run(claims, seed=seed, quick=quick, progress=progress, extra={c.id: c for c in claims})


def write_report(
    results: Sequence[ClaimResult], directory: str | Path, *, seed: int = 0, quick: bool = False
) -> Path:
    """Write ``report.md``, ``figures/*.png`` and ``results.json`` into ``directory`` (atomically),
    as ``dptheory verify --report`` does. Returns the directory."""
    from verification.report import check_report_dir
    from verification.report import write_report as write

    target = check_report_dir(str(directory))
    write(results, target, seed=seed, quick=quick, command="dptheory.claims.write_report", runtime_s=0.0)
    return target
