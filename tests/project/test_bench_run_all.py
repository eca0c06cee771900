"""``benchmarks/run_all.py --quick`` runs end to end and prints one row per benchmark (slow)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_run_all_quick(capsys) -> None:
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "benchmarks" / "run_all.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--quick", "--json", "--repeats", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [r["name"] for r in rows]
    for part in (
        "static calibration",
        "inv-k schedule",
        "D2P2 defaults",
        "DiceSGD",
        "sweep",
        "RdpAccountant",
    ):
        assert any(part in n for n in names), part
    for r in rows:
        if r["name"].startswith("optimizer"):
            continue
        assert math.isfinite(r["ours_s"]) and r["ours_s"] >= 0
        if "anchor_s" in r:
            assert r["ratio"] > 0
    # side by side with the same orders, the inv-k schedule agrees with dp-accounting
    inv = next(r for r in rows if r["name"].startswith("inv-k schedule T=200"))
    assert inv["ours_value"] == pytest.approx(inv["anchor_value"], rel=1e-6)
