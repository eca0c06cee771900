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
* ``step`` only records ``(q, sigma) -> count`` (:class:`accounting.step_groups.StepGroups`);
  the steps are evaluated lazily, in one vectorised call per sample rate, when a result is
  asked for.  Under the default ``evaluation="auto"`` a sample rate with many distinct noise
  values (a decaying schedule) is bounded from the sigma grid -- a certified upper bound,
  listed in ``rdp_curve().bounded`` -- and short histories stay exact (see
  :mod:`accounting.step_groups` for the rule and why it is sound).  ``evaluation="exact"``
  evaluates every distinct step.  Other events are added as they are composed, and the
  (epsilon, delta) conversion is memoised per (delta, method).
* ``state_dict()`` stores the history, the total and the rule.  ``load_state_dict`` recomputes
  the rule's curve ``R`` from the history (a certified upper bound on the history's RDP) and
  keeps the stored total ``S`` where ``S >= R`` (it is then an upper bound too, and the
  restored accountant reproduces ``get_epsilon``).  Where ``S < R`` by more than rounding
  (1e-9 relative) ``S`` is only accepted after an exact recomputation shows ``S`` is not below
  the history (a checkpoint written with a tighter rule, e.g. version 1, which was exact);
  otherwise the checkpoint is refused as corrupt or edited.  The restored total is
  ``max(S, R)`` order by order: never below a certified bound of the history.
* ``compose`` accepts any object with ``rdp(orders) -> RdpCurve`` (e.g. a DiceSGD hidden-state
  step) and a bare :class:`RdpCurve`; objects that are not this package's events are stored
  as their RDP curve on the accountant's grid, which is what keeps the state serialisable.
  Subsampled Gaussian events (alone or self-composed) join the steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from accounting import validate
from accounting.conversion import EpsilonResult, rdp_to_epsilon
from accounting.errors import InvalidParameter, python_names
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
from accounting.orders import DEFAULT_ORDERS, MAX_ORDER
from accounting.rdp import RdpCurve
from accounting.rdp_curve import check_curve
from accounting.step_groups import EVALUATIONS, StepGroups, as_steps

__all__ = ["RdpAccountant", "STATE_FORMAT", "STATE_VERSION"]

