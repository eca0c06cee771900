"""A bounded, thread-safe memo for exact per-step RDP values that the long-schedule bounds reuse.

The sigma-grid and smooth-schedule bounds (:mod:`accounting.sigma_grid`,
:mod:`accounting.schedule_bound`) evaluate the same (q, sigma) rows again and again across the
iterations of a calibration.  Each keeps one :class:`BoundedCache`: least recently used entries
are dropped one at a time when it is full (not the whole cache at once), and a lock keeps it
consistent when several threads calibrate at the same time.

What a cache can change: an exact row evaluated inside a different batch of rows can differ in
its last bit (~1e-16 relative, either way: the integer-order sums pick dense or pruned blocks by
batch size), so a cached row holds the bits of the batch that first computed it.  Both are upper
bounds within the rounding allowances, and calibration's 1e-12 margin below the target absorbs
the difference (:mod:`accounting.calibration`).  Two threads missing the same row may both
evaluate it; the later write wins.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class BoundedCache:
    """Least-recently-used mapping of at most ``capacity`` entries; every method holds a lock.

    Args:
        capacity: the most entries kept (>= 1); inserting beyond it drops the least recently
            read or written ones.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1 (got {capacity})")
        self.capacity = int(capacity)
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value at ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            try:
                self._data.move_to_end(key)
            except KeyError:
                return default
            return self._data[key]

    def get_many(self, keys: list[Hashable]) -> list[Any]:
        """``[get(k) for k in keys]`` under one acquisition of the lock (None for a miss)."""
        with self._lock:
            out = []
            for key in keys:
                if key in self._data:
                    self._data.move_to_end(key)
                    out.append(self._data[key])
                else:
                    out.append(None)
            return out

    def setdefault(self, key: Hashable, value: Any) -> Any:
        """The value at ``key`` if present (as :meth:`get`), else store ``value`` and return it."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            self._data[key] = value
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value`` at ``key`` (replacing any), dropping the oldest entries beyond capacity."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry (tests use it to measure cold-cache behaviour)."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data
