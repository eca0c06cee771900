"""Immutable mechanism objects that compose (in the spirit of dp-accounting's ``DpEvent``).

Each event describes *what* was released, not how it is accounted: ``.rdp(orders)``
gives its Renyi-DP curve (add/remove adjacency, see ``accounting.rdp``) and
``.to_dp_event()`` builds the equivalent dp-accounting ``DpEvent`` so that any number can
be cross-checked by dp-accounting's RDP or PLD accountant (``accounting.interop``).

Why our own classes rather than dp-accounting's: they validate with the CLI's option names,
they are hashable/serialisable (checkpoints, see :mod:`accounting.accountant`), and a
:class:`ScheduleEvent` of T distinct steps is evaluated with *one* vectorised array call
instead of T Python-level compositions.

Any object with a method ``rdp(orders) -> RdpCurve`` can take part in a
:class:`ComposedEvent` or :class:`SelfComposedEvent` (for example a mechanism known only
through its RDP curve, such as the DiceSGD hidden-state accountant; wrap a bare curve in
:class:`RdpCurveEvent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter
from accounting.json_floats import json_float
from accounting.rdp import RdpCurve, gaussian_rdp, subsampled_gaussian_rdp
from accounting.rdp_curve import check_curve

__all__ = [
    "Mechanism",
    "GaussianEvent",
    "SubsampledGaussianEvent",
    "ScheduleEvent",
    "SelfComposedEvent",
    "ComposedEvent",
    "RdpCurveEvent",
    "event_to_dict",
    "event_from_dict",
]


@runtime_checkable
class Mechanism(Protocol):
    """Anything whose privacy loss is described by an RDP curve on a given order grid.

    Implementations provide ``rdp(orders) -> RdpCurve``; the events of this module and any user
    object with that method qualify (:class:`RdpAccountant` composes them).
    """

    def rdp(self, orders: np.ndarray) -> RdpCurve: ...


def _orders_array(orders: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(orders, dtype=float)


def _zero_curve(orders: np.ndarray) -> RdpCurve:
    return RdpCurve.zeros(orders)


#: Deepest nesting of composed events (ours are at most 3 deep); deeper ones are refused when built
#: or restored, instead of exhausting Python's recursion limit when evaluated.
MAX_DEPTH = 64


def _set_depth(event: Any, children: tuple[Any, ...]) -> None:
    depth = 1 + max((getattr(c, "_depth", 0) for c in children), default=0)
    if depth > MAX_DEPTH:
        raise InvalidParameter("event", f"composed events nested deeper than {MAX_DEPTH} levels")
    object.__setattr__(event, "_depth", depth)


def _check_mechanism(event: Any) -> None:
    # A programming error, not bad user input: TypeError rather than InvalidParameter.
    if not callable(getattr(event, "rdp", None)):
        raise TypeError(f"expected a mechanism with an rdp(orders) method (got {type(event).__name__})")


@dataclass(frozen=True)
class GaussianEvent:
    """One Gaussian mechanism: noise std = ``noise_multiplier`` x (nominal sensitivity).

    ``sensitivity`` is the true L2 sensitivity in units of the nominal one (e.g. 2.0 for a
    message of norm <= tau whose noise is ``z tau``: any two such messages differ by up to
    2 tau). The mechanism is therefore a Gaussian with effective multiplier
    ``noise_multiplier / sensitivity`` and RDP ``alpha sensitivity^2 / (2 noise_multiplier^2)``.

    Args:
        noise_multiplier: noise std over the nominal sensitivity (> 0).
        sensitivity: true sensitivity in units of the nominal one (> 0).
    """

    noise_multiplier: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "noise_multiplier", validate.positive("--noise-multiplier", self.noise_multiplier)
        )
        object.__setattr__(self, "sensitivity", validate.positive("--sensitivity", self.sensitivity))

    @property
    def effective_noise_multiplier(self) -> float:
        """Noise std divided by the true sensitivity (what dp-accounting calls noise_multiplier)."""
        return self.noise_multiplier / self.sensitivity

    def rdp(self, orders: Sequence[float] | np.ndarray) -> RdpCurve:
        o = _orders_array(orders)
        return RdpCurve(
            orders=o, rdp=np.asarray(gaussian_rdp(self.effective_noise_multiplier, o)), dropped=()
        )

    def to_dp_event(self) -> Any:
        import dp_accounting

        return dp_accounting.GaussianDpEvent(self.effective_noise_multiplier)


@dataclass(frozen=True)
class SubsampledGaussianEvent:
    """One Poisson-subsampled Gaussian step (rate ``sample_rate``; rate 1 is the plain Gaussian).

    Args:
        sample_rate: the Poisson sampling rate q, in (0, 1].
        noise_multiplier: noise std over the L2 sensitivity (> 0).
    """

    sample_rate: float
    noise_multiplier: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sample_rate", validate.rate("--sample-rate", self.sample_rate))
        object.__setattr__(
            self, "noise_multiplier", validate.positive("--noise-multiplier", self.noise_multiplier)
        )

    def rdp(self, orders: Sequence[float] | np.ndarray) -> RdpCurve:
        return subsampled_gaussian_rdp(self.sample_rate, self.noise_multiplier, _orders_array(orders))

    def to_dp_event(self) -> Any:
        import dp_accounting

        return dp_accounting.PoissonSampledDpEvent(
            self.sample_rate, dp_accounting.GaussianDpEvent(self.noise_multiplier)
        )


def _as_float_tuple(option: str, values: Any, *, check) -> tuple[float, ...]:
    """Validate a 1-D sequence of numbers vectorised (T may be 1e5) and return a float tuple.

    Numbers only, as everywhere in the API (:func:`accounting.validate.real_values`: no strings,
    bools or mappings); Fractions and Decimals are range-checked as themselves."""
    arr, exact = validate.real_array_exact(option, values)
    if arr.size == 0:
        raise InvalidParameter("--steps", "a schedule needs at least one step (got 0 values)")
    # Reuse the scalar check so the message matches the scalar case exactly.
    check_scalar = validate.rate if option == "--sample-rate" else validate.positive
    bad = ~check(arr)
    # the first float entry that fails, then the exact ones (a Fraction just above 1 is the float 1.0)
    suspects = [(int(k), float(arr[k])) for k in np.flatnonzero(bad)[:1]] + exact
    for k, v in suspects:
        try:
            check_scalar(option, v)
        except InvalidParameter as err:
            raise InvalidParameter(option, f"step {k + 1}: {err.message}") from None
    return tuple(arr.tolist())


def _ok_positive(a: np.ndarray) -> np.ndarray:
    return np.isfinite(a) & (a > 0)


def _ok_rate(a: np.ndarray) -> np.ndarray:
    return np.isfinite(a) & (a > 0) & (a <= 1)


@dataclass(frozen=True)
class ScheduleEvent:
    """T Poisson-subsampled Gaussian steps with per-step noise multipliers (a noise schedule).

    ``sample_rate`` is one rate for all steps or a tuple with one rate per step. ``rdp`` is a
    single vectorised call over all (step, order) pairs.

    Args:
        sample_rate: one rate in (0, 1], or one per step.
        noise_multipliers: the per-step noise multipliers (each > 0).
    """

    sample_rate: float | tuple[float, ...]
    noise_multipliers: tuple[float, ...] = field(repr=False)
    _z: np.ndarray = field(init=False, repr=False, compare=False, hash=False)
    _q: float | np.ndarray = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        z = _as_float_tuple("--noise-multiplier", self.noise_multipliers, check=_ok_positive)
        object.__setattr__(self, "noise_multipliers", z)
        object.__setattr__(self, "_z", np.asarray(z, dtype=float))
        if np.ndim(self.sample_rate) == 0:
            q: float | tuple[float, ...] = validate.rate("--sample-rate", self.sample_rate)
            object.__setattr__(self, "_q", q)
        else:
            q = _as_float_tuple("--sample-rate", self.sample_rate, check=_ok_rate)
            if len(q) != len(z):
                raise InvalidParameter(
                    "--sample-rate",
                    f"needs one rate per step or a single rate (got {len(q)} rates for {len(z)} steps)",
                )
            object.__setattr__(self, "_q", np.asarray(q, dtype=float))
        object.__setattr__(self, "sample_rate", q)
        self._z.setflags(write=False)

    @classmethod
    def from_schedule(
        cls, name: str, base: float, steps: int, sample_rate: float, **kw: Any
    ) -> ScheduleEvent:
        """Build from a named schedule of ``accounting.schedules`` (e.g. ``"inv-k"``)."""
        from accounting.schedules import noise_multipliers

        return cls(sample_rate, tuple(np.asarray(noise_multipliers(name, base, steps, **kw)).tolist()))

    @property
    def steps(self) -> int:
        return len(self.noise_multipliers)

    @property
    def step_arrays(self) -> tuple[float | np.ndarray, np.ndarray]:
        """``(sample_rate, noise_multipliers)`` in the form the functions of :mod:`accounting.rdp`
        take: the rate a float or an array with one entry per step, the noise multipliers a
        read-only array (both validated once, at construction)."""
        return self._q, self._z

    def __repr__(self) -> str:
        z = self._z
        q = self.sample_rate if isinstance(self.sample_rate, float) else f"<{len(self.sample_rate)} rates>"
        zs = f"[{z.min():.6g}..{z.max():.6g}]"
        return f"ScheduleEvent(sample_rate={q}, steps={z.size}, noise_multipliers={zs})"

    def rdp(self, orders: Sequence[float] | np.ndarray) -> RdpCurve:
        return subsampled_gaussian_rdp(self._q, self._z, _orders_array(orders))

    def runs(self) -> list[tuple[float, float, int]]:
        """Consecutive identical steps merged: ``[(sample_rate, noise_multiplier, count), ...]``."""
        q = np.broadcast_to(np.asarray(self._q, dtype=float), self._z.shape)
        change = np.flatnonzero((np.diff(self._z) != 0) | (np.diff(q) != 0)) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change, [self._z.size]))
        return [(float(q[s]), float(self._z[s]), int(e - s)) for s, e in zip(starts, ends, strict=True)]

    def to_dp_event(self) -> Any:
        """``ComposedDpEvent`` of ``PoissonSampledDpEvent`` s, runs of equal steps self-composed."""
        import dp_accounting

        events = []
        for q, z, count in self.runs():
            ev = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z))
            events.append(ev if count == 1 else dp_accounting.SelfComposedDpEvent(ev, count))
        return events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)


@dataclass(frozen=True)
class SelfComposedEvent:
    """``event`` repeated ``count`` times (RDP adds: ``count`` x the single curve).

    Args:
        event: the mechanism repeated.
        count: how many times (>= 1).
    """

    event: Any
    count: int

    def __post_init__(self) -> None:
        _check_mechanism(self.event)
        object.__setattr__(self, "count", validate.positive_int("--steps", self.count))
        _set_depth(self, (self.event,))

    def rdp(self, orders: Sequence[float] | np.ndarray) -> RdpCurve:
        return self.event.rdp(_orders_array(orders)).scaled(self.count)

    def to_dp_event(self) -> Any:
        import dp_accounting

        return dp_accounting.SelfComposedDpEvent(_inner_dp_event(self.event), self.count)


@dataclass(frozen=True)
class ComposedEvent:
    """Sequential (adaptive) composition of ``events``; RDP adds order by order.

    Args:
        events: the mechanisms, in order.
    """

    events: tuple[Any, ...]

    def __post_init__(self) -> None:
        events = tuple(self.events)
        for e in events:
            _check_mechanism(e)
        object.__setattr__(self, "events", events)
        _set_depth(self, events)

    def rdp(self, orders: Sequence[float] | np.ndarray) -> RdpCurve:
        o = _orders_array(orders)
        if not self.events:
            return _zero_curve(o)
        total = self.events[0].rdp(o)
        for e in self.events[1:]:
            total = total + e.rdp(o)
        return total

    def to_dp_event(self) -> Any:
        import dp_accounting

        return dp_accounting.ComposedDpEvent([_inner_dp_event(e) for e in self.events])


@dataclass(frozen=True, eq=False)
class RdpCurveEvent:
    """A mechanism known only through its RDP curve (e.g. a hidden-state accountant's output).

    It can only be evaluated on the grid it was computed on: re-evaluating an RDP bound on
    other orders would need the mechanism itself, and interpolating is not sound.

    Args:
        curve: the mechanism's RDP curve.
        label: how the mechanism is named in reports and serialisations.
    """

    curve: RdpCurve
    label: str = "rdp-curve"

    def __post_init__(self) -> None:
        if not isinstance(self.curve, RdpCurve):
            raise TypeError(f"RdpCurveEvent needs an RdpCurve (got {type(self.curve).__name__})")
        check_curve(self.curve, "curve")  # negative or NaN RDP would lower epsilon
        object.__setattr__(self, "label", str(self.label))

    def rdp(self, orders: Sequence[float] | np.ndarray) -> RdpCurve:
        o = _orders_array(orders)
        if o.shape != np.shape(self.curve.orders) or not np.array_equal(o, self.curve.orders):
            raise InvalidParameter(
                "--orders",
                f"mechanism {self.label!r} is only known on the order grid it was computed on "
                f"({np.size(self.curve.orders)} orders); recompute it on the requested grid",
            )
        return self.curve

    def to_dp_event(self) -> Any:
        raise NotImplementedError(
            f"{self.label!r} is known only through its RDP curve; dp-accounting has no DpEvent for it"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RdpCurveEvent):
            return NotImplemented
        return self.label == other.label and _curves_equal(self.curve, other.curve)

    def __hash__(self) -> int:
        return hash((self.label, np.asarray(self.curve.rdp).tobytes()))


def _curves_equal(a: RdpCurve, b: RdpCurve) -> bool:
    return (
        np.array_equal(a.orders, b.orders)
        and np.array_equal(a.rdp, b.rdp, equal_nan=True)
        and tuple(a.dropped) == tuple(b.dropped)
    )


def _inner_dp_event(event: Any) -> Any:
    to = getattr(event, "to_dp_event", None)
    if to is None:
        raise NotImplementedError(f"{type(event).__name__} has no dp-accounting equivalent (no to_dp_event)")
    return to()


# --- serialisation (checkpoints): plain JSON-compatible dicts -----------------------------


def _float_to_json(x: float) -> float | str:
    """A float of a checkpoint as JSON (:func:`accounting.json_floats.json_float`)."""
    return json_float(float(x))


def _float_from_json(x: float | str) -> float:
    return float(x)


def curve_to_dict(curve: RdpCurve) -> dict[str, Any]:
    """Plain-dict form of an :class:`RdpCurve` (floats round-trip exactly through JSON)."""
    return {
        "orders": [_float_to_json(v) for v in np.asarray(curve.orders, dtype=float)],
        "rdp": [_float_to_json(v) for v in np.asarray(curve.rdp, dtype=float)],
        "dropped": [[_float_to_json(o), str(r)] for o, r in curve.dropped],
    }


def curve_from_dict(d: dict[str, Any]) -> RdpCurve:
    """Inverse of :func:`curve_to_dict`; a negative or NaN entry is refused (:func:`check_curve`)."""
    try:
        curve = RdpCurve(
            orders=np.array([_float_from_json(v) for v in d["orders"]], dtype=float),
            rdp=np.array([_float_from_json(v) for v in d["rdp"]], dtype=float),
            dropped=tuple((_float_from_json(o), str(r)) for o, r in d["dropped"]),
        )
    except (KeyError, IndexError, TypeError, ValueError) as err:
        if isinstance(err, InvalidParameter):
            raise InvalidParameter("state", f"malformed RDP curve ({err.message})") from None
        raise InvalidParameter("state", f"malformed RDP curve ({type(err).__name__}: {err!s:.80})") from None
    return check_curve(curve, "state")


def event_to_dict(event: Any) -> dict[str, Any]:
    """Serialise one of this module's events to a JSON-compatible dict (``kind`` tagged).

    Args:
        event: a mechanism object of this module (nested compositions included).

    Returns:
        A dict of plain JSON types, readable back with :func:`event_from_dict`.

    Raises:
        TypeError: ``event`` is not one of this module's events (wrap a foreign mechanism in
            :class:`RdpCurveEvent`).
    """
    if isinstance(event, GaussianEvent):
        return {
            "kind": "gaussian",
            "noise_multiplier": event.noise_multiplier,
            "sensitivity": event.sensitivity,
        }
    if isinstance(event, SubsampledGaussianEvent):
        return {
            "kind": "subsampled_gaussian",
            "sample_rate": event.sample_rate,
            "noise_multiplier": event.noise_multiplier,
        }
    if isinstance(event, ScheduleEvent):
        q = event.sample_rate
        return {
            "kind": "schedule",
            "sample_rate": q if isinstance(q, float) else list(q),
            "noise_multipliers": list(event.noise_multipliers),
        }
    if isinstance(event, SelfComposedEvent):
        return {"kind": "self_composed", "event": event_to_dict(event.event), "count": event.count}
    if isinstance(event, ComposedEvent):
        return {"kind": "composed", "events": [event_to_dict(e) for e in event.events]}
    if isinstance(event, RdpCurveEvent):
        return {"kind": "rdp_curve", "label": event.label, "curve": curve_to_dict(event.curve)}
    raise TypeError(f"cannot serialise {type(event).__name__}; wrap it in RdpCurveEvent(event.rdp(orders))")


def event_from_dict(d: dict[str, Any], _depth: int = 0) -> Any:
    """Inverse of :func:`event_to_dict` (parameters are re-validated; a malformed entry raises
    :class:`InvalidParameter` naming ``state``, never KeyError, IndexError or RecursionError).

    Args:
        d: a dict written by :func:`event_to_dict` (e.g. read back from JSON).

    Returns:
        The event it describes.

    Raises:
        InvalidParameter: (option ``state``) the dict is malformed, nested too deeply or holds an
            invalid parameter.
    """
    if _depth > MAX_DEPTH:
        raise InvalidParameter("state", f"events nested deeper than {MAX_DEPTH} levels")
    if not isinstance(d, dict):
        raise InvalidParameter("state", f"an event must be a dict (got {type(d).__name__})")
    kind = d.get("kind")
    try:
        if kind == "gaussian":
            return GaussianEvent(d["noise_multiplier"], d["sensitivity"])
        if kind == "subsampled_gaussian":
            return SubsampledGaussianEvent(d["sample_rate"], d["noise_multiplier"])
        if kind == "schedule":
            q = d["sample_rate"]
            return ScheduleEvent(q if not isinstance(q, list) else tuple(q), tuple(d["noise_multipliers"]))
        if kind == "self_composed":
            return SelfComposedEvent(event_from_dict(d["event"], _depth + 1), d["count"])
        if kind == "composed":
            return ComposedEvent(tuple(event_from_dict(e, _depth + 1) for e in d["events"]))
        if kind == "rdp_curve":
            return RdpCurveEvent(curve_from_dict(d["curve"]), d["label"])
    except (KeyError, IndexError, TypeError) as err:
        why = f"{type(err).__name__}: {err!s:.80}"
        raise InvalidParameter("state", f"malformed {kind} event ({why})") from None
    raise InvalidParameter("state", f"unknown event kind {kind!r:.80} in state dict")
