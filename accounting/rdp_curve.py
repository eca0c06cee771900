"""The result type of the RDP computations: :class:`RdpCurve` (orders, values, dropped and
grid-bounded orders) and its composition rules.  Part of :mod:`accounting.rdp`, which
re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter

__all__ = ["RdpCurve", "check_curve"]

#: ``dropped`` reason of an order whose value was NaN (a curve given with NaN is refused where
#: it enters an accountant, :func:`check_curve`; computed NaN are the accounting layer's own).
NAN_REASON = "RDP value is NaN"
NEG_INF_REASON = "RDP value is -inf"


def _merge_dropped(*lists: tuple[tuple[float, str], ...]) -> tuple[tuple[float, str], ...]:
    merged: dict[float, list[str]] = {}
    for lst in lists:
        for order, reason in lst:
            reasons = merged.setdefault(float(order), [])
            if reason not in reasons:
                reasons.append(reason)
    return tuple((o, "; ".join(r)) for o, r in sorted(merged.items()))


def _merge_bounded(*lists: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    """Union of ``(order, gap)`` lists; gaps of the same order add (they compose like RDP)."""
    merged: dict[float, float] = {}
    for lst in lists:
        for order, gap in lst:
            g = float(gap)
            if not g >= 0:  # also rejects NaN
                raise ValueError(f"bounded gap must be >= 0 (got {gap!r} at order {order!r})")
            merged[float(order)] = merged.get(float(order), 0.0) + g
    return tuple(sorted(merged.items()))


@dataclass(frozen=True, eq=False)
class RdpCurve:
    """RDP guarantees ``rdp[i]`` at ``orders[i]`` of a (composed) mechanism.

    ``dropped`` lists ``(order, reason)`` for orders that could not be evaluated; their ``rdp``
    entry is ``inf`` (never a silent 0).  ``bounded`` lists ``(order, gap)`` for orders whose
    value is a sound *grid upper bound* (long schedules, see the :mod:`accounting.rdp` docstring) rather than
    an exact evaluation; ``gap >= 0`` estimates how far it may exceed the exact value.
    ``a + b`` is composition (RDP adds at each order; gaps add too); ``c.scaled(k)`` is the
    k-fold self-composition.

    Args:
        orders: the RDP orders, 1-D.
        rdp: the RDP at each order (same shape; NaN/inf entries without a reason are dropped).
        dropped: ``(order, reason)`` of the orders that could not be evaluated.
        bounded: ``(order, gap)`` of the orders holding a grid upper bound.
    """

    orders: np.ndarray
    rdp: np.ndarray
    dropped: tuple[tuple[float, str], ...] = field(default=())
    bounded: tuple[tuple[float, float], ...] = field(default=())

    def __post_init__(self) -> None:
        orders = np.array(self.orders, dtype=float).reshape(-1)
        rdp = np.array(self.rdp, dtype=float).reshape(-1)
        if orders.shape != rdp.shape:
            raise ValueError(f"orders and rdp differ in shape: {orders.shape} vs {rdp.shape}")
        if np.any(~np.isfinite(orders)) or np.any(orders < 1):
            raise InvalidParameter("--orders", "orders must be finite and >= 1")
        dropped = _merge_dropped(tuple(self.dropped))
        dropped_set = {o for o, _ in dropped}
        # Anything not finite must be explained; anything explained must be unusable.
        extra = [
            (
                float(o),
                NAN_REASON
                if np.isnan(r)
                else NEG_INF_REASON
                if r < 0
                else "RDP value is not finite (overflow)",
            )
            for o, r in zip(orders[~np.isfinite(rdp)], rdp[~np.isfinite(rdp)], strict=True)  # vectorised
            if float(o) not in dropped_set
        ]
        if extra:
            dropped = _merge_dropped(dropped, tuple(extra))
        mask = np.isin(orders, [o for o, _ in dropped])
        rdp = np.where(mask | np.isnan(rdp), np.inf, rdp)
        orders.setflags(write=False)
        rdp.setflags(write=False)
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "rdp", rdp)
        object.__setattr__(self, "dropped", dropped)
        bounded = _merge_bounded(tuple(self.bounded))
        unknown = sorted({o for o, _ in bounded} - set(orders.tolist()))  # one set, not one per entry
        if unknown:
            raise ValueError(f"bounded lists orders not in the curve: {unknown[:3]}")
        object.__setattr__(self, "bounded", bounded)

    @property
    def bounded_orders(self) -> tuple[float, ...]:
        """Orders whose value is a grid upper bound (not an exact evaluation)."""
        return tuple(o for o, _ in self.bounded)

    @classmethod
    def zeros(cls, orders: np.ndarray) -> RdpCurve:
        """The curve of the mechanism that reveals nothing (identity for ``+``)."""
        o = np.asarray(orders, dtype=float)
        return cls(o, np.zeros_like(o))

    @property
    def finite(self) -> np.ndarray:
        """Boolean mask of orders with a usable (finite) RDP value."""
        return np.isfinite(self.rdp)

    def __add__(self, other: RdpCurve) -> RdpCurve:
        if not isinstance(other, RdpCurve):
            return NotImplemented
        if self.orders.shape != other.orders.shape or not np.array_equal(self.orders, other.orders):
            raise ValueError("cannot compose RDP curves over different order grids")
        with np.errstate(over="ignore", invalid="ignore"):
            total = self.rdp + other.rdp
        return RdpCurve(
            self.orders,
            total,
            _merge_dropped(self.dropped, other.dropped),
            _merge_bounded(self.bounded, other.bounded),
        )

    def scaled(self, k: float) -> RdpCurve:
        """k-fold self-composition (``k >= 0``; RDP composes additively)."""
        k = validate.nonnegative("--steps", k)
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.where(np.isfinite(self.rdp), self.rdp * k, np.inf)
        bounded = tuple((o, g * k) for o, g in self.bounded) if k > 0 else ()
        return RdpCurve(self.orders, r, self.dropped, bounded)


def check_curve(curve: RdpCurve, option: str = "curve") -> RdpCurve:
    """``curve`` if it can enter an accountant: no negative entry and no NaN.

    RDP is a Renyi divergence, never negative: a negative entry would *lower* every epsilon the
    composition reports (``-100`` at every order turns 7.9 into 0), and a NaN is no bound at all.
    Every place a curve comes from outside the accounting layer (``RdpAccountant.compose``,
    :class:`accounting.events.RdpCurveEvent`, a restored checkpoint) calls this."""
    if not isinstance(curve, RdpCurve):
        raise InvalidParameter(option, f"must be an RdpCurve (got {type(curve).__name__})")
    neg = np.flatnonzero(curve.rdp < 0)
    if neg.size:
        k = int(neg[0])
        raise InvalidParameter(
            option,
            f"RDP must be >= 0 at every order (got {float(curve.rdp[k])!r} at order "
            f"{float(curve.orders[k]):g}); a negative value would lower epsilon",
        )
    for bad in (NAN_REASON, NEG_INF_REASON):
        where = [o for o, reason in curve.dropped if bad in reason]
        if where:
            raise InvalidParameter(option, f"RDP must be a number >= 0 ({bad} at order {where[0]:g})")
    return curve
