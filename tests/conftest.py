"""Shared test configuration: a hypothesis profile that suits a 2-core CI machine."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "dptheory",
    deadline=None,
    max_examples=30,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("dptheory")


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def quick_results():
    """Every registered claim run once in quick mode (seed 0), as ``{id: ClaimResult}``.

    The quick run of all claims is the suite's single largest cost; the tests that pin verdicts, check
    evidence or replay a refutation's verdict share this one run instead of repeating it. It goes
    through :func:`verification.engine.run_claims`, the same function ``dptheory verify`` calls, so
    premises (``depends_on``) get their verdicts exactly as on the command line.
    """
    from verification import registry
    from verification.engine import run_claims

    results = run_claims(list(registry.CLAIMS.values()), seed=0, quick=True, progress=False)
    return {r.claim.id: r for r in results}
