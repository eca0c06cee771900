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
