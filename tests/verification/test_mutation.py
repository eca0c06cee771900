"""Mutation test (issue 21): a confirmation "by search" must come from a search that could have failed.

For every claim whose ``basis`` is "search", the statement's constant is tightened by 10%
(``verification.search.mutated``: RHS -> 0.9 RHS, i.e. every search ratio divided by 0.9) and the
claim's checks are run again with the same seed: some search that found no counterexample before must
find one now. A claim whose searches never come within 10% of its bound cannot keep that basis; it
must be re-kinded (definition / implementation). The default run covers a fast subset; the full set,
at full size, runs under ``slow``.

What this measures is tightness, not power: a search whose largest ratio sits at equality before the
mutation (an identity, a tight inequality) is caught automatically, so being caught does not prove the
search could have failed on a false claim. The negative control only shows that a loose bound is not
caught. Claims true by algebra (dicesgd.lemma-a8: Young's inequality; dicesgd.cor-a9: an identity;
dicesgd.fixed-point-ef: ||e|| <= C1 <= C2) are therefore kinded 'definition' and are not mutated, and so
are standard theorems whose statement quantifies over every mechanism or function, which a search can
only sample by families (dicesgd.lemma-a1: projections are firmly non-expansive, any non-expansive c;
dicesgd.step2-composition and d2p2.lemma3: adaptive RDP composition; d2p2.lemma6: the first-order
condition of convexity); their notes carry the derivation.
"""

from __future__ import annotations

import pytest

from verification.claim import Context, Verdict

#: the search-based confirmations cheap enough for the default run (each well under a second, quick)
FAST = ("dicesgd.eq9",)


def _search_ids() -> list[str]:
    from verification import registry

    return [c.id for c in registry.CLAIMS.values() if c.basis == "search"]


def caught(cid: str, *, quick: bool) -> tuple[bool, list[float]]:
    """Whether tightening the statement by 10% turns a clean search of ``cid`` into a counterexample;
    also the searches' largest ratios before the mutation."""
    from verification import registry
    from verification.search import mutated

    claim = registry.CLAIMS[cid]
    premises = {p: Verdict.CONFIRMED for p in claim.depends_on}  # own checks only
    ctx = Context(seed=0, quick=quick)
    with mutated(0.0) as before:
        claim.run(ctx, premises=premises)
    with mutated(0.1) as after:
        claim.run(ctx, premises=premises)
    assert len(before) == len(after) > 0, f"{cid}: basis 'search' but no adversarial search ran"
    hit = any(
        b.counterexample is None and a.counterexample is not None for b, a in zip(before, after, strict=True)
    )
    return hit, [b.max_ratio for b in before]


#: true by algebra or by a standard theorem (derivation in each claim's notes): 'definition', not mutated
BY_ALGEBRA = (
    "dicesgd.lemma-a8",
    "dicesgd.cor-a9",
    "dicesgd.fixed-point-ef",
    "clip21.example1",
    "dicesgd.lemma-a1",
    "dicesgd.step2-composition",
    "d2p2.lemma3",
    "d2p2.lemma6",
)


def test_fast_subset_is_search_based() -> None:
    from verification import registry

    assert set(FAST) <= set(_search_ids())
    assert not set(BY_ALGEBRA) & set(_search_ids())
    for c in BY_ALGEBRA:
        assert registry.CLAIMS[c].basis == "definition" and "Basis: definition" in registry.CLAIMS[c].notes


@pytest.mark.parametrize("cid", FAST)
def test_mutated_statement_is_refuted_by_its_search(cid: str) -> None:
    hit, ratios = caught(cid, quick=True)
    assert hit, f"{cid}: no search came within 10% of the bound (largest ratios {ratios}); re-kind it"


def test_a_search_far_from_its_bound_is_not_caught() -> None:
    """Negative control: clip21.example1's search stays well below its bound (Clip-GD never moves,
    by algebra), so a 10% mutation is not caught; that claim is therefore kinded 'definition'."""
    from verification import registry

    hit, ratios = caught("clip21.example1", quick=True)
    assert not hit and max(ratios) < 0.9
    assert registry.CLAIMS["clip21.example1"].basis == "definition"


@pytest.mark.slow
@pytest.mark.parametrize("cid", _search_ids())
def test_every_search_confirmation_catches_its_mutation_full_size(cid: str) -> None:
    hit, ratios = caught(cid, quick=False)
    assert hit, f"{cid}: no search came within 10% of the bound (largest ratios {ratios}); re-kind it"
