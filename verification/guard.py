"""Run a user's code (``verify --claims-file``: its import, ``CLAIMS()`` and each check) so that it
cannot corrupt the command's output or exit status.

* ``print()`` (anything written to ``sys.stdout``) is captured and replayed on stderr: stdout carries
  only the report (``--json`` stays valid JSON);
* ``sys.exit(n)`` raises :class:`UserExit` (an ``Exception``) instead of ending the command with exit
  ``n`` -- which the CLI's contract reserves (3 = timeout);
* ``os._exit(n)`` is replaced, for the duration, by a function raising :class:`UserExit`: otherwise
  the process would end at once with status ``n`` and an empty report (``os._exit(0)`` would fake
  success).  Only Python-level calls are caught; code that ends the process from C (or kills it)
  still ends it, with the exit status it chose -- a claims file is trusted code, this guards against
  mistakes, not against an adversary.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator


class UserExit(Exception):  # noqa: N818 - it is what happened, not an error class hierarchy
    """User code asked to end the process (sys.exit or os._exit)."""


def _no_os_exit(status: int = 0) -> None:
    raise UserExit(f"os._exit({status}) called")


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """Capture stdout to stderr, turn ``sys.exit`` / ``os._exit`` into :class:`UserExit`."""
    buf = io.StringIO()
    real_exit = os._exit
    os._exit = _no_os_exit  # type: ignore[assignment]
    try:
        with contextlib.redirect_stdout(buf):
            try:
                yield
            except SystemExit as exc:
                raise UserExit(f"sys.exit({exc.code!r}) called") from None
    finally:
        os._exit = real_exit  # type: ignore[assignment]
        text = buf.getvalue() if not buf.closed else ""
        if text:
            try:
                sys.stderr.write(text if text.endswith("\n") else text + "\n")
            except (OSError, ValueError):
                pass
