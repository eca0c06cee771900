"""A stateful RDP accountant for training loops, with checkpointable state.

Usage in a trainer::

    acc = RdpAccountant()
    for batch in loader:
        ...
        acc.step(noise_multiplier=z, sample_rate=q)
    eps = acc.get_epsilon(delta=1e-5)

Design:

* The history is a list of immutable events (:mod:`accounting.events`). Consecutive
  identical ``step`` calls are merged into one :class:`SelfComposedEvent`, so a static run of
  T steps is one history entry, not T.
* ``step`` only records ``(q, sigma) -> count``; the pending steps are evaluated together, in
  one vectorised call over all distinct steps, when a result is asked for (2000 distinct
  steps: ~0.8 ms each amortised, against ~22 ms one by one).  The composed curve is kept as a
  running total, and the (epsilon, delta) conversion is memoised per (delta, method).
* ``state_dict()`` stores both the history and the running total, so a restored accountant
  reproduces ``get_epsilon`` bit for bit; ``load_state_dict`` re-derives the total from the
  history (its steps in one vectorised call: ~1.6 s for 2000 distinct steps) and refuses a
  checkpoint whose stored total disagrees (corrupt or edited state).
* ``compose`` accepts any object with ``rdp(orders) -> RdpCurve`` (e.g. a DiceSGD hidden-state
  step) and a bare :class:`RdpCurve`; objects that are not this package's events are stored
  as their RDP curve on the accountant's grid, which is what keeps the state serialisable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from accounting import validate
from accounting.conversion import EpsilonResult, rdp_to_epsilon
from accounting.errors import InvalidParameter
from accounting.events import (
    ComposedEvent,
    GaussianEvent,
    RdpCurveEvent,
    ScheduleEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
    curve_from_dict,
    curve_to_dict,
    event_from_dict,
    event_to_dict,
)
from accounting.orders import DEFAULT_ORDERS
from accounting.rdp import RdpCurve

__all__ = ["RdpAccountant", "STATE_FORMAT", "STATE_VERSION"]

STATE_FORMAT = "dptheory.accounting.RdpAccountant"
STATE_VERSION = 1

_OWN_EVENTS = (
    GaussianEvent,
    SubsampledGaussianEvent,
    ScheduleEvent,
    SelfComposedEvent,
    ComposedEvent,
    RdpCurveEvent,
)


class RdpAccountant:
    """Tracks the RDP of everything released so far and converts it to (epsilon, delta).

    ``orders`` is the RDP order grid (default :data:`accounting.orders.DEFAULT_ORDERS`, a
    superset of dp-accounting's); every composed mechanism is evaluated on it.
    """

    def __init__(self, orders: Sequence[float] | np.ndarray | None = None) -> None:
        o = np.array(DEFAULT_ORDERS if orders is None else orders, dtype=float)
        if o.ndim != 1 or o.size == 0 or not np.all(np.isfinite(o)) or np.any(o <= 1):
            raise InvalidParameter("--orders", "must be a non-empty list of finite orders > 1")
        o.setflags(write=False)
        self._orders = o
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget everything composed so far."""
        self._history: list[Any] = []
        self._total_flushed = RdpCurve.zeros(self._orders)
        # steps recorded but not yet evaluated: (sample_rate, noise_multiplier) -> count.  They
        # are evaluated together, in one vectorised call, when a result is asked for.
        self._pending: dict[tuple[float, float], int] = {}
        self._eps_cache: dict[tuple[float, str], EpsilonResult] = {}

    @property
    def _total(self) -> RdpCurve:
        if self._pending:
            self._total_flushed = self._total_flushed + _steps_curve(self._pending, self._orders)
            self._pending = {}
        return self._total_flushed

    @property
    def orders(self) -> np.ndarray:
        return self._orders

    @property
    def history(self) -> tuple[Any, ...]:
        """The composed events, oldest first (identical consecutive steps merged)."""
        return tuple(self._history)

    @property
    def steps(self) -> int:
        """Subsampled-Gaussian steps recorded as such (``step`` calls, or a composed
        ``SelfComposedEvent`` of one); steps inside other composed events are not counted."""
        n = 0
        for e in self._history:
            if isinstance(e, SelfComposedEvent) and isinstance(e.event, SubsampledGaussianEvent):
                n += e.count
        return n

    def rdp_curve(self) -> RdpCurve:
        """The composed RDP curve of the whole history on :attr:`orders`."""
        return self._total

    # -------------------------------------------------------------- composing
    def step(self, *, noise_multiplier: float, sample_rate: float = 1.0, count: int = 1) -> None:
        """Account for ``count`` Poisson-subsampled Gaussian steps (rate 1 = full batch)."""
        count = validate.positive_int("--steps", count)
        single = SubsampledGaussianEvent(sample_rate, noise_multiplier)  # validates both
        last = self._history[-1] if self._history else None
        if isinstance(last, SelfComposedEvent) and last.event == single:
            self._history[-1] = SelfComposedEvent(single, last.count + count)
        else:
            self._history.append(SelfComposedEvent(single, count))
        key = (float(single.sample_rate), float(single.noise_multiplier))
        self._pending[key] = self._pending.get(key, 0) + count
        self._eps_cache.clear()

    def compose(self, event: Any, count: int = 1) -> None:
        """Account for ``count`` repetitions of ``event``.

        ``event`` is one of :mod:`accounting.events`, any object with ``rdp(orders) -> RdpCurve``,
        or an :class:`RdpCurve` computed on this accountant's orders.
        """
        count = validate.positive_int("--steps", count)
        if isinstance(event, RdpCurve):
            event = RdpCurveEvent(event)
        elif not isinstance(event, _OWN_EVENTS):
            rdp = getattr(event, "rdp", None)
            if not callable(rdp):
                raise TypeError(f"cannot compose {type(event).__name__}: expected rdp(orders) -> RdpCurve")
            event = RdpCurveEvent(rdp(self._orders), label=getattr(event, "label", type(event).__name__))
        curve = event.rdp(self._orders)
        if count > 1:
            event = SelfComposedEvent(event, count)
            curve = curve.scaled(count)
        self._history.append(event)
        self._add(curve)

    def _add(self, curve: RdpCurve) -> None:
        self._total_flushed = self._total_flushed + curve
        self._eps_cache.clear()

    # ------------------------------------------------------------- reporting
    def get_epsilon_result(self, delta: float, *, method: str = "improved") -> EpsilonResult:
        """Full conversion result (epsilon, optimal order, edge warnings) for ``delta``."""
        delta = validate.open_unit("--delta", delta)
        key = (delta, method)
        res = self._eps_cache.get(key)
        if res is None:
            res = rdp_to_epsilon(self._total, delta, method=method)
            self._eps_cache[key] = res
        return res

    def get_epsilon(self, delta: float, method: str = "improved") -> float:
        """Smallest epsilon over the order grid such that the history is (epsilon, delta)-DP."""
        return float(self.get_epsilon_result(delta, method=method).epsilon)

    def to_dp_event(self) -> Any:
        """The whole history as one dp-accounting ``ComposedDpEvent`` (for cross-checks)."""
        import dp_accounting

        return dp_accounting.ComposedDpEvent([e.to_dp_event() for e in self._history])

    def __repr__(self) -> str:
        n = len(self._history)
        return f"RdpAccountant(orders={self._orders.size}, history={n} events, steps={self.steps})"

    # ----------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Plain JSON-compatible dict (no numpy types, no NaN/inf literals) for checkpoints."""
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "orders": [float(o) for o in self._orders],
            "history": [event_to_dict(e) for e in self._history],
            "total": curve_to_dict(self._total),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace this accountant's state (orders included) by ``state`` from :meth:`state_dict`."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"not an RdpAccountant state dict (expected format {STATE_FORMAT!r})")
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"unsupported RdpAccountant state version {state.get('version')!r}"
                f" (this code reads {STATE_VERSION})"
            )
        orders = np.array([float(o) for o in state["orders"]], dtype=float)
        history = [event_from_dict(d) for d in state["history"]]
        total = curve_from_dict(state["total"])
        # Subsampled-Gaussian steps are recomputed in one vectorised call, the rest one by one.
        steps: dict[tuple[float, float], int] = {}
        recomputed = RdpCurve.zeros(orders)
        for e in history:
            if isinstance(e, SelfComposedEvent) and isinstance(e.event, SubsampledGaussianEvent):
                key = (float(e.event.sample_rate), float(e.event.noise_multiplier))
                steps[key] = steps.get(key, 0) + int(e.count)
            else:
                recomputed = recomputed + e.rdp(orders)
        if steps:
            recomputed = recomputed + _steps_curve(steps, orders)
        if not np.array_equal(total.orders, orders) or not _close(recomputed.rdp, total.rdp):
            raise ValueError(
                "RdpAccountant state dict is inconsistent: stored RDP does not match its history"
            )
        orders.setflags(write=False)
        self._orders = orders
        self.reset()
        self._history = history
        # Never below what the history implies: a stored total within the tolerance but lower
        # (an edited checkpoint) would otherwise understate epsilon by up to 1e-9 relative.
        self._total_flushed = RdpCurve(
            orders, np.maximum(total.rdp, recomputed.rdp), total.dropped + recomputed.dropped, total.bounded
        )

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> RdpAccountant:
        acc = cls(orders=state.get("orders") if isinstance(state, dict) else None)
        acc.load_state_dict(state)
        return acc


def _steps_curve(steps: dict[tuple[float, float], int], orders: np.ndarray) -> RdpCurve:
    """RDP of ``{(q, sigma): count}`` Poisson-subsampled Gaussian steps in one vectorised call,
    every distinct step evaluated exactly (the accountant never switches to grid bounds, so a
    restored checkpoint recomputes the very same values)."""
    from accounting.rdp import subsampled_gaussian_rdp

    keys = list(steps)
    q = np.array([k[0] for k in keys])
    sig = np.array([k[1] for k in keys])
    counts = np.array([steps[k] for k in keys], dtype=float)
    return subsampled_gaussian_rdp(q, sig, orders, counts=counts, evaluation="exact")


def _close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-9) -> bool:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    same_nonfinite = (~np.isfinite(a) | ~np.isfinite(b)) & ((a == b) | (np.isnan(a) & np.isnan(b)))
    finite = np.isfinite(a) & np.isfinite(b)
    ok = same_nonfinite | (finite & (np.abs(a - b) <= rtol * np.maximum(np.abs(a), np.abs(b)) + 1e-300))
    return bool(np.all(ok))
