"""Property-based testing for differential-privacy code: hypothesis strategies, assertions that
fail with a shrunk counterexample and a reproduce command, and a pytest plugin.

* :mod:`dptheory.testing.strategies` -- DP parameters over the documented envelope, noise
  schedules, mechanism events, per-example gradient sets with a norm bound, toy problems;
* :mod:`dptheory.testing.assertions` -- :func:`assert_epsilon_at_most`,
  :func:`assert_not_refuted_by_audit`, :func:`assert_bound_holds`, :func:`assert_converges_to`;
* :mod:`dptheory.testing.counterexamples` -- the known counterexamples of the three papers, as
  data and as ``hypothesis.example`` decorators;
* :mod:`dptheory.testing.plugin` -- ``--dptheory-profile quick|full`` and the
  ``dptheory_problem`` fixture (entry point ``pytest11``).

Nothing here is imported by ``import dptheory``; this package imports hypothesis only when a
name that needs it is first used (module ``__getattr__``).
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "assert_epsilon_at_most": "dptheory.testing.assertions",
    "assert_not_refuted_by_audit": "dptheory.testing.assertions",
    "assert_bound_holds": "dptheory.testing.assertions",
    "assert_converges_to": "dptheory.testing.assertions",
    "certified_epsilon_of": "dptheory.testing.assertions",
    "ENVELOPE": "dptheory.testing.strategies",
    "DpParams": "dptheory.testing.strategies",
    "ToyProblem": "dptheory.testing.strategies",
    "log_uniform": "dptheory.testing.strategies",
    "sample_rates": "dptheory.testing.strategies",
    "steps": "dptheory.testing.strategies",
    "deltas": "dptheory.testing.strategies",
    "noise_multipliers": "dptheory.testing.strategies",
    "epsilons": "dptheory.testing.strategies",
    "orders": "dptheory.testing.strategies",
    "dp_params": "dptheory.testing.strategies",
    "noise_schedules": "dptheory.testing.strategies",
    "mechanism_events": "dptheory.testing.strategies",
    "gradient_sets": "dptheory.testing.strategies",
    "toy_problems": "dptheory.testing.strategies",
    "KNOWN_COUNTEREXAMPLES": "dptheory.testing.counterexamples",
    "known_counterexample": "dptheory.testing.counterexamples",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dptheory.testing' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
