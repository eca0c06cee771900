"""Entry point of the ``dptheory`` console script.

Each subcommand lives in its own module exposing ``register(subparsers)`` and
``run(args) -> int``; modules keep heavy imports (torch, sympy, matplotlib) inside ``run``
so that ``dptheory calibrate`` starts fast.

Every bad input ends the same way: one line on stderr naming the option and what is
allowed, exit status 2, no traceback.  Every subcommand takes ``--timeout SECONDS``: work still
running then stops with one line on stderr and exit status 3 (files are written atomically, so
nothing half-written is left).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from accounting.errors import InvalidParameter, cli_spelling
from dptheory.extras import MissingExtra, missing_extra_message

SUBCOMMANDS = ("calibrate", "epsilon", "audit", "audit-run", "run", "verify", "figures")


class UsageError(InvalidParameter):
    """Bad command-line input that is not a parameter range (e.g. an unreadable file)."""


class CommandTimeout(BaseException):
    """Raised by the ``--timeout`` alarm inside whatever the command is doing (a BaseException,
    so that handlers which catch Exception to report a crashed check do not swallow it)."""


EXIT_TIMEOUT = 3
#: The largest --timeout (about 3 years): setitimer's time_t overflows at 1e10 s.
MAX_TIMEOUT_S = 1e8


#: An error line echoes at most this many characters of any one word (a bad value of 1e7 digits).
ECHO_CHARS = 80
_LONG_WORD = re.compile(r"\S{" + str(ECHO_CHARS + 1) + ",}")


def shorten(message: str) -> str:
    """``message`` on one line, each word over :data:`ECHO_CHARS` characters cut to its head and
    tail with the count left out (so a giant value is still recognisable, never megabytes long)."""

    def cut(m: re.Match) -> str:
        w = m.group(0)
        return f"{w[: ECHO_CHARS - 20]}...[{len(w) - ECHO_CHARS + 10} chars]...{w[-10:]}"

    return _LONG_WORD.sub(cut, " ".join(message.splitlines()))


class OneLineParser(argparse.ArgumentParser):
    """argparse with three changes: an error is one line and exit 2 (argparse prints the usage
    too); an option's name must be spelt out (``--del`` is not ``--delta``: a prefix silently
    changes meaning when an option is added); an option that takes a value may be given once
    (argparse keeps the last, so ``... --delta 1e-5 --delta 0.5`` would quietly use 0.5)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {shorten(message)}\n")
        raise SystemExit(2)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._check_option_names(sys.argv[1:] if args is None else list(args))
        return super().parse_known_args(args, namespace)

    def _check_option_names(self, args: list[str]) -> None:
        """One error line for a prefix of an option's name, and for an option with a value given
        twice under any of its names (the tokens up to ``--``; a subcommand's options are checked
        by the subcommand's parser, which sees them before argparse reports a missing one)."""
        seen: dict[str, str] = {}
        commands = self._subparsers._group_actions[0].choices if self._subparsers else {}
        for token in args:
            if token == "--" or token in commands:  # the subcommand's parser checks the rest
                break
            name = token.split("=", 1)[0] if token.startswith("--") else token
            action = self._option_string_actions.get(name)
            if action is None and name.startswith("--") and len(name) > 2:
                near = sorted(o for o in self._option_string_actions if o.startswith(name))
                if near:  # argparse would first complain about a required option it never saw
                    guess = " or ".join(near[:3])
                    self.error(f"unknown option {name}: options are spelt in full (did you mean {guess}?)")
            if not isinstance(action, argparse._StoreAction):
                continue
            if action.dest in seen:
                also = "" if seen[action.dest] == name else f" (as {seen[action.dest]} and {name})"
                self.error(
                    f"argument {name}: given more than once{also}; give it once (the last would silently win)"
                )
            seen[action.dest] = name


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="dptheory",
        description="Privacy accounting and theory verification for private optimizers.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    from dptheory.cli.numbers import number

    for name in SUBCOMMANDS:
        module = importlib.import_module(f"dptheory.cli.{name.replace('-', '_')}_cmd")
        module.register(sub)
        sub.choices[name].add_argument(
            "--timeout",
            type=number,
            metavar="SECONDS",
            help="stop cleanly (exit 3, one line on stderr) if the work takes longer (default: no limit)",
        )
    return parser


def _arm_timeout(seconds: float | None) -> None:
    """SIGALRM after ``seconds`` raises CommandTimeout in the main thread (POSIX)."""
    if seconds is None:
        return
    import signal

    from accounting import validate

    seconds = validate.positive("--timeout", seconds)
    if seconds > MAX_TIMEOUT_S:  # setitimer overflows time_t beyond ~1e9 s on some platforms
        raise InvalidParameter("--timeout", f"must be at most {MAX_TIMEOUT_S:.0e} s (got {seconds:.3g})")
    deferred = [0]
    armed_in = sys._getframe(1)  # the caller's frame: imports outside it are not ours to wait for

    def _expire(signum, frame):  # noqa: ARG001
        # An exception raised while a module initialises can cross C++ (torch's import): pybind11
        # then calls std::terminate and the process aborts.  Defer while this thread is inside an
        # import started below the caller, re-checking every 50 ms, at most _IMPORT_GRACE_S.
        if _importing(frame, armed_in) and deferred[0] * _IMPORT_RECHECK_S < _IMPORT_GRACE_S:
            deferred[0] += 1
            signal.setitimer(signal.ITIMER_REAL, _IMPORT_RECHECK_S)
            return
        # Raised inside a weakref callback or a __del__, the exception is printed as "ignored" and
        # lost, and the command would run on unbounded: fire again until one reaches main().
        signal.setitimer(signal.ITIMER_REAL, _REFIRE_S)
        raise CommandTimeout()

    signal.signal(signal.SIGALRM, _expire)
    _PREVIOUS_UNRAISABLE_HOOK.append(sys.unraisablehook)
    sys.unraisablehook = _ignore_lost_timeouts
    signal.setitimer(signal.ITIMER_REAL, seconds)


