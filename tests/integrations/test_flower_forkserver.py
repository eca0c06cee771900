"""The warm flwr-clientapp server: the shim's arguments, file descriptors and exit status reach a
forked child and come back; the server is stopped with the run's process group (no leftovers)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from dptheory.integrations.flower import forkserver
from dptheory.integrations.flower.launch import RUN_MARKER, ProcessGroup, child_env, processes_of_run


def fake_entry() -> None:
    """Stands in for flwr's ``flwr_clientapp``: echo argv and stdin, exit with argv[1]."""
    data = sys.stdin.read()
    print("child", os.getpid(), sys.argv[0], sys.argv[1:], data.strip())
    print("to stderr", file=sys.stderr)
    raise SystemExit(int(sys.argv[1]))


def test_shim_runs_a_forked_child_with_its_fds_and_status() -> None:
    with tempfile.TemporaryDirectory(prefix="dptheory-fs-") as wd:
        sock = os.path.join(wd, "s.sock")
        group = ProcessGroup(wd)
        env = child_env({RUN_MARKER: wd})
        try:
            server = group.start(
                "forkserver",
                [
                    sys.executable,
                    "-m",
                    "dptheory.integrations.flower.forkserver",
                    sock,
                    "--entry=tests.integrations.test_flower_forkserver:fake_entry",
                ],
                env,
                cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
            )
            deadline = time.monotonic() + 60
            while not os.path.exists(sock):
                assert server.poll() is None, group.log_tail("forkserver")
                assert time.monotonic() < deadline
                time.sleep(0.05)
            shim = forkserver.write_shim(os.path.join(wd, "bin"), sock)
            outs = [
                subprocess.run(
                    [shim, str(code), "--token", "x"],
                    input=f"in{code}",
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                for code in (0, 3)
            ]
            for code, out in zip((0, 3), outs, strict=True):
                assert out.returncode == code
                assert f"flwr-clientapp ['{code}', '--token', 'x'] in{code}" in out.stdout
                assert out.stderr.strip() == "to stderr"
            pids = {int(o.stdout.split()[1]) for o in outs}
            assert len(pids) == 2 and server.pid not in pids  # one fresh child per request
            assert processes_of_run(wd)  # the server is alive while the run is
        finally:
            group.stop()
        assert processes_of_run(wd) == []
