"""dptheory inside Opacus: accountant, calibration, DiceSGD / D2P2-SGD optimizers, setup lint.

Install with ``pip install -e ".[opacus]"``. This module imports torch and opacus; ``import dptheory``
does not import it.

Accountant
    :class:`DptheoryAccountant` implements Opacus's ``IAccountant`` (``step``, ``get_epsilon``,
    ``__len__``, ``mechanism``, ``state_dict`` / ``load_state_dict``) on top of
    :class:`accounting.accountant.RdpAccountant`: ``privacy_engine.accountant = DptheoryAccountant()``.
    Importing this package registers its mechanism name :data:`MECHANISM` in Opacus's accountant
    registry, so that Opacus's own ``make_private_with_epsilon`` (which rebuilds an accountant from
    ``accountant.mechanism()``) works with the swapped accountant too.

    *How it differs from Opacus's* ``RDPAccountant`` (``accountant="rdp"``). Both evaluate the
    Poisson-subsampled Gaussian RDP of Mironov et al. (2019) and convert with Balle et al. (2020,
    Thm 21), ``eps = rdp - (log delta + log a)/(a - 1) + log((a - 1)/a)``.

    * Integer orders: both compute the same finite binomial sum, exactly; per-order RDP and the
      epsilon on an integer grid agree to ~1e-12 relative (tested to 1e-9).
    * Fractional orders: Opacus sums Mironov's *signed* two-sided series and stops with a heuristic
      rule (no remainder bound). dptheory, like dp-accounting, sums the terms' absolute values and
      bounds the truncation rigorously (:mod:`accounting.rdp`): a certified upper bound, larger
      where the signed terms cancel, i.e. at small noise. At z = 0.5, q = 0.2, order 1.1 it is 6%
      larger per order (Opacus's value equals 40-digit quadrature there); at z = 1.1, q = 0.01,
      T = 1000, 4e-8 relative on epsilon. So ours can exceed Opacus's number only when Opacus's
      optimum is a fractional order, and only by this gap: the price of a certified bound, not a
      different mechanism (tests/integrations/test_opacus_integration.py checks both sides against
      quadrature).
    * Order grid: ours is :data:`accounting.orders.DEFAULT_ORDERS`, a strict superset of Opacus's
      ``DEFAULT_ALPHAS`` (1.1..10.9 and 12..63) that adds 11 and large orders up to 2048; with an
      integer optimum ours is never larger, and smaller when the optimum lies above 63 (small
      noise, large epsilon). ``DptheoryAccountant(orders=...)`` takes any grid.
    * Conversion: dp-accounting's version of the same theorem, which also returns 0 when
      ``delta^2 + e^-rdp > 1`` and never a negative epsilon (Opacus's formula goes below zero
      when delta > 1/a, a meaningless value); orders <= 1.01 are skipped.
    * ``__len__`` is the number of steps (Opacus's ``RDPAccountant`` returns the number of distinct
      (noise, rate) entries of its history).

Calibration
    :meth:`DptheoryPrivacyEngine.make_private_with_epsilon` (and the function
    :func:`make_private_with_epsilon` for any ``PrivacyEngine``) calibrates with
    :func:`dptheory.calibrate` (Brent on log z; the result always satisfies the target) instead of
    Opacus's bisection (Opacus issue #566), and returns what Opacus returns: ``(module, optimizer,
    data_loader)``; ``optimizer.noise_multiplier`` is the multiplier used and
    ``optimizer.privacy_report`` the certified report.

Optimizers
    :class:`DiceSGDOptimizer` and :class:`D2P2Optimizer` subclass Opacus's ``DPOptimizer`` and read
    the per-sample gradients that ``GradSampleModule`` stores in ``p.grad_sample``. Use them with
    ``DptheoryPrivacyEngine().make_private(..., dp_optimizer="dicesgd" | "d2p2sgd" | "d2psgd")``
    (the documented equivalent of passing an optimizer class: Opacus's own ``make_private`` always
    builds a plain ``DPOptimizer``). Each one is accounted by dptheory's *certified* accountant for
    its mechanism (DiceSGD: the hidden-state bound of :mod:`accounting.hidden_state`; D2P2: the
    projection-sensitivity bound of :mod:`accounting.projection`), never by DP-SGD accounting: they
    refuse any step hook that is not a :class:`DptheoryAccountant`'s.

Lint
    :func:`lint_setup` checks a setup against the accountant's assumptions (Poisson sampling, the
    noise scale the calibration certified, gradient accumulation, samplers that change the rate);
    :class:`DptheoryPrivacyEngine` runs it inside ``make_private``.
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
