"""dptheory's accountant: RDP -> (epsilon, delta) for static, decaying-schedule,
error-feedback hidden-state and local-DP mechanisms, and noise calibration.

Depends on numpy and scipy only (dp-accounting is imported lazily for interop). The stable names
are exported here, as ``dp_accounting`` exports its own; everything else in the submodules is
internal (docs/api.md). They load on first use (module ``__getattr__``), so ``import accounting``
stays as cheap as importing its errors and the command line's start-up does not grow.
"""

from __future__ import annotations

from typing import Any

from accounting.errors import InvalidParameter, NotCertified, UnreachableTarget

__all__ = [
    # stateful accountant
    "RdpAccountant",
    # mechanisms (immutable events that compose)
    "Mechanism",
    "GaussianEvent",
    "SubsampledGaussianEvent",
    "ScheduleEvent",
    "SelfComposedEvent",
    "ComposedEvent",
    "RdpCurveEvent",
    "RdpCurve",
    "event_to_dict",
    "event_from_dict",
    # RDP -> (epsilon, delta)
    "rdp_to_epsilon",
    "rdp_to_delta",
    "EpsilonResult",
    "DEFAULT_ORDERS",
    # noise schedules
    "SCHEDULES",
    "noise_multipliers",
    # calibration helpers
    "CalibrationResult",
    "calibrate_decreasing",
    "calibrate_increasing",
    "calibrate_steps",
    # errors
    "InvalidParameter",
    "NotCertified",
    "UnreachableTarget",
]

_LAZY = {
    "RdpAccountant": "accounting.accountant",
    **dict.fromkeys(
        (
            "Mechanism",
            "GaussianEvent",
            "SubsampledGaussianEvent",
            "ScheduleEvent",
            "SelfComposedEvent",
            "ComposedEvent",
            "RdpCurveEvent",
            "event_to_dict",
            "event_from_dict",
        ),
        "accounting.events",
    ),
    "RdpCurve": "accounting.rdp_curve",
    **dict.fromkeys(("rdp_to_epsilon", "rdp_to_delta", "EpsilonResult"), "accounting.conversion"),
    "DEFAULT_ORDERS": "accounting.orders",
    **dict.fromkeys(("SCHEDULES", "noise_multipliers"), "accounting.schedules"),
    **dict.fromkeys(
        ("CalibrationResult", "calibrate_decreasing", "calibrate_increasing", "calibrate_steps"),
        "accounting.calibration",
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'accounting' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
