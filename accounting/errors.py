"""Exceptions the accountant raises for bad input.

They carry the name of the offending parameter (as the CLI spells it, e.g. ``--eps``; the
public Python functions respell it as the keyword, e.g. ``eps``: :func:`python_names`)
so that every front end can print one line naming the option and what is allowed.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class InvalidParameter(ValueError):
    """A parameter is outside its allowed range, NaN, or of the wrong kind.

    Args:
        option: the parameter named in the message, in the CLI spelling (``--eps``); the public
            Python functions respell it as their keyword (``eps``).
        message: what is allowed.
    """

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}")


class UnreachableTarget(InvalidParameter):
    """A calibration target that no finite value of the calibrated parameter can reach.

    Args:
        option: the target's option (e.g. ``--eps``).
        message: why no value reaches it.
    """


class NotCertified(InvalidParameter):
    """A certified number was requested where no defensible upper bound is implemented.

    Args:
        option: the option that asked for the certified number (e.g. ``--mode``).
        message: what is missing.
    """


# --- one spelling per front end ----------------------------------------------------------------
# The accounting layer names options as the command line spells them (``--sample-rate``).  A
# Python caller passed ``sample_rate=``: the public Python functions (dptheory.api, RdpAccountant)
# are wrapped by :func:`python_names`, which respells the error unless the command line is the
# caller (it runs inside :func:`cli_spelling`).  One translation, in one place.

_CLI_SPELLING: contextvars.ContextVar[bool] = contextvars.ContextVar("dptheory_cli_spelling", default=False)
_OPTION = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


@contextlib.contextmanager
def cli_spelling() -> Iterator[None]:
    """Inside this block errors keep the command line's ``--option`` spelling."""
    token = _CLI_SPELLING.set(True)
    try:
        yield
    finally:
        _CLI_SPELLING.reset(token)


def python_name(option: str, renames: Mapping[str, str] | None = None) -> str:
    """``--sample-rate`` -> ``sample_rate`` (``renames`` maps a CLI option to another keyword)."""
    if renames and option in renames:
        return renames[option]
    m = _OPTION.fullmatch(option)
    return m.group(1).replace("-", "_") if m else option


def respelled(err: InvalidParameter, renames: Mapping[str, str] | None = None) -> InvalidParameter:
    """The same error (same class) naming Python keywords: ``--steps`` -> ``steps`` in the option
    and ``steps=`` in the message."""

    def keyword(m: re.Match[str]) -> str:
        return python_name(m.group(0), renames) + "="

    new = type(err).__new__(type(err))
    InvalidParameter.__init__(new, python_name(err.option, renames), _OPTION.sub(keyword, err.message))
    new._python = True  # type: ignore[attr-defined]
    return new


#: CLI option -> the Python keywords that stand for it (an alias, or the in-memory form of a file).
#: The accounting layer only knows the option; a caller who passed the alias (and not the keyword
#: itself) is told the name they typed.
ALIASES: Mapping[str, tuple[str, ...]] = {
    "--c1": ("max_grad_norm",),
    "--conversion": ("method",),
    "--schedule-file": ("schedule_values",),
}


def _renames_for_call(renames: Mapping[str, str], kwargs: Mapping[str, Any]) -> dict[str, str]:
    """``renames`` plus each alias the caller used instead of the keyword it stands for."""
    out = dict(renames)
    for option, aliases in ALIASES.items():
        if option in out or kwargs.get(python_name(option)) is not None:
            continue
        used = [a for a in aliases if kwargs.get(a) is not None]
        if used:
            out[option] = used[0]
    return out


def python_names(fn: Callable[P, R] | None = None, /, **renames: str) -> Any:
    """Decorator for public Python functions: :class:`InvalidParameter` names Python keywords.

    ``@python_names(**{"--steps": "count"})`` maps an option to a differently named keyword; an
    alias the caller passed (:data:`ALIASES`, e.g. ``max_grad_norm`` for ``--c1``) is named as typed."""

    def wrap(f: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(f)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return f(*args, **kwargs)
            except InvalidParameter as err:
                if _CLI_SPELLING.get() or getattr(err, "_python", False):
                    raise
                raise respelled(err, _renames_for_call(renames, kwargs)) from None

        return inner

    return wrap if fn is None else wrap(fn)
