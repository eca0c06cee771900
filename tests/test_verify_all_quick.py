"""`dptheory verify --all --quick` runs in CI (issue 3): every registered claim gets a verdict."""

from __future__ import annotations

import json
import subprocess
import sys


def test_verify_all_quick_runs_every_claim() -> None:
    from verification.registry import CLAIMS

    out = subprocess.run(
        [sys.executable, "-m", "dptheory.cli.main", "verify", "--all", "--quick", "--json", "--seed", "0"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout)
    assert sorted(r["id"] for r in results) == sorted(CLAIMS)
    for r in results:
        assert r["verdict"] in ("confirmed", "refuted", "inconclusive"), r["id"]
        assert r["summary"] and r["evidence"], r["id"]
        if r["verdict"] == "refuted":
            # a refutation must come with something to rerun
            assert any(e.get("reproduce") for e in r["evidence"] if e["verdict"] == "refuted"), r["id"]
