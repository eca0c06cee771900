"""`dptheory verify --all --quick` runs in CI (issue 3): every registered claim gets a verdict.

The run of every claim is the session's shared one (``quick_results`` in conftest.py, through the
same ``run_claims`` the command calls); the command itself is then run end to end on that run's
results, so the CLI's selection, JSON rendering and exit status are tested without paying for a
second full run.
"""

from __future__ import annotations

import json


def test_every_claim_gets_a_verdict_with_evidence(quick_results) -> None:
    from verification import registry

    assert sorted(quick_results) == sorted(registry.CLAIMS)
    for cid, r in quick_results.items():
        assert r.verdict.value in ("confirmed", "refuted", "inconclusive"), cid
        assert r.summary and r.checks, cid
        assert not r.crashed, (cid, [c.crashed for c in r.crashed])
        if r.verdict.value == "refuted":
            # a refutation must come with something to rerun
            assert any(c.evidence.reproduce for c in r.checks if c.verdict.value == "refuted"), cid


def test_verify_all_quick_json(quick_results, monkeypatch, capsys) -> None:
    import verification.engine as engine
    from dptheory.cli.main import main
    from verification import registry

    seen = {}

    def cached(claims, *, seed=0, quick=False, progress=None, **user_file):
        seen.update(seed=seed, quick=quick, ids=[c.id for c in claims])
        return [quick_results[c.id] for c in claims]

    monkeypatch.setattr(engine, "run_claims", cached)
    assert main(["verify", "--all", "--quick", "--json", "--seed", "0"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert seen == {"seed": 0, "quick": True, "ids": list(registry.CLAIMS)}
    assert sorted(r["id"] for r in results) == sorted(registry.CLAIMS)
    for r in results:
        assert r["verdict"] == quick_results[r["id"]].verdict.value
        assert r["summary"] and r["evidence"], r["id"]
