"""Real Flower runs on 127.0.0.1: the simulation engine (worker threads or Ray) and a local
deployment (SuperLink + SuperNodes). Same iterates as the in-process simulator, per-client
privacy, dropouts, and no process left behind. The runs take minutes on a loaded 2-core machine,
so they are ``slow``; the protocol itself is tested fast in tests/integrations/test_flower_apps.py
and the threads backend in process in tests/integrations/test_flower_threads.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest

from accounting.errors import InvalidParameter


def _cfg(**kw) -> dict:
    cfg = {
        "problem": "stochastic-quadratic",
        "problem-options": json.dumps({"clients": 2, "d": 3}),
        "rule": "clip21-2m",
        "steps": 3,
        "lr": 0.1,
        "tau": 0.7,
        "beta": 0.5,
        "beta-hat": 0.3,
        "noise-multiplier": 0.8,
        "sample-rate": 0.25,
        "seed": 5,
        "num-clients": 2,
        "drop": "",
        "round-timeout": 0.0,
        "node-wait": 300.0,
    }
    cfg.update(kw)
    return cfg


def _max_diff(a, b) -> float:
    return max(abs(u - v) for xa, xb in zip(a, b, strict=True) for u, v in zip(xa, xb, strict=True))


def _run(cfg: dict, runtime: str, timeout: float = 500.0):
    from dptheory.integrations.flower.launch import processes_of_run, run_flower

    with tempfile.TemporaryDirectory(prefix="dptheory-flower-test-") as wd:
        try:
            return run_flower(cfg, runtime=runtime, timeout=timeout, workdir=wd)
        finally:
            assert processes_of_run(wd) == [], "processes of the run are still alive"


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["threads", "simulation", "deployment"])
def test_flower_run_equals_inprocess(runtime: str) -> None:
    pytest.importorskip("flwr")
    if runtime == "simulation":
        pytest.importorskip("ray")  # the [flower-ray] extra; the [test] extra installs flwr without Ray
    from dptheory.integrations.flower.backend import reference_iterates

    cfg = _cfg()
    out = _run(cfg, runtime)
    ref = reference_iterates(cfg)
    assert _max_diff(out["x"], ref) <= 1e-9  # says by how much, if the next check fails
    assert out["x"] == ref  # bit for bit, as docs/flower.md states
    assert out["sent"] == {"0": 3, "1": 3}


@pytest.mark.slow
def test_flower_dropout_in_simulation() -> None:
    """Client 1 fails in round 2 on the real engine: it is charged 2 messages, not 3."""
    pytest.importorskip("flwr")
    pytest.importorskip("ray")
    out = _run(_cfg(drop="1:2"), "simulation")
    assert out["sent"] == {"0": 3, "1": 2}
    assert out["participated"] == [[0, 1], [0], [0, 1]]


# slow, like every other test here that starts real Flower processes: about 8 s of CPU, nearly all
# of it the SuperLink's and SuperNodes' start-up. The in-process Flower tests stay in the default run.
@pytest.mark.slow
def test_deployment_timeout_kills_everything(monkeypatch) -> None:
    """A run stopped by its timeout raises and leaves no SuperLink/SuperNode behind (and the
    leftover check sees the processes while they run: it can fail)."""
    pytest.importorskip("flwr")
    from dptheory.integrations.flower import launch

    seen_before_stop: list[int] = []
    stop = launch.ProcessGroup.stop

    def recording_stop(self) -> None:
        seen_before_stop.extend(launch.processes_of_run(self.log_dir))
        stop(self)

    monkeypatch.setattr(launch.ProcessGroup, "stop", recording_stop)
    with pytest.raises(launch.FlowerRunError, match="within 4 s"):
        _run(_cfg(steps=50), "deployment", timeout=4.0)
    assert len(seen_before_stop) >= 3  # SuperLink and two SuperNodes at least


def test_an_unused_simulation_child_is_stopped(tmp_path) -> None:
    """The child started ahead of its configuration runs until stop() and leaves nothing behind."""
    from dptheory.integrations.flower.launch import SimulationChild, processes_of_run

    wd = str(tmp_path)
    child = SimulationChild("threads", wd)
    try:
        assert processes_of_run(wd), "the child should be running, waiting for its configuration"
    finally:
        child.stop()
    assert processes_of_run(wd) == []


@pytest.mark.slow
def test_a_simulation_child_whose_parent_dies_exits() -> None:
    """A parent killed before it writes the configuration (no finally runs) leaves no child."""
    import time

    from dptheory.integrations.flower.launch import processes_of_run

    with tempfile.TemporaryDirectory(prefix="dptheory-flower-test-") as wd:
        code = (
            "import os, sys; from dptheory.integrations.flower.launch import SimulationChild;"
            f"SimulationChild('threads', {wd!r}); print('started', flush=True); os._exit(0)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == "started", out.stderr
        assert processes_of_run(wd), "the orphan should still be importing"
        deadline = time.monotonic() + 60
        while processes_of_run(wd) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_of_run(wd) == []


def test_flower_backend_refuses_other_algorithms(capsys) -> None:
    """In process (the exit-status contract of a real process is tested in tests/cli/test_cli_run.py)."""
    from dptheory.cli.main import main

    rc = main(["run", "--algo", "dpsgd", "--problem", "quadratic", "--backend", "flower"])
    assert rc == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--backend" in lines[0] and "clip21sgd2m" in lines[0]


def test_check_flower_options() -> None:
    from dptheory.integrations.flower.backend import check_flower_options

    with pytest.raises(InvalidParameter, match="--flower-runtime"):
        check_flower_options("clip21sgd2m", runtime="cluster", device="cpu")
    with pytest.raises(InvalidParameter, match="--device"):
        check_flower_options("clipsgd", runtime="simulation", device="cuda")


def test_import_dptheory_does_not_import_flwr() -> None:
    code = (
        "import sys, dptheory, dptheory.cli.main, dptheory.integrations.flower, "
        "dptheory.integrations.flower.backend, dptheory.integrations.flower.launch;"
        "bad = [m for m in ('flwr', 'ray', 'torch') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_cli_flower_backend_matches_inprocess_and_reports_each_client() -> None:
    pytest.importorskip("flwr")  # the default runtime (threads) needs no Ray
    args = [sys.executable, "-m", "dptheory.cli.main", "run", "--algo", "clip21sgd", "--problem"]
    args += ["stochastic-quadratic", "--clients", "2", "--dim", "3", "--steps", "2"]
    args += ["--noise-multiplier", "3", "--delta", "1e-6", "--json"]
    inproc = json.loads(subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout)
    out = subprocess.run(args + ["--backend", "flower"], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    flower = json.loads(out.stdout)
    for key in ("final_loss", "grad_norm", "dist_to_opt"):
        assert flower[key]["mean"] == pytest.approx(inproc[key]["mean"], rel=0, abs=1e-9)
    per = flower["flower"]["per_client"]
    assert [c["messages"] for c in per] == [2, 2]
    from dptheory import api

    want = api.epsilon(
        algo="clip21sgd2m", noise_multiplier=3.0, delta=1e-6, mode="certified", tau=1.0, clients=2, rounds=2
    ).epsilon
    assert per[0]["epsilon"] == pytest.approx(want, rel=1e-12)
