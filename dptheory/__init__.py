"""dptheory: how much noise does a private optimizer need, and how private is it really?

The stable Python API lives here; it stays light (no torch, sympy or matplotlib at import).
``calibrate``, ``epsilon``, ``compare`` (claimed, certified and audit side by side), ``audit``
(``accounting.audit.run_audit``), ``PrivacyReport``,
``AuditResult``, ``RdpAccountant`` (the stateful accountant for trainers) and the errors a caller
catches (``InvalidParameter``, a ValueError, and its subclasses ``UnreachableTarget`` and
``NotCertified``) are loaded on first use (module ``__getattr__``), so ``import dptheory`` costs
nothing until they are needed. Mechanism events and conversions are exported by ``accounting``.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "calibrate",
    "epsilon",
    "compare",
    "audit",
    "PrivacyReport",
    "AuditResult",
    "RdpAccountant",
    "InvalidParameter",
    "UnreachableTarget",
    "NotCertified",
]

_LAZY = {
    "calibrate": ("dptheory.api", "calibrate"),
    "epsilon": ("dptheory.api", "epsilon"),
    "compare": ("dptheory.api", "compare"),
    "PrivacyReport": ("accounting.algorithms.base", "PrivacyReport"),
    "RdpAccountant": ("accounting.accountant", "RdpAccountant"),
    "audit": ("accounting.audit", "run_audit"),
    "AuditResult": ("accounting.audit.result", "AuditResult"),
    "InvalidParameter": ("accounting.errors", "InvalidParameter"),
    "UnreachableTarget": ("accounting.errors", "UnreachableTarget"),
    "NotCertified": ("accounting.errors", "NotCertified"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dptheory' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
