"""State kept between calls changes no number: bounded caches, coarse mode scoped to its thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from accounting import schedule_bound, sigma_grid
from accounting.cache import BoundedCache
from accounting.rdp import coarse_bounds, coarse_settings, subsampled_gaussian_rdp


def test_bounded_cache_drops_the_least_recently_used() -> None:
    c = BoundedCache(3)
    for k in "abc":
        c.put(k, k.upper())
    assert c.get("a") == "A"  # a is now the most recent; b the least
    c.put("d", "D")
    assert len(c) == 3 and "b" not in c and [c.get(k) for k in "acd"] == ["A", "C", "D"]
    assert c.setdefault("a", "other") == "A" and c.setdefault("e", "E") == "E"
    assert "c" not in c  # c was the least recently used when e came in
    assert c.get_many(["a", "zz", "e"]) == ["A", None, "E"]
    with pytest.raises(ValueError):
        BoundedCache(0)


def test_bounded_cache_stays_consistent_under_threads() -> None:
    c = BoundedCache(50)

    def work(base: int) -> None:
        for i in range(2000):
            c.put((base, i % 97), i)
            c.get((base, (i * 7) % 97))

    threads = [threading.Thread(target=work, args=(b,)) for b in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(c) == 50


def test_the_caches_are_bounded_objects() -> None:
    assert isinstance(sigma_grid.GRID_CACHE, BoundedCache) and sigma_grid.GRID_CACHE.capacity == 20_000
    assert isinstance(schedule_bound.CACHE, BoundedCache) and schedule_bound.CACHE.capacity == 4_000


def test_coarse_mode_is_scoped_to_the_thread_that_opened_it() -> None:
    """A calibration bracketing itself in one thread must not coarsen another thread's numbers."""
    rng = np.random.default_rng(3)
    z = 1.0 + rng.uniform(0.0, 2.0, 200)  # 200 distinct steps: coarsened inside the block
    orders = np.array([2.0, 4.0, 8.0, 16.0])
    exact = subsampled_gaussian_rdp(0.01, z, orders).rdp
    seen: dict[str, object] = {}

    def other_thread() -> None:
        seen["settings"] = coarse_settings()
        seen["rdp"] = subsampled_gaussian_rdp(0.01, z, orders).rdp

    with coarse_bounds() as state:
        coarse = subsampled_gaussian_rdp(0.01, z, orders).rdp
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert coarse_settings() is state and state["used"]
    assert coarse_settings() is None
    assert seen["settings"] is None
    np.testing.assert_array_equal(seen["rdp"], exact)
    assert np.all(coarse >= exact) and np.any(coarse > exact)  # coarse: looser upper bounds


def test_rdp_values_do_not_depend_on_what_ran_before() -> None:
    """The same call gives the same bits before and after other work fills the caches."""
    rng = np.random.default_rng(5)
    z = 0.8 + rng.uniform(0.0, 3.0, 25_000)  # long enough for the sigma grid
    orders = np.array([1.5, 2.0, 3.5, 8.0, 32.0])
    first = subsampled_gaussian_rdp(0.02, z, orders).rdp
    for q in (0.01, 0.03):
        subsampled_gaussian_rdp(q, z * 1.1, orders)
    np.testing.assert_array_equal(subsampled_gaussian_rdp(0.02, z, orders).rdp, first)