_PREVIOUS_UNRAISABLE_HOOK: list = []


def _ignore_lost_timeouts(unraisable) -> None:
    """``sys.unraisablehook`` while a ``--timeout`` is armed.  A CommandTimeout raised inside a weakref
    callback or a ``__del__`` is lost by design (the alarm fires again, :func:`_arm_timeout`); the
    default hook would print it as "Exception ignored ... Traceback" and break the one-line error.
    Any other unraisable exception goes to the hook that was in place."""
    if isinstance(unraisable.exc_value, CommandTimeout):
        return
    # (armed again before a disarm, e.g. nested main() calls: skip our own entries)
    hooks = [h for h in _PREVIOUS_UNRAISABLE_HOOK if h is not _ignore_lost_timeouts]
    (hooks[-1] if hooks else sys.__unraisablehook__)(unraisable)


_IMPORT_RECHECK_S = 0.05
_REFIRE_S = 1.0
_IMPORT_GRACE_S = 30.0


def _importing(frame, stop) -> bool:
    """Is there an import machinery frame between ``frame`` and ``stop`` (exclusive)?  Only this
    thread's stack is read, and no module attribute is touched (a lazy module would load)."""
    f = frame
    while f is not None and f is not stop:
        if f.f_code.co_filename.startswith("<frozen importlib"):
            return True
        f = f.f_back
    return False


def _disarm_timeout() -> None:
    import signal

    signal.setitimer(signal.ITIMER_REAL, 0)
    if _PREVIOUS_UNRAISABLE_HOOK:
        sys.unraisablehook = _PREVIOUS_UNRAISABLE_HOOK.pop()


def _version() -> str:
    from dptheory import __version__

    return f"dptheory {__version__}"


def _tolerant_streams() -> None:
    """Characters the terminal's encoding lacks ('§' under PYTHONIOENCODING=ascii) are escaped,
    never a UnicodeEncodeError halfway through the output."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream: nothing to protect
                pass


@contextlib.contextmanager
def _quiet_numerics() -> Iterator[None]:
    """Drop numpy's RuntimeWarnings (overflow, divide by zero) raised in our own numeric code.

    Python prints each with its source line, which breaks the one-line output contract, and they
    say nothing to a user: every result is checked for inf and NaN where it is used (an order
    whose RDP overflows is dropped and reported, an infinite epsilon is printed as inf).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(accounting|dptheory)(\.|$)")
        yield


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None or sys.stdout.closed:  # started with stdout closed: the result would be lost
        if sys.stderr is not None and not sys.stderr.closed:
            sys.stderr.write("dptheory: error: standard output is closed; the result would be lost\n")
        return 2
    _tolerant_streams()
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed on one line
        return exc.code if isinstance(exc.code, int) else 2
    try:
        _arm_timeout(getattr(args, "timeout", None))
        try:
            with cli_spelling(), _quiet_numerics():  # errors name --options, not the Python keywords
                return int(args.handler(args) or 0)
        finally:
            _disarm_timeout()
    except CommandTimeout:
        sys.stderr.write(
            f"dptheory {args.command}: error: --timeout: stopped after {args.timeout:g} s without a result; "
            "raise --timeout or ask for less work\n"
        )
        return EXIT_TIMEOUT
    except InvalidParameter as exc:
        sys.stderr.write(f"dptheory {args.command}: error: {shorten(str(exc))}\n")
        return 2
    except MissingExtra as exc:
        sys.stderr.write(f"dptheory {args.command}: error: {exc}\n")
        return 2
    except ModuleNotFoundError as exc:
        # An optional dependency imported deeper than the command's own require_extra check: still
        # one line naming the extra.  Any other missing module is a broken installation: re-raised.
        message = missing_extra_message(exc.name)
        if message is None:
            raise
        sys.stderr.write(f"dptheory {args.command}: error: {message}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("dptheory: interrupted\n")
        return 130
    except BrokenPipeError:
        # `dptheory ... | head`: the reader left; silence the flush at exit as well.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:
        # An input or output path that failed after the up-front checks (disk full, a file that
        # vanished): still one line, never a traceback.
        what = f"cannot access '{exc.filename}'" if exc.filename else _unnamed_failure(exc)
        sys.stderr.write(f"dptheory {args.command}: error: {what}: {exc.strerror or exc}\n")
        return 2


def _unnamed_failure(exc: OSError) -> str:
    """What an OSError without a file name failed on.  A write to an open stream (standard output
    under ``> /dev/full``, a report file as the disk fills) raises one with no name: it is told
    apart by an errno that only a write raises, and named as the output."""
    import errno

    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):  # only writes fail so (not EIO)
        return "cannot write the output"
    return "cannot access a file or stream"


if __name__ == "__main__":
    sys.exit(main())
