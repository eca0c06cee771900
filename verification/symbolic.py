"""Symbolic helpers (sympy, imported lazily inside every function).

* :func:`equal_after_substitution` -- substitute stated choices into a bound and test that the
  difference to the stated right-hand side simplifies to zero, then spot-check it numerically.
* :func:`inhomogeneous_terms` -- dimensional analysis: give every symbol a unit (a dict of base
  dimensions to exponents) and report sums, min/max and transcendental functions whose
  arguments mix units.
* :func:`leading_rate` -- the dominant term of an expression as a variable tends to infinity.
"""

from __future__ import annotations

import random
from typing import Any

Unit = dict[str, Any]  # base dimension -> exponent (sympy Rational or int)


def equal_after_substitution(lhs: Any, rhs: Any, symbols: list[Any], *, seed: int, cases: int = 20) -> dict:
    """Is lhs == rhs identically? Returns the simplified difference and a numeric spot check."""
    import sympy as sp

    diff = sp.simplify(sp.powsimp(sp.expand_power_base(lhs - rhs, force=True), force=True))
    rng = random.Random(seed)
    worst = 0.0
    for _ in range(cases):
        subs = {s: sp.Float(rng.uniform(0.1, 10.0)) for s in symbols}
        lv, rv = float(lhs.subs(subs)), float(rhs.subs(subs))
        worst = max(worst, abs(lv - rv) / max(abs(rv), 1e-300))
    return {
        "difference": str(diff),
        "symbolic_zero": bool(diff == 0),
        "numeric_cases": cases,
        "max_relative_error": worst,
    }


def _unit_of(expr: Any, units: dict[Any, Unit], problems: list[str]) -> Unit:
    import sympy as sp

    def mul(u: Unit, v: Unit, k: Any = 1) -> Unit:
        out = dict(u)
        for b, e in v.items():
            out[b] = sp.nsimplify(out.get(b, 0) + k * e)
        return {b: e for b, e in out.items() if e != 0}

    if expr.is_Number or expr in (sp.pi, sp.E):
        return {}
    if expr.is_Symbol:
        return dict(units.get(expr, {}))
    if expr.is_Mul:
        u: Unit = {}
        for a in expr.args:
            u = mul(u, _unit_of(a, units, problems))
        return u
    if expr.is_Pow:
        base_u = _unit_of(expr.args[0], units, problems)
        exp = expr.args[1]
        if _unit_of(exp, units, problems):
            problems.append(f"exponent with units: {sp.sstr(expr)}")
        if not exp.is_Number and base_u:
            problems.append(f"non-numeric power of a dimensional quantity: {sp.sstr(expr)}")
            return {}
        return {b: sp.nsimplify(e * exp) for b, e in base_u.items()} if base_u else {}
    if expr.is_Add or isinstance(expr, (sp.Min, sp.Max)):
        term_units = [(_unit_of(a, units, problems), a) for a in expr.args]
        first = term_units[0][0]
        for u, a in term_units[1:]:
            if u != first:
                kind = "sum" if expr.is_Add else type(expr).__name__
                problems.append(
                    f"{kind} mixes units: {sp.sstr(term_units[0][1])} [{_fmt(first)}] vs "
                    f"{sp.sstr(a)} [{_fmt(u)}] in {sp.sstr(expr)}"
                )
                break
        return first
    if isinstance(expr, (sp.log, sp.exp)) or (expr.is_Function and expr.args):
        for a in expr.args:
            u = _unit_of(a, units, problems)
            if u:
                problems.append(
                    f"{type(expr).__name__} of a dimensional argument: {sp.sstr(expr)} [{_fmt(u)}]"
                )
        return {}
    if isinstance(expr, sp.core.relational.Relational):
        lu, ru = _unit_of(expr.lhs, units, problems), _unit_of(expr.rhs, units, problems)
        if lu != ru:
            problems.append(
                f"relation between different units: [{_fmt(lu)}] vs [{_fmt(ru)}] in {sp.sstr(expr)}"
            )
        return lu
    problems.append(f"unhandled node {type(expr).__name__}: {sp.sstr(expr)}")
    return {}


def _fmt(u: Unit) -> str:
    return "·".join(f"{b}^{e}" for b, e in sorted(u.items())) or "1"


def inhomogeneous_terms(expr: Any, units: dict[Any, Unit]) -> tuple[str, list[str]]:
    """(unit of expr, list of problems). Symbols missing from ``units`` are dimensionless."""
    problems: list[str] = []
    u = _unit_of(expr, units, problems)
    return _fmt(u), problems


def leading_rate(expr: Any, var: Any, candidates: list[Any]) -> dict:
    """Which candidate rate r(var) satisfies 0 < lim expr/r < oo as var -> oo.

    Returns the limits for every candidate so the evidence shows the whole comparison.
    """
    import sympy as sp

    out = {}
    match = None
    for cand in candidates:
        lim = sp.limit(sp.simplify(expr / cand), var, sp.oo)
        out[sp.sstr(cand)] = sp.sstr(lim)
        if match is None and lim.is_finite and lim.is_positive:
            match = cand
    return {"limits": out, "matching_rate": sp.sstr(match) if match is not None else None}
