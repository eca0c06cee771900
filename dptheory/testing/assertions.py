"""Assertions for a user's test suite; each failure names a minimal counterexample and a command
that reproduces it.

Inside a ``@given`` test, hypothesis shrinks the *generated inputs*; these assertions also
shrink what they are handed (a composed mechanism to its fewest steps and components, a bound's
violating point to its shortest decimals, an audit to its fewest steps), and only ever report a
reduced case after re-checking that it still fails.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np


def _fail(lines: Sequence[str]) -> AssertionError:
    return AssertionError("\n".join(lines))


# -------------------------------------------------------------------------- epsilon upper bound


def certified_epsilon_of(mechanism: Any, delta: float, *, orders: Sequence[float] | None = None) -> float:
    """Our certified epsilon of ``mechanism`` (any ``accounting.events`` event or object with
    ``rdp(orders)``): its RDP curve composed by ``accounting.accountant.RdpAccountant`` and
    converted with the improved conversion (docs/algorithms.md)."""
    from accounting.accountant import RdpAccountant

    acc = RdpAccountant(orders)
    acc.compose(mechanism)
    return float(acc.get_epsilon(delta))


def _shrink_mechanism(m: Any, fails: Callable[[Any], bool]) -> Any:
    """A smaller mechanism that still fails: fewer repetitions, fewer components, a shorter
    schedule (each accepted step re-checked with ``fails``)."""
    from accounting import events as ev

    if isinstance(m, ev.SelfComposedEvent):
        lo, hi = 1, m.count  # RDP grows with the count: the smallest failing count by bisection
        while lo < hi:
            mid = (lo + hi) // 2
            if fails(ev.SelfComposedEvent(m.event, mid)):
                hi = mid
            else:
                lo = mid + 1
        m = ev.SelfComposedEvent(m.event, hi) if hi > 1 or not fails(m.event) else m.event
        if isinstance(m, ev.SelfComposedEvent):
            inner = _shrink_mechanism(m.event, lambda e: fails(ev.SelfComposedEvent(e, m.count)))
            return ev.SelfComposedEvent(inner, m.count)
        return _shrink_mechanism(m, fails)
    if isinstance(m, ev.ComposedEvent):
        parts = list(m.events)
        i = 0
        while i < len(parts) and len(parts) > 1:
            trial = parts[:i] + parts[i + 1 :]
            cand = ev.ComposedEvent(tuple(trial)) if len(trial) > 1 else trial[0]
            if fails(cand):
                parts = trial
            else:
                i += 1
        if len(parts) == 1:
            return _shrink_mechanism(parts[0], fails)
        return ev.ComposedEvent(tuple(parts))
    if isinstance(m, ev.ScheduleEvent) and m.steps > 1:
        zs, q = m.noise_multipliers, m.sample_rate

        def prefix(k: int) -> Any:
            qq = q if np.ndim(q) == 0 else tuple(q[:k])
            return ev.ScheduleEvent(qq, zs[:k])

        lo, hi = 1, m.steps
        while lo < hi:
            mid = (lo + hi) // 2
            if fails(prefix(mid)):
                hi = mid
            else:
                lo = mid + 1
        return prefix(hi) if fails(prefix(hi)) else m
    return m


def _event_command(mechanism: Any, delta: float) -> str:
    from accounting.events import event_to_dict

    try:
        blob = json.dumps(event_to_dict(mechanism))
    except Exception:  # noqa: BLE001 - an object outside accounting.events has no JSON form
        name = type(mechanism).__name__
        return f"(no JSON form for {name}; compose it into RdpAccountant and call get_epsilon)"
    code = (
        "import json; from accounting.events import event_from_dict; "
        "from accounting.accountant import RdpAccountant; a = RdpAccountant(); "
        f"a.compose(event_from_dict(json.loads({blob!r}))); print(a.get_epsilon({delta!r}))"
    )
    return "python -c " + shlex.quote(code)


def assert_epsilon_at_most(
    mechanism: Any, eps: float, delta: float, *, orders: Sequence[float] | None = None, shrink: bool = True
) -> float:
    """Assert that our certified epsilon of ``mechanism`` at ``delta`` is <= ``eps``; returns it.

    On failure the message gives the certified epsilon, the smallest sub-mechanism that still
    exceeds ``eps`` (fewest repetitions / components / schedule steps) and a ``python -c``
    command that recomputes its epsilon.
    """
    got = certified_epsilon_of(mechanism, delta, orders=orders)
    if got <= eps:
        return got

    def fails(m: Any) -> bool:
        return certified_epsilon_of(m, delta, orders=orders) > eps

    small = _shrink_mechanism(mechanism, fails) if shrink else mechanism
    small_eps = certified_epsilon_of(small, delta, orders=orders)
    raise _fail(
        [
            f"certified epsilon {got:.6g} > {eps:.6g} at delta={delta:.3g} for {mechanism!r}",
            f"minimal failing mechanism: {small!r} (certified epsilon {small_eps:.6g})",
            f"reproduce: {_event_command(small, delta)}",
        ]
    )


# ----------------------------------------------------------------------------------- audits


def assert_not_refuted_by_audit(
    *,
    algo: str,
    noise_multiplier: float,
    delta: float,
    eps: float,
    samples: int = 1000,
    confidence: float = 0.99,
    seed: int = 0,
    shrink: bool = True,
    **options: Any,
) -> Any:
    """Assert that the project's audit of ``algo`` at ``noise_multiplier`` does not prove the true
    epsilon above ``eps`` (the claimed epsilon). Returns the ``AuditResult``.

    A lower bound above ``eps`` is a refutation: the message gives it, the instance, and the
    ``dptheory audit`` command; with ``shrink`` the number of ``steps`` (or ``rounds``) is halved
    while the audit still refutes, and the smallest refuting case is reported (re-audited).
    """
    from dptheory.claims import audit, audit_command

    res = audit(
        algo=algo,
        noise_multiplier=noise_multiplier,
        delta=delta,
        samples=samples,
        confidence=confidence,
        seed=seed,
        **options,
    )
    if not res.epsilon_lower > eps:
        return res
    small, small_res = dict(options), res
    key = next((k for k in ("steps", "rounds") if isinstance(options.get(k), int)), None)
    if shrink and key is not None:
        for _ in range(12):
            if small[key] <= 1:
                break
            trial = {**small, key: max(1, small[key] // 2)}
            r = audit(
                algo=algo,
                noise_multiplier=noise_multiplier,
                delta=delta,
                samples=samples,
                confidence=confidence,
                seed=seed,
                **trial,
            )
            if not r.epsilon_lower > eps:
                break
            small, small_res = trial, r
    cmd = audit_command(
        algo=algo, noise_multiplier=noise_multiplier, delta=delta, samples=samples, seed=seed, **small
    )
    raise _fail(
        [
            f"refuted by audit: {algo} at noise multiplier {noise_multiplier:.6g} has epsilon >= "
            f"{res.epsilon_lower:.6g} > claimed {eps:.6g} (delta={delta:.3g}, confidence {confidence})",
            f"minimal refuting case: {small} (epsilon >= {small_res.epsilon_lower:.6g}; instance: "
            f"{small_res.instance})",
            f"reproduce: {cmd}",
        ]
    )


# ----------------------------------------------------------------------------------- bounds


def _callable_ref(fn: Callable[..., Any]) -> str | None:
    mod, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not mod or "<" in name or mod == "__main__":
        return None
    return f"{mod}.{name}"


def assert_bound_holds(
    lhs: Callable[..., float],
    rhs: Callable[..., float],
    domain: Any,
    *,
    vectorized: bool = False,
    samples: int = 512,
    maxiter: int = 20,
    seed: int = 0,
    extra_points: Sequence[Mapping[str, float]] = (),
) -> Any:
    """Assert ``lhs(**p) <= rhs(**p)`` for every point ``p`` of ``domain``
    (:class:`dptheory.claims.Domain`), searched adversarially (corners, probes, log-uniform
    samples, differential evolution). Returns the ``SearchResult``.

    On failure: the violating point shrunk to its shortest decimals (re-checked with ``lhs`` and
    ``rhs``), both sides there, what was searched, and a ``python -c`` command when ``lhs`` and
    ``rhs`` are importable module-level functions.
    """
    from verification.search import adversarial_search, pointwise
    from verification.shrink import shrink_point

    if vectorized:

        def ratio(pts: dict[str, np.ndarray]) -> np.ndarray:
            return np.asarray(lhs(**pts), dtype=float) / np.asarray(rhs(**pts), dtype=float)
    else:
        ratio = pointwise(lambda **p: float(lhs(**p)) / float(rhs(**p)))

    def sides(p: Mapping[str, float]) -> tuple[float, float]:
        if vectorized:
            arr = {k: np.array([v]) for k, v in p.items()}
            return float(np.asarray(lhs(**arr)).reshape(-1)[0]), float(np.asarray(rhs(**arr)).reshape(-1)[0])
        return float(lhs(**p)), float(rhs(**p))

    res = adversarial_search(
        domain, ratio, samples=samples, maxiter=maxiter, seed=seed, extra_points=tuple(extra_points)
    )
    cx = res.counterexample
    if cx is None:
        return res
    l0, r0 = sides(cx)
    if not l0 > r0:
        return res  # float noise in the ratio only
    small, _ = shrink_point(cx, domain, lambda p: (lambda a, b: a > b)(*sides(p)))
    ls, rs = sides(small)
    ref_l, ref_r = _callable_ref(lhs), _callable_ref(rhs)
    args = ", ".join(f"{k}={v!r}" for k, v in small.items())
    if ref_l and ref_r:
        ml, nl = ref_l.rsplit(".", 1)
        mr, nr = ref_r.rsplit(".", 1)
        code = f"from {ml} import {nl} as L; from {mr} import {nr} as R; print(L({args}), R({args}))"
        cmd = "python -c " + shlex.quote(code)
    else:
        cmd = f"lhs({args}) vs rhs({args})"
    raise _fail(
        [
            f"bound violated: lhs = {ls:.6g} > rhs = {rs:.6g} at {small} (ratio {ls / rs:.6g})",
            f"worst point found: {cx} (ratio {l0 / r0:.6g}); searched: {res.summary()}",
            f"reproduce: {cmd}",
        ]
    )


# ------------------------------------------------------------------------------ convergence


def assert_converges_to(
    optimizer: str,
    problem: Any,
    point: Any,
    tol: float,
    *,
    steps: int | None = None,
    seeds: int = 1,
    seed: int = 0,
    problem_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> Any:
    """Assert that ``optimizer`` (a ``dptheory run --algo`` name) run on ``problem`` (a toy-problem
    name or a :class:`dptheory.testing.strategies.ToyProblem`) ends within ``tol`` (Euclidean) of
    ``point``: an array, ``"optimum"`` or ``"fixed_point"`` (the clipped method's exact fixed
    point). Every seed ``seed .. seed+seeds-1`` must. Returns the ``RunResult``.

    On failure: each seed's distance, the first failing seed, and a ``python -c`` command that
    re-runs that seed alone.
    """
    from dptheory.claims import toy_run

    if hasattr(problem, "name") and hasattr(problem, "options"):
        popts = {**dict(problem.options), **dict(problem_options or {})}
        if "seed" not in popts and problem.name in ("stochastic-quadratic", "quadratic", "logreg-nonconvex"):
            popts["seed"] = problem.seed
        name = problem.name
    else:
        name, popts = str(problem), dict(problem_options or {})

    def distances(n_steps: int | None, first: int, count: int) -> tuple[Any, list[float]]:
        run = toy_run(
            optimizer, name, problem_options=popts, steps=n_steps, seeds=count, seed=first, **options
        )
        if isinstance(point, str) and point == "fixed_point" and run.fixed_point is not None:
            # the fixed set may be an interval (clip21-example1): distance to the set
            return run, [float(run.fixed_point.distance(r.x)) for r in run.runs]
        target = _target(run, point)
        return run, [
            float(np.linalg.norm(np.asarray(r.x, dtype=float).reshape(-1) - target)) for r in run.runs
        ]

    run, dist = distances(steps, seed, seeds)
    bad = [seed + i for i, d in enumerate(dist) if not d <= tol]
    if not bad:
        return run
    # the smallest failing case is one seed: the first that misses (fewer steps would only be a
    # weaker run, not a smaller counterexample)
    first_bad = bad[0]
    n = run.settings.steps
    d_small = dist[first_bad - seed]
    call = (
        "from dptheory.claims import toy_run; "
        f"r = toy_run({optimizer!r}, {name!r}, problem_options={popts!r}, "
        f"steps={n}, seed={first_bad}" + "".join(f", {k}={v!r}" for k, v in options.items()) + "); "
        "print(r.runs[0].x, r.summary()['dist_to_fixed_point'])"
    )
    cmd = "python -c " + shlex.quote(call)
    raise _fail(
        [
            f"{optimizer} on {name} does not converge to {point if isinstance(point, str) else 'the point'} "
            f"within {tol:.3g}: distances {[round(x, 6) for x in dist]} (seeds {seed}..{seed + seeds - 1})",
            f"minimal failing run: seed {first_bad}, {n} steps, distance {d_small:.6g}",
            f"reproduce: {cmd}",
        ]
    )


def _target(run: Any, point: Any) -> np.ndarray:
    if isinstance(point, str):
        if point == "optimum":
            return np.asarray(run.optimum, dtype=float).reshape(-1)
        if point == "fixed_point":
            if run.fixed_point is None:
                raise ValueError("this algorithm/problem has no computed fixed point")
            return np.asarray(run.fixed_point.point, dtype=float).reshape(-1)
        raise ValueError(f"point must be an array, 'optimum' or 'fixed_point' (got {point!r})")
    return np.asarray(point, dtype=float).reshape(-1)


__all__ = [
    "assert_epsilon_at_most",
    "assert_not_refuted_by_audit",
    "assert_bound_holds",
    "assert_converges_to",
    "certified_epsilon_of",
]
