"""``--timeout`` still stops a command when its first alarm lands where Python swallows exceptions
(a weakref callback, a ``__del__``: printed as "Exception ignored", then lost).  Seen in
``dptheory figures --timeout 2``: the alarm hit a WeakKeyDictionary callback and the command ran on."""

from __future__ import annotations

import gc
import signal
import sys
import time
import weakref

import pytest

from dptheory.cli import main as cli_main


class _Obj:
    pass


def test_a_swallowed_alarm_fires_again(monkeypatch: pytest.MonkeyPatch) -> None:
    swallowed = []
    printed = []  # what reaches sys.unraisablehook (by default: "Exception ignored ... Traceback")
    monkeypatch.setattr(sys, "unraisablehook", printed.append)

    def callback(_ref) -> None:
        # busy here until the alarm interrupts this callback: its CommandTimeout is "ignored"
        t = time.perf_counter()
        swallowed.append(False)
        while time.perf_counter() - t < 3.0:
            pass
        swallowed[-1] = True  # not reached when the alarm interrupted the loop

    old = signal.getsignal(signal.SIGALRM)
    obj = _Obj()
    ref = weakref.ref(obj, callback)
    start = time.perf_counter()
    try:
        cli_main._arm_timeout(0.1)
        try:
            del obj
            gc.collect()  # runs the callback (CPython frees obj at once; collect for others)
            # the command "runs on": short sleeps, not a busy loop, so the 1 s wait for the re-fired
            # alarm costs no CPU (a signal's handler runs, and raises, as soon as a sleep is interrupted)
            while time.perf_counter() - start < 10.0:
                time.sleep(0.005)
            stopped_after = None
        except cli_main.CommandTimeout:
            stopped_after = time.perf_counter() - start
    finally:
        cli_main._disarm_timeout()
        signal.signal(signal.SIGALRM, old)
    assert ref() is None and swallowed == [False]  # the first alarm fired inside the callback
    assert printed == []  # lost on purpose (it fires again): not printed as a traceback
    assert sys.unraisablehook == printed.append  # disarming put the hook back
    assert stopped_after is not None and stopped_after < 0.1 + cli_main._REFIRE_S + 1.0


def test_other_lost_exceptions_still_reach_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the timeout's own exception is silenced while a timeout is armed."""
    printed = []
    monkeypatch.setattr(sys, "unraisablehook", printed.append)

    def callback(_ref) -> None:
        raise ValueError("a real bug in a callback")

    old = signal.getsignal(signal.SIGALRM)
    obj = _Obj()
    ref = weakref.ref(obj, callback)
    try:
        cli_main._arm_timeout(60.0)
        del obj
        gc.collect()
    finally:
        cli_main._disarm_timeout()
        signal.signal(signal.SIGALRM, old)
    assert ref() is None and [type(u.exc_value) for u in printed] == [ValueError]
