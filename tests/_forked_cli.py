"""Run ``dptheory ARGV`` in a child process forked from a preloaded ``forkserver``.

A child of the server is a real process (its own exit status, its own file descriptors 1 and 2,
written to files), so a command's crash, hang, ``os._exit`` or closed stdout stays in the child,
as it would for a user.  What it skips is the interpreter start and the imports of
``dptheory.cli.main`` and the accounting modules, about 1 s of CPU per command: the server
imports them once per test session.  Tests about the interpreter itself (the console script,
``python -m``, an environment variable read at start-up) still start ``python``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

from tests._fuzz_child import run_child

HANG_S = 40.0
MEMORY_LIMIT = 6 << 30

#: imported once in the server, so that no child pays for them: the command line and the accounting
#: modules, and what the privacy subcommands import lazily (scipy, dp-accounting's PLD).  Not torch: a
#: server holding it makes every fork and exit dearer (~0.1 s of CPU per child) than the few ``run``
#: commands would save.
PRELOAD = [
    "dptheory.cli.main",
    "dptheory.api",
    "accounting.algorithms.registry",
    "dptheory.cli.calibrate_cmd",
    "dptheory.cli.epsilon_cmd",
    "dptheory.cli.audit_cmd",
    "dptheory.cli.run_cmd",
    "dptheory.cli.verify_cmd",
    "accounting.calibration",
    "scipy.integrate",
    "scipy.optimize",
    "scipy.stats",
    "dp_accounting.pld",
]

_CTX = None


def _ctx():
    global _CTX
    if _CTX is None:
        _CTX = mp.get_context("forkserver")
        _CTX.set_forkserver_preload(PRELOAD)
    return _CTX


def run_cli(
    argv: list[str], *, hang_s: float = HANG_S, encoding: str = "utf-8"
) -> tuple[int | None, str, str, float]:
    """(exit code or None on a hang, stdout, stderr, seconds); ``encoding`` is the child's streams'."""
    with tempfile.TemporaryDirectory() as d:
        out_p, err_p = os.path.join(d, "out"), os.path.join(d, "err")
        Path(out_p).touch()
        Path(err_p).touch()
        proc = _ctx().Process(target=run_child, args=(argv, out_p, err_p, MEMORY_LIMIT, encoding))
        t0 = time.monotonic()
        proc.start()
        proc.join(hang_s)
        rc: int | None = proc.exitcode
        if proc.is_alive():
            proc.kill()
            proc.join()
            rc = None
        elapsed = time.monotonic() - t0
        return rc, Path(out_p).read_text(errors="replace"), Path(err_p).read_text(errors="replace"), elapsed
