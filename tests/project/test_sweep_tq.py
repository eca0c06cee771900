"""benchmarks/sweep_tq.py: the per-call timeout stops a call, and a planted cliff is reported."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("sweep_tq", ROOT / "benchmarks" / "sweep_tq.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_timed_stops_a_long_call() -> None:
    mod = _module()

    def spin() -> int:
        while True:
            time.sleep(0.01)

    t0 = time.monotonic()
    _, value, out = mod.timed(spin, 0.2)
    assert out and value is None and time.monotonic() - t0 < 5
    cpu, value, out = mod.timed(lambda: 7, 5.0)
    assert value == 7 and not out and cpu >= 0


def test_cliffs_finds_a_slower_smaller_t() -> None:
    mod = _module()

    def cell(t: int, s: float, acc: str = "rdp") -> dict:
        return {"accountant": acc, "q": 0.3, "T": t, "ours_s": s}

    rows = [
        cell(1000, 4.0),
        cell(3000, 0.6),
        cell(10000, 0.8),
        cell(1000, 0.5, "pld"),
        cell(3000, 0.6, "pld"),
    ]
    found = mod.cliffs(rows)
    assert [r["T"] for r, _ in found] == [1000] and found[0][0]["accountant"] == "rdp"
    assert "T=1000 takes 4.00 s" in found[0][1]


def test_sweep_one_cell() -> None:
    mod = _module()
    rows = mod.sweep([200], [0.05], ["rdp"], 60.0)
    assert len(rows) == 1 and rows[0]["ours_value"] > 0 and not rows[0]["timed_out"]
