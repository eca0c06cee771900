"""Shared check of the order-screening tests: a screened epsilon against the whole curve's."""

from __future__ import annotations

import numpy as np

REL = 1e-12
DROPPED = "RDP orders dropped"


def assert_matches_whole_curve(full, got, allowed_warnings: tuple[tuple[str, ...], ...]) -> None:
    """Same conversion, epsilon to ``REL``, the same order and edge flag; ``got.warnings`` must be
    one of ``allowed_warnings`` (the whole curve's, possibly without its dropped-orders line)."""
    assert got.method == full.method
    if np.isinf(full.epsilon):
        assert np.isinf(got.epsilon)
    else:
        assert abs(got.epsilon - full.epsilon) <= REL * full.epsilon + 1e-300
        assert got.order == full.order
    assert got.on_edge == full.on_edge
    assert got.warnings in allowed_warnings


def without_dropped(warnings: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(w for w in warnings if not w.startswith(DROPPED))
