"""Imported once by the forkserver of ``dptheory verify --jobs N``, before any worker forks.

Every worker needs the claim modules and most of them torch, sympy, scipy, mpmath and
hypothesis; importing them here, once, lets each forked worker share them instead of paying
about 2 s of CPU per library set per worker (``spawn`` would re-import everything in each).
Nothing here runs a computation: no torch thread pool or CUDA context exists before the fork.
"""

from __future__ import annotations

import hypothesis  # noqa: F401
import mpmath  # noqa: F401
import scipy.optimize  # noqa: F401
import scipy.special  # noqa: F401
import scipy.stats  # noqa: F401
import sympy  # noqa: F401
import torch  # noqa: F401

from verification import registry

registry.CLAIMS  # noqa: B018 - load every claim module now (the registry builds CLAIMS on access)
