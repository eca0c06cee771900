"""Select and run claims: the engine behind ``dptheory verify`` and ``verification.readme_table``."""

from __future__ import annotations

from collections.abc import Sequence

from verification.claim import Claim, ClaimResult, Context


def select(claim_ids: Sequence[str] | None, paper: str | None, run_all: bool) -> list[Claim]:
    """Claims in registry order; raises KeyError(id) for an unknown id, ValueError for an unknown paper."""
    from verification import registry

    claims = registry.CLAIMS
    chosen: list[Claim] = []
    if run_all:
        chosen = list(claims.values())
    if paper is not None:
        if paper not in registry.PAPERS:
            raise ValueError(paper)
        chosen += [c for c in claims.values() if c.paper == paper and c not in chosen]
    for cid in claim_ids or ():
        if cid not in claims:
            raise KeyError(cid)
        if claims[cid] not in chosen:
            chosen.append(claims[cid])
    order = list(claims)
    return sorted(chosen, key=lambda c: order.index(c.id))


def run_claims(
    claims: Sequence[Claim], *, seed: int = 0, quick: bool = False, progress: bool | None = None
) -> list[ClaimResult]:
    """Run every check of every claim (crashes are contained per check)."""
    from verification.progress import CheckProgress

    bar = CheckProgress(sum(len(c.checks) for c in claims), enabled=progress)
    try:
        return [c.run(Context(seed=seed, quick=quick), on_check=bar.step) for c in claims]
    finally:
        bar.close()
