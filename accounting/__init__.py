"""dptheory's accountant: RDP -> (epsilon, delta) for static, decaying-schedule,
error-feedback hidden-state and local-DP mechanisms, and noise calibration.

Depends on numpy and scipy only (dp-accounting is imported lazily for interop).
"""

from accounting.errors import InvalidParameter, NotCertified, UnreachableTarget

__all__ = ["InvalidParameter", "NotCertified", "UnreachableTarget"]
