"""dptheory inside Opacus: accountant, calibration, DiceSGD / D2P2-SGD optimizers, setup lint.

Install with ``pip install -e ".[opacus]"``. This module imports torch and opacus; ``import dptheory``
does not import it.

* :class:`DptheoryAccountant`: Opacus's ``IAccountant`` on :class:`accounting.accountant.RdpAccountant`
  (``privacy_engine.accountant = DptheoryAccountant()``); importing this package registers
  :data:`MECHANISM` in Opacus's accountant registry.  It differs from Opacus's ``RDPAccountant``
  only where a certified bound must: fractional orders are summed in absolute value with a
  rigorous truncation bound, the order grid is a superset, the conversion never goes negative.
* :meth:`DptheoryPrivacyEngine.make_private_with_epsilon` / :func:`make_private_with_epsilon`
  calibrate with :func:`dptheory.calibrate` (the result always meets the target).
* :class:`DiceSGDOptimizer` and :class:`D2P2Optimizer` subclass ``DPOptimizer``; each is accounted
  by its certified bound, never by DP-SGD accounting.
* :func:`lint_setup` checks a setup against the accountant's assumptions.

The differences from Opacus with their measured sizes, and each part in full: ``docs/opacus.md``,
"The package in full".
"""

from __future__ import annotations

try:  # one clear message when the extra is missing (every submodule imports these)
    import torch  # noqa: F401
    from opacus import PrivacyEngine  # noqa: F401
    from opacus.accountants.accountant import IAccountant  # noqa: F401
    from opacus.optimizers import DPOptimizer  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"dptheory.integrations.opacus needs opacus and torch ({exc}); install the extra: "
        'pip install -e ".[opacus]"'
    ) from exc

# Package layout (one job per module): accountant (Opacus IAccountant), d2p2_accounting (certified
# D2P2 epsilon and calibration), optimizers (DiceSGD / D2P2-SGD), lint (setup checks), engine
# (DptheoryPrivacyEngine). Their public names are re-exported here, the one import path for users.
from .accountant import MECHANISM as MECHANISM
from .accountant import DptheoryAccountant
from .d2p2_accounting import D2P2Calibration as D2P2Calibration
from .d2p2_accounting import calibrate_d2p2 as calibrate_d2p2
from .d2p2_accounting import d2p2_certified_epsilon, d2p2_layers
from .engine import DP_OPTIMIZERS, DptheoryPrivacyEngine, make_private_with_epsilon
from .lint import SetupError, SetupIssue, SetupWarning, lint_setup
from .optimizers import D2P2Optimizer, DiceSGDOptimizer
from .optimizers import residual_clip_as_grad_bound as residual_clip_as_grad_bound

__all__ = [
    "MECHANISM",
    "DptheoryAccountant",
    "DptheoryPrivacyEngine",
    "DiceSGDOptimizer",
    "D2P2Optimizer",
    "DP_OPTIMIZERS",
    "make_private_with_epsilon",
    "d2p2_layers",
    "d2p2_certified_epsilon",
    "lint_setup",
    "SetupIssue",
    "SetupError",
    "SetupWarning",
]
