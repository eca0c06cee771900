"""Optional dependencies: which pip extra provides which module, and one clear error when one is missing.

The base install is what calibration needs (numpy, scipy, dp-accounting, tqdm).  Everything else is
an extra declared in ``pyproject.toml``; this module is the one place that maps an importable module
to its extra, so that a command run without it stops with one line naming the extra to install
instead of a traceback.  It imports nothing optional itself (``importlib.util.find_spec`` locates a
module without executing it).
"""

from __future__ import annotations

import importlib.util

#: Top-level module -> the extra of ``pyproject.toml`` that installs it.
EXTRA_OF: dict[str, str] = {
    "torch": "torch",
    "sklearn": "torch",
    "sympy": "verify",
    "mpmath": "verify",
    "hypothesis": "verify",
    "matplotlib": "figures",
    "opacus": "opacus",
    "flwr": "flower",
}


class MissingExtra(ImportError):
    """An optional dependency is not installed; the message names the extra that provides it."""


def _install_hint(extras: list[str]) -> str:
    return f"pip install 'dptheory[{','.join(extras)}]'"


def _extras_for(modules: list[str]) -> list[str]:
    return sorted({EXTRA_OF[m] for m in modules})


def missing_extra_message(module: str | None) -> str | None:
    """The one-line message for a failed import of ``module``, or None if no extra provides it.

    Args:
        module: the dotted name from ``ModuleNotFoundError.name`` (only its top level matters).

    Returns:
        e.g. ``"torch is not installed: pip install 'dptheory[torch]'"``, or None for a module
        that is not optional (its absence is an installation error, reported as such).
    """
    top = (module or "").partition(".")[0]
    if top not in EXTRA_OF:
        return None
    return f"{top} is not installed: {_install_hint([EXTRA_OF[top]])}"


def require_extra(*modules: str) -> None:
    """Check, without importing them, that optional ``modules`` are installed.

    Args:
        modules: top-level module names, each a key of :data:`EXTRA_OF`.

    Raises:
        MissingExtra: naming every missing module and one ``pip install`` line for their extras.
        KeyError: a module that no extra provides (a programming error).
    """
    missing = []
    for name in modules:
        if name not in EXTRA_OF:
            raise KeyError(f"{name!r} is not an optional module")
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a finder that refuses it, or a stub in sys.modules
            found = False
        if not found:
            missing.append(name)
    if missing:
        names = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
        verb = "is" if len(missing) == 1 else "are"
        raise MissingExtra(f"{names} {verb} not installed: {_install_hint(_extras_for(missing))}")
