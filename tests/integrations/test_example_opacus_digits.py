"""examples/opacus_digits.py, shortened (2 epochs): runs, certifies eps <= 2, learns something."""

from __future__ import annotations

import json
import pathlib
import runpy
import time

import pytest

pytest.importorskip("opacus")
pytest.importorskip("sklearn")

ROOT = pathlib.Path(__file__).resolve().parents[2]


# slow: about 10 s of CPU (three trainings with their calibrations). The default run keeps the parts it
# is built from: tests/integrations/test_opacus_integration.py (make_private_with_epsilon
# certified, the DiceSGD and D2P2 optimizers equal to their references) and the calibration tests.
@pytest.mark.slow
def test_opacus_digits_quick(tmp_path, capsys):
    main = runpy.run_path(str(ROOT / "examples" / "opacus_digits.py"))["main"]
    out = tmp_path / "r.json"
    plot = tmp_path / "p.png"
    t0 = time.perf_counter()
    assert main(["--quick", "--plot", str(plot), "--json", str(out)]) == 0
    assert time.perf_counter() - t0 < 60
    res = json.loads(out.read_text())["results"]
    assert [r["algo"] for r in res] == ["dpsgd", "dicesgd", "d2p2sgd"]
    for r in res:
        assert 0 < r["epsilon_spent"] <= 2.0  # certified, never above the target
        assert r["epsilon_spent"] == pytest.approx(2.0, rel=1e-4)  # and the whole budget is used
    assert res[0]["test_accuracy"] > 0.6 and res[1]["test_accuracy"] > 0.6
    assert plot.stat().st_size > 0
    assert "| DP-SGD |" in capsys.readouterr().out


# slow: about 9 s of CPU (a subprocess importing torch, scikit-learn and opacus, one training)
@pytest.mark.slow
def test_quick_run_leaves_the_repository_alone_and_quiet():
    """Issue 19 §5: --quick writes its figure to a temporary folder (never the tracked
    figures/opacus_digits.png) and prints none of the Opacus warnings the example handles."""
    import os
    import shutil
    import subprocess
    import sys

    tracked = ROOT / "figures" / "opacus_digits.png"
    before = tracked.stat().st_mtime_ns if tracked.exists() else None
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "examples/opacus_digits.py", "--quick", "--algos", "dpsgd"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    plot = next(line[len("plot: ") :] for line in proc.stdout.splitlines() if line.startswith("plot: "))
    assert pathlib.Path(plot).is_file() and ROOT not in pathlib.Path(plot).resolve().parents
    shutil.rmtree(pathlib.Path(plot).parent)
    assert (tracked.stat().st_mtime_ns if tracked.exists() else None) == before
    assert "Warning" not in proc.stderr, proc.stderr
