"""Progress on the slow commands (issue 19 §3): a bar on a terminal, silence with ``--json`` or
off a terminal; stdout is the result either way.  Also ``epsilon --compare``'s defaults block (§5)."""

from __future__ import annotations

import io
import json
import os
import threading
import time

import pytest

from dptheory.cli.main import main


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(monkeypatch, capsys, argv, *, tty: bool):
    err = _Tty() if tty else io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    rc = main(argv)
    return rc, capsys.readouterr().out, err.getvalue()


COMPARE = ["epsilon", "--compare", "--algo", "dpsgd", "--noise-multiplier", "1", "--delta", "1e-5"]


def test_epsilon_compare_shows_stages_on_a_terminal_only(monkeypatch, capsys):
    rc, out, err = _run(monkeypatch, capsys, COMPARE, tty=True)
    assert rc == 0 and "epsilon --compare:" in err and "audit" in err
    rc, out_plain, err_plain = _run(monkeypatch, capsys, COMPARE, tty=False)
    assert rc == 0 and "epsilon --compare:" not in err_plain and out_plain == out
    rc, out_json, err_json = _run(monkeypatch, capsys, [*COMPARE, "--json"], tty=True)
    assert rc == 0 and "epsilon --compare:" not in err_json
    json.loads(out_json)


def test_epsilon_compare_prints_the_defaults_it_assumed(monkeypatch, capsys):
    _, out, _ = _run(monkeypatch, capsys, COMPARE, tty=False)
    block = out[out.index("defaults assumed:") :]
    assert "--dataset-size = 50000" in block and "--epochs = 3" in block
    _, cal, _ = _run(
        monkeypatch,
        capsys,
        ["calibrate", "--compare", "--algo", "dpsgd", "--delta", "1e-5", "--eps", "2"],
        tty=False,
    )
    assert cal.count("--dataset-size = 50000") == 1  # calibrate --compare had it already


def test_calibrate_bar_is_silent_with_json(monkeypatch, capsys):
    argv = ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dpsgd"]
    _, _, err = _run(monkeypatch, capsys, argv, tty=True)
    assert "calibrating" in err
    _, out, err = _run(monkeypatch, capsys, [*argv, "--json"], tty=True)
    assert "calibrating" not in err and json.loads(out)["noise_multiplier"] > 0


def test_verify_bar_names_the_running_check_and_is_silent_with_json(monkeypatch, capsys):
    argv = ["verify", "--claim", "dicesgd.gaussian-mechanism", "--quick", "--jobs", "1"]
    rc, _, err = _run(monkeypatch, capsys, argv, tty=True)
    assert rc == 0 and "verify:" in err and "dicesgd.gaussian-mechanism:" in err
    rc, out, err = _run(monkeypatch, capsys, [*argv, "--json"], tty=True)
    assert rc == 0 and "verify:" not in err and json.loads(out)[0]["id"] == "dicesgd.gaussian-mechanism"


def test_flower_launcher_reports_rounds_as_the_server_records_them(tmp_path):
    """The ServerApp's round file (apps._record_round) is what run_flower's on_round reads."""
    pytest.importorskip("flwr")
    from dptheory.integrations.flower import apps, launch

    result = str(tmp_path / "result.json")

    class Group:  # the two methods _wait_for_result uses; the driver never ends
        procs: list = []

        def check_alive(self) -> None:
            pass

    def server() -> None:
        for t in range(1, 6):
            apps._record_round(result, t)
            time.sleep(0.15)
        with open(result + ".tmp", "w") as fh:
            json.dump({"x": [[0.0]]}, fh)
        os.replace(result + ".tmp", result)

    seen: list[int] = []
    th = threading.Thread(target=server)
    th.start()
    out = launch._wait_for_result(Group(), result, 30.0, "simulation", seen.append)
    th.join()
    assert out == {"x": [[0.0]]}
    assert seen == sorted(set(seen)) and seen[-1] >= 4 and len(seen) >= 3  # increasing, as they came
    with open(launch.round_path(result)) as fh:
        assert fh.read() == "5"


@pytest.mark.parametrize("algo", ["dpsgd", "dp2sgd"])
def test_exact_pld_audits_show_their_passes_on_a_terminal_only(monkeypatch, capsys, algo):
    """The PLD audits of the D2P family took ~19 s at the defaults with nothing on screen."""
    argv = ["audit", "--algo", algo, "--noise-multiplier", "2", "--delta", "1e-5", "--steps", "50"]
    rc, out, err = _run(monkeypatch, capsys, argv, tty=True)
    assert rc == 0 and "exact PLD passes" in err
    rc, out_plain, err_plain = _run(monkeypatch, capsys, argv, tty=False)
    assert rc == 0 and "exact PLD passes" not in err_plain and out_plain == out
    rc, out_json, err_json = _run(monkeypatch, capsys, [*argv, "--json"], tty=True)
    assert rc == 0 and "exact PLD passes" not in err_json
    json.loads(out_json)


def test_the_fresh_projection_audit_bar_counts_every_pld_pass() -> None:
    """d2p2sgd's audit tries several sensitivities: the bar's total is set to all their passes."""
    import numpy as np

    from accounting.audit.d2p2 import fresh_projection_epsilon_lower

    class Bar:
        total, done = 2, 0

        def update(self, n: int) -> None:
            self.done += n

        def refresh(self) -> None:
            pass

    bar = Bar()
    eps, _, _ = fresh_projection_epsilon_lower(
        0.02, np.array([2.0]), np.array([20]), 1e-5, 1000, progress=bar
    )
    assert eps > 0 and bar.total == bar.done == 12  # six sensitivities, two directions each
