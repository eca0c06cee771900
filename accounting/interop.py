"""Bridges to Google's dp-accounting: export events, PLD epsilon, and an RDP cross-check.

dp-accounting is imported lazily (inside the functions) so that ``import accounting`` stays
numpy/scipy only. All calls use add/remove-one adjacency, the convention of this package.

* :func:`pld_epsilon` is the ``--accountant pld`` path. By default it is dp-accounting's
  ``PLDAccountant``, whose PLDs are built with ``pessimistic_estimate=True``: the discretised
  privacy loss is rounded *up* and truncated upper-tail mass is moved to infinite loss, so
  the reported epsilon is an upper bound on the true epsilon of the mechanism (dp-accounting
  ``pld_pmf._truncate_tails``). ``pessimistic=False`` rounds down and drops/lowers truncated
  mass instead, giving a *lower* estimate that is only meant for sandwich tests (the true
  epsilon lies between the two).
* :func:`dp_accounting_rdp_epsilon` runs dp-accounting's own ``RdpAccountant`` on the
  exported event: an independent implementation of the same RDP bound, used to check ours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter

__all__ = [
    "DEFAULT_VALUE_DISCRETIZATION_INTERVAL",
    "to_dp_event",
    "pld_epsilon",
    "dp_accounting_rdp_epsilon",
]

#: Absolute error allowed for in dp-accounting's delta(eps). Its composed PMFs are floats: each
#: composition moves up to 1e-15 of truncated tail mass to infinite loss, and FFT rounding errors of
#: about 1e-15 can even leave the computed infinite-loss mass negative (-5e-15 at q = 1e-3, z = 31,
#: T = 1e4), after which delta(eps) never reaches its floor and a finite epsilon comes back at
#: delta = 1e-100 (0.13 at q = 1e-3, z = 5.66, T = 1e4, where the RDP bound is 0.64). The
#: pessimistic epsilon is therefore read at ``delta - PLD_DELTA_SLACK`` (at least 20x the largest
#: error seen) and is inf when delta is no larger.
PLD_DELTA_SLACK = 1e-13

#: Grid step of the privacy-loss discretisation (dp-accounting's own default). The
#: pessimistic estimate overstates epsilon by at most about this much per composition
#: *before* composition effects; smaller is tighter but slower (cost ~ 1/interval).
DEFAULT_VALUE_DISCRETIZATION_INTERVAL = 1e-4


def _dp_accounting(purpose: str) -> Any:
    try:
        import dp_accounting
    except ImportError as err:  # pragma: no cover - dp-accounting is a declared dependency
        raise InvalidParameter(
            "--accountant",
            f"{purpose} needs dp-accounting (pip install dp-accounting); it could not be imported: {err}",
        ) from None
    return dp_accounting


def to_dp_event(event: Any) -> Any:
    """The dp-accounting ``DpEvent`` equivalent to ``event``.

    Raises ``NotImplementedError`` (with the reason) when dp-accounting cannot express it.
    """
    _dp_accounting("exporting to a DpEvent")
    to = getattr(event, "to_dp_event", None)
    if to is None:
        raise NotImplementedError(f"{type(event).__name__} has no dp-accounting equivalent")
    return to()


def _export(event: Any, purpose: str) -> Any:
    _dp_accounting(purpose)
    try:
        return to_dp_event(event)
    except NotImplementedError as err:
        raise InvalidParameter("--accountant", f"{purpose} does not support this mechanism: {err}") from None


def pld_epsilon(
    event: Any,
    delta: float,
    *,
    value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION_INTERVAL,
    pessimistic: bool = True,
) -> float:
    """Epsilon at ``delta`` from dp-accounting's privacy-loss-distribution (PLD) accountant.

    ``pessimistic=True`` (default) is dp-accounting's ``PLDAccountant`` read at
    ``delta - PLD_DELTA_SLACK`` (inf at or below it), an upper bound (see module docstring).
    ``pessimistic=False`` is an optimistic estimate (a lower bound up to truncation), available
    only for Gaussian / Poisson-subsampled Gaussian events and their compositions; never report it
    as a guarantee.
    """
    delta = validate.open_unit("--delta", delta)
    vdi = validate.positive("--value-discretization-interval", value_discretization_interval)
    dpa = _dp_accounting("--accountant pld")
    dp_event = _export(event, "--accountant pld")
    from accounting.pld_cost import check_pld_cost

    if pessimistic and delta <= PLD_DELTA_SLACK:
        return math.inf  # below dp-accounting's floating-point resolution: sound, and no grid built
    check_pld_cost(event, vdi)  # its grid grows with T and 1/z: refuse before allocating it
    if pessimistic:
        from dp_accounting.pld import pld_privacy_accountant

        acc = pld_privacy_accountant.PLDAccountant(
            neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
            value_discretization_interval=vdi,
        )
        if not acc.supports(dp_event):
            raise InvalidParameter(
                "--accountant", "pld: dp-accounting's PLD accountant does not support this mechanism"
            )
        import warnings

        try:
            with warnings.catch_warnings():  # its overflow warnings would precede our one line
                warnings.simplefilter("ignore", RuntimeWarning)
                return float(acc.compose(dp_event).get_epsilon(delta - PLD_DELTA_SLACK))
        except (OverflowError, FloatingPointError, ZeroDivisionError, MemoryError) as exc:
            # dp-accounting's own arithmetic failing at an extreme (e.g. an infinite epsilon bound
            # in its discretisation): one line, never a traceback, never a number
            raise InvalidParameter(
                "--accountant", f"pld: dp-accounting failed here ({type(exc).__name__}); use --accountant rdp"
            ) from None
    pld = _optimistic_pld(dpa, dp_event, 1, vdi)
    if pld is None:
        return 0.0
    return float(pld.get_epsilon_for_delta(delta))


def _optimistic_pld(dpa: Any, ev: Any, count: int, vdi: float) -> Any:
    """PLD of ``ev`` composed ``count`` times with downward rounding (None = no privacy loss)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    if isinstance(ev, dpa.SelfComposedDpEvent):
        return _optimistic_pld(dpa, ev.event, ev.count * count, vdi)
    if isinstance(ev, dpa.ComposedDpEvent):
        total = None
        for e in ev.events:
            p = _optimistic_pld(dpa, e, count, vdi)
            total = p if total is None else (total if p is None else total.compose(p))
        return total
    if isinstance(ev, dpa.GaussianDpEvent):
        # k-fold composition of N(0, s^2) Gaussians == one Gaussian with std s / sqrt(k).
        return pld_lib.from_gaussian_mechanism(
            standard_deviation=ev.noise_multiplier / math.sqrt(count),
            pessimistic_estimate=False,
            value_discretization_interval=vdi,
        )
    if isinstance(ev, dpa.PoissonSampledDpEvent) and isinstance(ev.event, dpa.GaussianDpEvent):
        single = pld_lib.from_gaussian_mechanism(
            standard_deviation=ev.event.noise_multiplier,
            sampling_prob=ev.sampling_probability,
            pessimistic_estimate=False,
            value_discretization_interval=vdi,
        )
        return single.self_compose(count) if count > 1 else single
    raise InvalidParameter("--accountant", f"optimistic PLD: unsupported event {type(ev).__name__}")


def dp_accounting_rdp_epsilon(
    event: Any, delta: float, orders: Sequence[float] | np.ndarray | None = None
) -> float:
    """Epsilon at ``delta`` from dp-accounting's ``RdpAccountant`` on the exported event.

    ``orders=None`` uses dp-accounting's default grid. This is a cross-check, not our
    accountant: it uses dp-accounting's conversion (the improved bound with KL fallback).
    """
    delta = validate.open_unit("--delta", delta)
    dpa = _dp_accounting("the dp-accounting RDP cross-check")
    dp_event = _export(event, "the dp-accounting RDP cross-check")
    acc = dpa.rdp.RdpAccountant(
        orders=None if orders is None else [float(o) for o in np.asarray(orders, dtype=float)],
        neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
    )
    return float(acc.compose(dp_event).get_epsilon(delta))
