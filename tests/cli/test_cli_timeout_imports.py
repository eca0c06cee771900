"""``--timeout`` never fires inside a module import (an exception raised while torch initialises
can cross C++ and abort the process: pybind11 calls std::terminate)."""

from __future__ import annotations

import importlib
import signal
import sys
import time

import pytest

from dptheory.cli import main as cli_main


def test_timeout_waits_for_a_running_import(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "slow_import_mod.py").write_text(
        "import time\nt = time.perf_counter()\n"
        "while time.perf_counter() - t < 0.3:\n    pass\n"
        "finished = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    old = signal.getsignal(signal.SIGALRM)
    try:
        cli_main._arm_timeout(0.05)  # expires in the middle of the import
        with pytest.raises(cli_main.CommandTimeout):
            importlib.import_module("slow_import_mod")
            time.sleep(2.0)  # the deferred timeout fires here, after the import
        assert sys.modules["slow_import_mod"].finished  # the import ran to its end
    finally:
        cli_main._disarm_timeout()
        signal.signal(signal.SIGALRM, old)
        sys.modules.pop("slow_import_mod", None)


def test_importing_is_false_outside_imports() -> None:
    assert not cli_main._importing(sys._getframe(), None)


def test_an_outer_import_does_not_delay_the_timeout(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    # review: the CLI run from inside an import (the caller's own import, not one the command
    # started) used to wait the whole 30 s grace; only imports below the arming frame count
    (tmp_path / "arms_inside_import.py").write_text(
        "import time\n"
        "from dptheory.cli import main as m\n"
        "def work():\n"
        "    m._arm_timeout(0.05)\n"
        "    t = time.perf_counter()\n"
        "    try:\n"
        "        while time.perf_counter() - t < 5.0:\n"
        "            pass\n"
        "    except m.CommandTimeout:\n"
        "        return time.perf_counter() - t\n"
        "    finally:\n"
        "        m._disarm_timeout()\n"
        "elapsed = work()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    old = signal.getsignal(signal.SIGALRM)
    try:
        mod = importlib.import_module("arms_inside_import")
        assert mod.elapsed is not None and mod.elapsed < 1.0
    finally:
        signal.signal(signal.SIGALRM, old)
        sys.modules.pop("arms_inside_import", None)