STATE_FORMAT = "dptheory.accounting.RdpAccountant"
#: 2 adds ``"evaluation"`` (the rule of :mod:`accounting.step_groups`); version 1 states (exact
#: totals, no rule) are still read.
STATE_VERSION = 2
_READ_VERSIONS = (1, 2)
#: A stored total this far below the recomputed bound (relative) is rounding, not tampering.
_RTOL = 1e-9

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
    ``evaluation`` is ``"auto"`` (default: long decaying schedules are bounded from the sigma
    grid, a certified upper bound, measured 0.03-0.3% above exact on ordinary schedules and up to
    ~1.1% at sigma ~0.15; see :mod:`accounting.step_groups`) or ``"exact"`` (every
    distinct step evaluated exactly, about 1 ms each); see :mod:`accounting.step_groups`.

    Args:
        orders: the RDP orders (default :data:`accounting.orders.DEFAULT_ORDERS`).
        evaluation: ``"auto"`` or ``"exact"``.

    Raises:
        InvalidParameter: orders not finite and > 1, or an unknown ``evaluation``.
    """

    @python_names
    def __init__(
        self, orders: Sequence[float] | np.ndarray | None = None, *, evaluation: str = "auto"
    ) -> None:
        given = DEFAULT_ORDERS if orders is None else validate.real_array("--orders", orders)
        o = np.array(given, dtype=float)
        if o.size == 0 or not np.all(np.isfinite(o)) or np.any(o <= 1) or np.any(o > MAX_ORDER):
            raise InvalidParameter(
                "--orders", f"must be a non-empty list of finite orders in (1, {MAX_ORDER:g}] (the CLI's cap)"
            )
        if evaluation not in EVALUATIONS:
            raise InvalidParameter(
                "evaluation", f"must be one of {', '.join(EVALUATIONS)} (got {evaluation!r})"
            )
        o.setflags(write=False)
        self._orders = o
        self._evaluation = evaluation
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget everything composed so far."""
        self._history: list[Any] = []
        self._steps = StepGroups(self._orders, self._evaluation)
        self._other = RdpCurve.zeros(self._orders)  # every composed event that is not a step
        # what a restored checkpoint stored above the recomputed bound (kept: it only raises eps)
        self._carry: np.ndarray | None = None
        self._eps_cache: dict[tuple[float, str], EpsilonResult] = {}

    @property
    def _total(self) -> RdpCurve:
        total = self._other + self._steps.curve() if self._steps else self._other
        if self._carry is not None:
            total = RdpCurve(total.orders, total.rdp + self._carry, total.dropped, total.bounded)
        return total

    @property
    def orders(self) -> np.ndarray:
        return self._orders

    @property
    def evaluation(self) -> str:
        """The rule for subsampled Gaussian steps: ``"auto"`` or ``"exact"``."""
        return self._evaluation

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
        """The composed RDP curve of the whole history on :attr:`orders` (``.bounded`` lists the
        orders where it is a certified sigma-grid upper bound rather than exact)."""
        return self._total

    # -------------------------------------------------------------- composing
    @python_names(**{"--steps": "count"})
    def step(self, *, noise_multiplier: float, sample_rate: float = 1.0, count: int = 1) -> None:
        """Account for ``count`` Poisson-subsampled Gaussian steps (rate 1 = full batch)."""
        count = validate.positive_int("--steps", count)
        single = SubsampledGaussianEvent(sample_rate, noise_multiplier)  # validates both
        last = self._history[-1] if self._history else None
        if isinstance(last, SelfComposedEvent) and last.event == single:
            self._history[-1] = SelfComposedEvent(single, last.count + count)
        else:
            self._history.append(SelfComposedEvent(single, count))
        self._steps.add(float(single.sample_rate), float(single.noise_multiplier), count)
        self._eps_cache.clear()

    @python_names(**{"--steps": "count"})
    def compose(self, event: Any, count: int = 1) -> None:
        """Account for ``count`` repetitions of ``event``.

        ``event`` is one of :mod:`accounting.events`, any object with ``rdp(orders) -> RdpCurve``,
        or an :class:`RdpCurve` computed on this accountant's orders.  A curve with a negative or
        NaN entry is refused (:func:`accounting.rdp_curve.check_curve`): it would lower epsilon.
        """
        count = validate.positive_int("--steps", count)
        if isinstance(event, RdpCurve):
            event = RdpCurveEvent(event)
        elif not isinstance(event, _OWN_EVENTS):
            rdp = getattr(event, "rdp", None)
            if not callable(rdp):
                raise TypeError(f"cannot compose {type(event).__name__}: expected rdp(orders) -> RdpCurve")
            event = RdpCurveEvent(rdp(self._orders), label=getattr(event, "label", type(event).__name__))
        steps = as_steps(event)
        if steps is None:
            curve = check_curve(event.rdp(self._orders), "event")
            if count > 1:
                curve = curve.scaled(count)
            self._other = self._other + curve
        else:
            q, sigma, n = steps
            self._steps.add(q, sigma, n * count)
        self._history.append(SelfComposedEvent(event, count) if count > 1 else event)
        self._eps_cache.clear()

    # ------------------------------------------------------------- reporting
    @python_names(**{"--conversion": "method"})
    def get_epsilon_result(self, delta: float, *, method: str = "improved") -> EpsilonResult:
        """Full conversion result (epsilon, optimal order, edge warnings) for ``delta``."""
        delta = validate.open_unit("--delta", delta)
        key = (delta, method)
        res = self._eps_cache.get(key)
        if res is None:
            res = rdp_to_epsilon(self._total, delta, method=method)
            self._eps_cache[key] = res
        return res

    @python_names(**{"--conversion": "method"})
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
        """Plain JSON-compatible dict (no numpy types, no NaN/inf literals) for checkpoints.

        The steps' curve is first brought to the rule's value (exact tails folded into the grid
        bound, :meth:`StepGroups.consolidate`), which is what a restore recomputes; epsilon may
        move by a fraction of the grid's excess, either way, never below the history's."""
        if self._steps.consolidate():
            self._eps_cache.clear()
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "evaluation": self._evaluation,
            "orders": [float(o) for o in self._orders],
            "history": [event_to_dict(e) for e in self._history],
            "total": curve_to_dict(self._total),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace this accountant's state (orders and rule included) by ``state`` from
        :meth:`state_dict` (this version or version 1); see the module docstring for how the
        stored total is verified.  A malformed or inconsistent state raises
        :class:`InvalidParameter` (a ValueError) naming ``state`` and leaves this accountant as
        it was.  A state edited consistently everywhere (history and total together) cannot be
        told from a genuine one without a signature (docs/api.md, "Checkpoints")."""
        try:
            self._load_state_dict(state)
        except InvalidParameter as err:
            if err.option == "state":
                raise
            raise InvalidParameter("state", f"{err.option}: {err.message}") from None
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as err:
            why = f"{err!s:.200}" if type(err) is ValueError else f"{type(err).__name__}: {err!s:.200}"
            raise InvalidParameter("state", why) from None

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"not an RdpAccountant state dict (expected format {STATE_FORMAT!r})")
        version = state.get("version")
        if version not in _READ_VERSIONS:
            raise ValueError(
                f"unsupported RdpAccountant state version {version!r}"
                f" (this code reads {', '.join(map(str, _READ_VERSIONS))})"
            )
        # version 1 had no rule; its totals were exact.  It continues under the default rule.
        evaluation = state.get("evaluation", "auto")
        if evaluation not in EVALUATIONS:
            raise ValueError(f"RdpAccountant state dict has an unknown evaluation {evaluation!r}")
        orders = np.array(validate.real_array("orders", state["orders"]), dtype=float)
        if not isinstance(state["history"], list):
            raise ValueError("RdpAccountant state dict: 'history' must be a list")
        history = [event_from_dict(d) for d in state["history"]]
        stored = curve_from_dict(state["total"])
        if not np.array_equal(stored.orders, orders):
            raise ValueError("RdpAccountant state dict is inconsistent: its total is on other orders")
        orders.setflags(write=False)
        fresh = RdpAccountant(orders, evaluation=evaluation)
        for e in history:
            steps = as_steps(e)
            if steps is None:
                fresh._other = fresh._other + e.rdp(orders)
            else:
                fresh._steps.add(*steps)
        bound = fresh._total  # the rule's certified upper bound on the history
        if not _not_below(stored.rdp, bound.rdp):
            # Below the bound: legitimate only if a tighter rule wrote it; check against exact.
            exact = fresh._other + fresh._steps.exact_curve() if fresh._steps else fresh._other
            if not _not_below(stored.rdp, exact.rdp):
                raise ValueError("RdpAccountant state dict is inconsistent: stored RDP is below its history")
        # Keep what the checkpoint stored above the bound (exactly: bound + (S - bound) == S
        # when S and bound are within a factor 2); never go below the bound.
        with np.errstate(invalid="ignore"):
            carry = np.where(stored.rdp > bound.rdp, stored.rdp - bound.rdp, 0.0)
        self._orders = orders
        self._evaluation = evaluation
        self.reset()
        self._history = history
        self._steps, self._other = fresh._steps, fresh._other
        if np.any(carry != 0.0):
            self._carry = carry

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> RdpAccountant:
        acc = cls()
        acc.load_state_dict(state)  # sets the orders (and checks them) from the state
        return acc


def _not_below(stored: np.ndarray, bound: np.ndarray, rtol: float = _RTOL) -> bool:
    """``stored >= bound`` at every order, up to ``rtol`` relative rounding; an infinite
    (dropped) bound needs an infinite stored value."""
    s = np.asarray(stored, dtype=float)
    b = np.asarray(bound, dtype=float)
    if s.shape != b.shape or np.any(np.isnan(s)):
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (s >= b) | (np.isfinite(b) & (s >= b - rtol * np.abs(b)))
    return bool(np.all(ok))
