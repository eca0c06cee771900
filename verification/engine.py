"""Select and run claims: the engine behind ``dptheory verify`` and ``tools.readme_table``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
    claims: Sequence[Claim],
    *,
    seed: int = 0,
    quick: bool = False,
    progress: bool | None = None,
    extra: Mapping[str, Claim] | None = None,
    claims_file: str = "",
    jobs: int = 1,
) -> list[ClaimResult]:
    """Run every check of every claim (crashes are contained per check).

    A claim with ``depends_on`` gets its premises' verdicts; premises outside the selection are
    run too (once each, same seed and quick flag) but not returned. ``extra`` holds claims from
    outside the registry (a user's ``--claims-file``) that premises may name; ``claims_file`` is
    the file's path as given, which the checks' reproduce commands then carry.

    ``jobs`` > 1 runs the claims in that many worker processes (:mod:`verification.parallel`)
    with the same results; ``jobs`` = 1 runs them here, one after the other.
    """
    from verification import registry
    from verification.progress import CheckProgress

    ctx = Context(seed=seed, quick=quick, claims_file=claims_file)
    done: dict[str, ClaimResult] = {}

    def premises_of(claim: Claim, stack: tuple[str, ...]) -> dict:
        out = {}
        for pid in claim.depends_on:
            if pid in stack:
                raise RuntimeError(f"circular depends_on: {' -> '.join(stack + (pid,))}")
            if pid not in done:
                pc = extra[pid] if extra and pid in extra else registry.CLAIMS[pid]
                done[pid] = pc.run(ctx, premises=premises_of(pc, stack + (pid,)))
            out[pid] = done[pid].verdict
        return out

    bar = CheckProgress(sum(len(c.checks) for c in claims), enabled=progress)
    # the workers find a user's claim by loading its file again, so they need the path
    if jobs > 1 and (not extra or claims_file):
        from verification.parallel import run_claims_parallel

        def resolve(pid: str) -> Claim:
            return extra[pid] if extra and pid in extra else registry.CLAIMS[pid]

        try:
            return run_claims_parallel(
                claims,
                jobs=jobs,
                seed=seed,
                quick=quick,
                on_claim_done=lambda c: bar.advance(len(c.checks), c.id),
                resolve=resolve,
                claims_file=claims_file,
            )
        finally:
            bar.close()
    try:
        results = []
        for c in claims:
            if c.id not in done:
                done[c.id] = c.run(ctx, on_check=bar.step, premises=premises_of(c, (c.id,)))
            results.append(done[c.id])
        return results
    finally:
        bar.close()
