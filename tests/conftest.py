"""Shared test configuration: a hypothesis profile that suits a 2-core CI machine."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")
# One compute thread per process (torch, OpenBLAS, MKL; children inherit it).  On the 2-core CI
# machine, shared with other jobs, a second intra-op thread finds no free core and spins: the
# audit-run training costs 8.4 s of CPU with torch's default 2 threads against 1.3 s with one, with
# bit-identical canary scores.  Tests compare results within one setting, never across settings.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "dptheory",
    deadline=None,
    max_examples=30,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("dptheory")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def quick_results():
    """Every registered claim run once in quick mode (seed 0), as ``{id: ClaimResult}``.

    The quick run of all claims is the suite's single largest cost; the tests that pin verdicts, check
    evidence or replay a refutation's verdict share this one run instead of repeating it. It goes
    through :func:`verification.engine.run_claims`, the same function ``dptheory verify`` calls, so
    premises (``depends_on``) get their verdicts exactly as on the command line.
    """
    from verification import registry
    from verification.engine import run_claims

    results = run_claims(list(registry.CLAIMS.values()), seed=0, quick=True, progress=False)
    return {r.claim.id: r for r in results}


@pytest.fixture(scope="session")
def quick_run(quick_results):
    """``quick_run(cid, premises=None)``: what ``CLAIMS[cid].run(Context(seed=0, quick=True), premises=...)``
    returns, taken from the shared quick run whenever that run saw the same premises.

    ``claim.run`` with ``premises=None`` runs the premises with the same seed and flag, exactly as
    ``run_claims`` does; a ``premises`` dict stands in for them (missing ids count as inconclusive).
    Where it matches the verdicts of the quick run, the result is that run's; otherwise the claim is
    run here with the given premises, so a test never gets a result computed under other premises.
    """
    from verification import registry
    from verification.claim import Context, Verdict

    def run(cid: str, premises: dict | None = None):
        claim = registry.CLAIMS[cid]
        if premises is None or all(
            premises.get(pid, Verdict.INCONCLUSIVE) is quick_results[pid].verdict for pid in claim.depends_on
        ):
            return quick_results[cid]
        return claim.run(Context(seed=0, quick=True), premises=premises)

    return run


def pytest_collection_finish(session) -> None:  # noqa: ARG001
    """Move what collection built (torch, sympy, scipy, the test modules: ~420k objects) out of the
    garbage collector's sight.  They live to the end of the session anyway; without this every
    full collection walks them again (28 per session), and so does pytest's collection at exit.
    About 2.5 s of the suite's CPU in back-to-back runs; objects the tests create are collected as
    before."""
    import gc

    gc.collect()
    gc.freeze()
