"""The scheduling estimates of ``dptheory verify --jobs`` come from the measured tables in tools/."""

from __future__ import annotations

from tools import cost_hints
from verification import claim_costs, registry


def test_the_product_tables_are_the_slow_part_of_the_measured_ones() -> None:
    assert claim_costs.SLOW_QUICK == cost_hints.slow(cost_hints.QUICK)
    assert claim_costs.SLOW_FULL == cost_hints.slow(cost_hints.FULL)
    assert min(claim_costs.SLOW_FULL.values()) >= cost_hints.MIN_SECONDS


def test_the_measured_tables_name_registered_claims_only() -> None:
    ids = set(registry.CLAIMS)
    assert set(cost_hints.QUICK) <= ids and set(cost_hints.FULL) <= ids


def test_estimates_use_the_table_else_the_per_check_default() -> None:
    slow_id, seconds = max(claim_costs.SLOW_FULL.items(), key=lambda kv: kv[1])
    assert claim_costs.estimated_seconds(slow_id, 3, quick=False) == seconds
    assert claim_costs.estimated_seconds("user.claim", 4, quick=True) == 4 * claim_costs.PER_CHECK_S
    fast = next(cid for cid, s in cost_hints.QUICK.items() if s < cost_hints.MIN_SECONDS)
    assert claim_costs.estimated_seconds(fast, 2, quick=True) == 2 * claim_costs.PER_CHECK_S
