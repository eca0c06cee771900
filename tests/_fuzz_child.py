"""The child side of tests/cli/test_cli_fuzz.py's harness, in its own module.

A forkserver child imports the module that defines its target. Kept apart from the test module so
that a child does not re-run the test module's import-time set-up (it builds temporary files).
"""

from __future__ import annotations

import os
import sys


def run_child(
    argv: list[str], out_path: str, err_path: str, memory_limit: int, encoding: str = "utf-8"
) -> None:
    """Run ``dptheory argv`` with stdout/stderr to files under a memory cap; exit with its code.

    ``encoding`` is the streams' encoding (``ascii`` plays a terminal with PYTHONIOENCODING=ascii)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    out_fd = os.open(out_path, os.O_WRONLY | os.O_TRUNC)
    err_fd = os.open(err_path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    sys.stdout = open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding=encoding, closefd=False)  # noqa: SIM115
    rc = 0
    try:
        from dptheory.cli.main import main

        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - exactly what the contract forbids: record it
        import traceback

        traceback.print_exc()
        rc = 99
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(int(rc) & 0xFF)
