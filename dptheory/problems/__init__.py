"""Toy problems with known answers (torch imported here; never at ``import dptheory``).

Names are stable (scripts depend on them): see :data:`PROBLEMS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accounting.errors import InvalidParameter
from dptheory.problems.base import FixedPoint, Problem

PROBLEM_NAMES = ("dicesgd-b1", "clip21-example1", "stochastic-quadratic", "quadratic", "logreg-nonconvex")
# problems used as counterexamples: full batch (sample rate 1) by default
COUNTEREXAMPLES = ("dicesgd-b1", "clip21-example1")


def _builder(name: str) -> Callable[..., Problem]:
    if name == "dicesgd-b1":
        from dptheory.problems.dicesgd_b1 import build
    elif name == "clip21-example1":
        from dptheory.problems.clip21_example1 import build
    elif name == "stochastic-quadratic":
        from dptheory.problems.stochastic_quadratic import build
    elif name == "quadratic":
        from dptheory.problems.quadratic import build
    elif name == "logreg-nonconvex":
        from dptheory.problems.logreg import build
    else:
        raise InvalidParameter("--problem", f"must be one of {', '.join(PROBLEM_NAMES)} (got {name!r})")
    return build


def get_problem(name: str, **options: Any) -> Problem:
    """Build problem ``name``; options not accepted by that problem are ignored (None = default)."""
    import inspect

    build = _builder(name)
    accepted = inspect.signature(build).parameters
    kw = {k: v for k, v in options.items() if k in accepted and v is not None}
    return build(**kw)


__all__ = ["PROBLEM_NAMES", "COUNTEREXAMPLES", "Problem", "FixedPoint", "get_problem"]
