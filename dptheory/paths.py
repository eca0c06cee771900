"""Checking, before any long work, that an output directory can really be written.

``os.access`` answers from permission bits only: it says yes under ``/proc``, on read-only
mounts and for root everywhere, and the run then dies at its very end. Creating (and removing)
a temporary file is the test that matches what the writer will do.
"""

from __future__ import annotations

import os
import tempfile

from accounting.errors import InvalidParameter


def probe_writable_dir(option: str, directory: str) -> None:
    """Raise ``InvalidParameter(option, ...)`` unless a file can be created in ``directory``."""
    if not os.path.isdir(directory):
        raise InvalidParameter(option, f"directory does not exist: {directory}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".dptheory-probe-", dir=directory)
    except OSError as exc:
        raise InvalidParameter(option, f"cannot write into {directory}: {exc.strerror}") from None
    os.close(fd)
    os.unlink(probe)
