"""``dptheory verify --jobs N``: worker processes change the speed, never the results.

* the same claims give the same verdicts, summaries and evidence with 2 workers as in-process,
  premises outside the selection included (they run, and are not returned);
* bad ``--jobs`` values are one stderr line naming ``--jobs``, exit status 2;
* ``--timeout`` and SIGTERM end the run with every worker process gone (read from /proc).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_FILE = ROOT / "examples" / "claims" / "gaussian_mechanism.py"
# a premise chain reaching outside the selection (clip21.thm5 <- lemma5 <- lemma3), plus claims
# of the other papers, all quick enough for the default suite
SUBSET = ["dicesgd.lemma-a5", "clip21.thm5", "clip21.lemma8", "d2p2.lemma3", "dicesgd.lemma-a6"]


def _without_timings(results) -> list[dict]:
    out = []
    for r in results:
        rec = r.to_json()
        rec.pop("seconds")
        for ev in rec["evidence"]:
            ev.pop("seconds")
        out.append(rec)
    return out


def test_two_workers_give_the_serial_results() -> None:
    from verification import registry
    from verification.engine import run_claims
    from verification.userfile import load_claims_file

    # built-in claims, then a user's claims file, which the workers load again by its path
    user = {c.id: c for c in load_claims_file(USER_FILE, builtin=registry.CLAIMS)}
    claims = [registry.CLAIMS[cid] for cid in SUBSET] + list(user.values())
    kw = dict(seed=0, quick=True, progress=False, extra=user, claims_file=str(USER_FILE))
    serial = run_claims(claims, jobs=1, **kw)
    parallel = run_claims(claims, jobs=2, **kw)
    # the order asked for, premises outside the selection not returned, the parent's claim objects
    assert [r.claim.id for r in parallel] == [c.id for c in claims]
    assert all(r.claim is c for r, c in zip(parallel, claims, strict=True))
    assert _without_timings(parallel) == _without_timings(serial)
    thm5 = parallel[1]
    assert [pid for pid, _ in thm5.premises] == list(registry.CLAIMS["clip21.thm5"].depends_on)


def test_default_jobs_counts_the_idle_cpus() -> None:
    from verification import registry
    from verification.parallel import busy_elsewhere, default_jobs

    every = list(registry.CLAIMS.values())
    cpus = len(os.sched_getaffinity(0))
    assert default_jobs(every, quick=True, busy=0) == min(cpus, len(every))
    assert default_jobs(every, quick=True, busy=cpus) == 1  # others use every CPU: in-process
    assert default_jobs(every, quick=True, busy=cpus - 1) == min(2, cpus)  # one idle CPU
    assert default_jobs(every[:1], quick=False, busy=0) == 1
    # a couple of cheap claims: starting workers would cost more than it saves
    cheap = [registry.CLAIMS["dicesgd.lemma-a1"], registry.CLAIMS["d2p2.lemma4"]]
    assert default_jobs(cheap, quick=True, busy=0) == 1
    assert busy_elsewhere(samples=2, interval_s=0.0) >= 0
    assert 1 <= default_jobs(every, quick=True) <= cpus


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", "nan"])
def test_bad_jobs_is_one_line_naming_the_option(value: str, capsys) -> None:
    from dptheory.cli.main import main

    assert main(["verify", "--claim", "clip21.lemma3", "--jobs", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--jobs" in err and "Traceback" not in err, err


def _descendants(pid: int) -> set[int]:
    """Processes below ``pid`` (from /proc): the forkserver, its workers, the resource tracker."""
    parent_of = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent_of[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parent_of.items() if pp in frontier} - out
        out |= frontier
    return out


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_slow_run(*extra: str) -> subprocess.Popen:
    # two claims that each take several seconds, so both workers are busy when the run is cut
    cmd = [sys.executable, "-m", "dptheory.cli.main", "verify", "--jobs", "2"]
    cmd += ["--claim", "dicesgd.lemma-a7", "--claim", "d2p2.lemma5", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _watch_workers(proc: subprocess.Popen, until) -> set[int]:
    """Poll ``proc``'s children until ``until(seen)`` holds or it exits; returns every pid seen."""
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline and not until(seen):
        seen |= _descendants(proc.pid)
        time.sleep(0.05)
    return seen


def _assert_all_gone(pids: set[int]) -> None:
    deadline = time.monotonic() + 10
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _running(p)], "worker processes outlived the run"


# Two claims whose checks sleep: both workers are inside a claim when the alarm fires, as with two
# slow built-in claims, but waiting costs no CPU (the SIGTERM test below runs real claims).
SLEEPING_CLAIMS = """from dptheory.claims import Check, Claim, Outcome, Verdict
import time

def _check(ctx):
    time.sleep(300)
    return Outcome(Verdict.CONFIRMED, "slept", "none", {})

CLAIMS = [Claim(id=f"user.sleep{i}", paper="user", location="here", statement="s", formula="f",
                assumptions=(), checks=(Check("c", "property", _check),)) for i in (1, 2)]
"""


def test_timeout_kills_the_workers(tmp_path) -> None:
    claims_file = tmp_path / "sleeping.py"
    claims_file.write_text(SLEEPING_CLAIMS)
    cmd = [sys.executable, "-m", "dptheory.cli.main", "verify", "--jobs", "2"]
    cmd += ["--claims-file", str(claims_file)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [*cmd, "--timeout", "8"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen = _watch_workers(proc, until=lambda seen: False)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert "--timeout" in err and "Traceback" not in err, err
    # the forkserver and the resource tracker alone are two: four means the two workers ran too
    assert len(seen) >= 4, "the workers never started: the test proved nothing"
    _assert_all_gone(seen)


@pytest.mark.slow  # the same clean-up path as --timeout's, with another 10 s of CPU
def test_sigterm_kills_the_workers() -> None:
    proc = _start_slow_run()
    # the forkserver, its two workers and multiprocessing's resource tracker
    seen = _watch_workers(proc, until=lambda seen: len([p for p in seen if _running(p)]) >= 4)
    time.sleep(1.0)  # let the workers get into their claims
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode in (143, -signal.SIGTERM), err
    assert "Traceback" not in err, err
    assert len(seen) >= 2, "the workers never started: the test proved nothing"
    _assert_all_gone(seen)
