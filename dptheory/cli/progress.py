"""Progress bars of the slow commands: on a terminal only, and never with ``--json``.

tqdm (a dependency) is imported only when a bar is shown: its import costs about as much as a
static calibration, and ``dptheory --help`` must stay light.  The bar goes to stderr and is
erased when done (``leave=False``), so stdout is exactly the command's result.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any


def wanted(args: Any) -> bool:
    """A bar only when stderr is a terminal and the output is not machine-read (``--json``)."""
    return not getattr(args, "json", False) and sys.stderr.isatty()


def bar(args: Any, **tqdm_kwargs: Any) -> contextlib.AbstractContextManager[Any]:
    """``with bar(args, desc=..., total=...) as b``: a tqdm bar, or ``None`` where none is wanted."""
    if not wanted(args):
        return contextlib.nullcontext(None)
    from tqdm import tqdm

    return tqdm(file=sys.stderr, leave=False, dynamic_ncols=True, **tqdm_kwargs)
