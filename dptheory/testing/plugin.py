"""pytest plugin of dptheory (entry point ``pytest11``; or ``-p dptheory.testing.plugin``).

* ``--dptheory-profile quick|full``: loads the hypothesis settings profile ``dptheory-quick``
  (30 examples, no deadline) or ``dptheory-full`` (300 examples, no deadline). Without the option
  nothing is changed, so a suite's own hypothesis profile is left alone.
* fixtures: ``dptheory_profile`` (the chosen profile name, "quick" by default), ``dptheory_seed``
  (``--dptheory-seed``, default 0) and ``dptheory_problem``: a factory
  ``dptheory_problem(name="stochastic-quadratic", **options)`` that builds a toy problem with
  torch, numpy and the problem's data seeded from ``dptheory_seed``.
* the papers' known counterexamples: ``from dptheory.testing.plugin import known_counterexample``
  (a ``hypothesis.example`` decorator), and the fixture ``dptheory_counterexamples``.

Importing this module imports neither hypothesis nor torch: a suite that never asks for them
does not need them installed.
"""

from __future__ import annotations

from typing import Any

import pytest

from dptheory.testing.counterexamples import KNOWN_COUNTEREXAMPLES, known_counterexample

PROFILES = {"quick": 30, "full": 300}

__all__ = ["KNOWN_COUNTEREXAMPLES", "known_counterexample", "PROFILES"]


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("dptheory")
    group.addoption(
        "--dptheory-profile",
        choices=tuple(PROFILES),
        default=None,
        help="hypothesis profile for property tests: quick (30 examples) or full (300); default: "
        "leave the suite's own settings",
    )
    group.addoption(
        "--dptheory-seed", type=int, default=0, help="seed of the dptheory_problem fixture (default 0)"
    )


def pytest_configure(config: Any) -> None:
    name = config.getoption("--dptheory-profile", default=None)
    if name is None:
        return
    from hypothesis import HealthCheck, settings

    for prof, n in PROFILES.items():
        settings.register_profile(
            f"dptheory-{prof}",
            max_examples=n,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
    settings.load_profile(f"dptheory-{name}")


def pytest_report_header(config: Any) -> str | None:
    name = config.getoption("--dptheory-profile", default=None)
    return (
        None if name is None else f"dptheory: hypothesis profile dptheory-{name} ({PROFILES[name]} examples)"
    )


@pytest.fixture
def dptheory_profile(request: Any) -> str:
    """The profile asked for with ``--dptheory-profile`` ("quick" when none was)."""
    return request.config.getoption("--dptheory-profile") or "quick"


@pytest.fixture
def dptheory_seed(request: Any) -> int:
    return int(request.config.getoption("--dptheory-seed"))


@pytest.fixture
def dptheory_problem(dptheory_seed: int) -> Any:
    """Factory: ``dptheory_problem(name="stochastic-quadratic", **options)`` -> a seeded toy
    ``Problem`` (torch, numpy's global generator and the problem's own data seed all set)."""

    def make(name: str = "stochastic-quadratic", **options: Any) -> Any:
        import numpy as np

        from dptheory.testing.strategies import ToyProblem

        np.random.seed(dptheory_seed)
        return ToyProblem(name, options, dptheory_seed).build()

    return make


@pytest.fixture
def dptheory_counterexamples() -> dict:
    """The papers' known counterexamples (``Counterexample`` by claim id)."""
    return dict(KNOWN_COUNTEREXAMPLES)
