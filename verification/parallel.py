"""Run claims in worker processes (``dptheory verify --jobs N``).

Each claim runs whole in one worker, exactly as :meth:`Claim.run` runs it in-process: the worker
looks the claim up by id (built-in registry, or the same ``--claims-file``), receives its
premises' verdicts, and sends back its check results. Nothing else crosses the process boundary,
so a claim's result cannot depend on which other claims ran before it in the same process (the
memo caches are per process and only ever hold values a claim would recompute identically).

Scheduling: a claim is submitted once all its premises (``depends_on``) have finished; among the
claims ready to run, the one heading the longest remaining chain of estimated cost goes first
(:mod:`verification.claim_costs`), and at most ``jobs`` claims are in flight, so the order is
decided here and not by the pool's FIFO queue. Results are returned in the order asked for.

Workers are forked by a ``forkserver`` (never from this process: torch is not fork-safe once it
has run) that imported the claim modules and the heavy libraries once
(:mod:`verification._forkserver_preload`), so the workers do not each pay for those imports.
They run with one BLAS/OpenMP/torch thread each (``jobs`` processes already use the cores),
ignore SIGINT and die with their parent (``PR_SET_PDEATHSIG`` on Linux). When the run is
interrupted (``--timeout``'s alarm, Ctrl-C, SIGTERM) every worker is killed before the exception
propagates, so none is left behind.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from verification.claim import CheckResult, Claim, ClaimResult, Context, Verdict

#: Thread-count variables set for the workers: ``jobs`` single-threaded processes use the cores
#: without oversubscribing them (torch reads OMP_NUM_THREADS when it is imported).
_ONE_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


#: Below this many estimated seconds of claims, starting workers (a forkserver importing torch,
#: sympy and the claim modules: about 6 s of CPU) costs more than it saves: run in-process.
MIN_PARALLEL_S = 10.0


def usable_cpus() -> int:
    """The CPUs this process may use (its affinity mask)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def busy_elsewhere(samples: int = 5, interval_s: float = 0.04) -> float:
    """Runnable tasks other than this one right now (median of a few reads of /proc/loadavg).

    The kernel shares the CPUs between sessions (autogroup), so workers only add speed where
    cores are idle; the 1-minute load average would also count this session's previous run.
    Returns 0 where /proc/loadavg cannot be read.
    """
    import statistics
    import time

    counts = []
    for i in range(samples):
        try:
            with open("/proc/loadavg") as fh:
                running = int(fh.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return 0.0
        counts.append(max(0, running - 1))  # the reader itself is running
        if i + 1 < samples:
            time.sleep(interval_s)
    return float(statistics.median(counts))


def default_jobs(claims: Sequence[Claim], quick: bool, *, busy: float | None = None) -> int:
    """``--jobs`` when not given: one more than the idle CPUs, at most the usable CPUs and one
    per claim; 1 (in-process) when the claims' estimated run time is under :data:`MIN_PARALLEL_S`.

    ``busy`` is the number of tasks running elsewhere (default: :func:`busy_elsewhere`). On a
    machine that others keep busy, two workers get the CPU share one process would get and pay
    for their start-up: measured slower than in-process, hence the idle count.
    """
    from verification.claim_costs import estimated_seconds

    if len(claims) < 2:
        return 1
    if sum(estimated_seconds(c.id, len(c.checks), quick) for c in claims) < MIN_PARALLEL_S:
        return 1
    cpus = usable_cpus()
    idle = cpus - (busy_elsewhere() if busy is None else busy)
    return max(1, min(cpus, len(claims), int(idle) + 1))


def _worker_init() -> None:
    """Set up one worker: die with its parent, leave Ctrl-C to the main process, one thread."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent_pid = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect: nobody to serve
        os._exit(1)
    if "torch" in sys.modules:  # else OMP_NUM_THREADS=1 applies when a check imports it
        sys.modules["torch"].set_num_threads(1)


_USER_CLAIMS: dict[str, dict[str, Claim]] = {}


def _lookup(claim_id: str, claims_file: str) -> Claim:
    """The claim with this id in the worker: the user's file first (loaded once), then the registry."""
    from verification import registry

    if claims_file:
        if claims_file not in _USER_CLAIMS:
            from verification.userfile import load_claims_file

            claims = load_claims_file(claims_file, builtin=registry.CLAIMS)
            _USER_CLAIMS[claims_file] = {c.id: c for c in claims}
        if claim_id in _USER_CLAIMS[claims_file]:
            return _USER_CLAIMS[claims_file][claim_id]
    return registry.CLAIMS[claim_id]


def _run_in_worker(
    claim_id: str, seed: int, quick: bool, claims_file: str, premises: dict[str, Verdict]
) -> tuple[tuple[CheckResult, ...], tuple[tuple[str, Verdict], ...]]:
    """Run one claim; only its check results and premises travel back (the claim stays here)."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    claim = _lookup(claim_id, claims_file)
    ctx = Context(seed=seed, quick=quick, claims_file=claims_file)
    r = claim.run(ctx, premises=premises)
    return r.checks, r.premises


def _needed(claims: Sequence[Claim], resolve: Callable[[str], Claim]) -> dict[str, Claim]:
    """The claims asked for plus every premise they reach; raises on a circular ``depends_on``."""
    out: dict[str, Claim] = {}

    def visit(c: Claim, stack: tuple[str, ...]) -> None:
        for pid in c.depends_on:
            if pid in stack:
                raise RuntimeError(f"circular depends_on: {' -> '.join(stack + (pid,))}")
            visit(resolve(pid), stack + (pid,))
        out.setdefault(c.id, c)

    for c in claims:
        visit(c, (c.id,))
    return out


def _priorities(needed: Mapping[str, Claim], quick: bool) -> dict[str, float]:
    """Each claim's estimated cost plus the costliest chain of claims waiting on it."""
    from verification.claim_costs import estimated_seconds

    dependents: dict[str, list[str]] = {cid: [] for cid in needed}
    for cid, c in needed.items():
        for pid in c.depends_on:
            dependents[pid].append(cid)
    prio: dict[str, float] = {}

    def rank(cid: str) -> float:
        if cid not in prio:
            own = estimated_seconds(cid, len(needed[cid].checks), quick)
            prio[cid] = own + max((rank(d) for d in dependents[cid]), default=0.0)
        return prio[cid]

    for cid in needed:
        rank(cid)
    return prio


def _forkserver_context():
    """The ``forkserver`` start method, its server preloading what every worker imports.

    The server starts on the first worker (inheriting the one-thread environment set around
    the pool) and is stopped at the end of the run (:func:`_stop_forkserver`).
    """
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["verification._forkserver_preload"])
    return ctx


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """Kill every worker now, and the forkserver with any child it is still setting up.

    The run was cut short (timeout, Ctrl-C, SIGTERM), possibly while a worker was being forked:
    such a child is not yet in the pool's table, so the forkserver is frozen first and its
    children are read from /proc. The pool and the forkserver offer no public way to do this;
    :func:`_stop_forkserver` then reaps it.
    """
    from multiprocessing import forkserver

    procs = list((getattr(pool, "_processes", None) or {}).values())
    server = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    doomed = {p.pid for p in procs if p.pid is not None}
    if server is not None:
        try:
            os.kill(server, signal.SIGSTOP)
        except OSError:
            server = None
        else:
            doomed |= _children_of(server)
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if server is not None:
        os.kill(server, signal.SIGKILL)  # reaped by _stop_forkserver
    for p in procs:
        p.join(timeout=5)


def _stop_forkserver() -> None:
    """End the forkserver and reap it, so its CPU (and its workers') counts as this process's
    children's, no process outlives the run, and the next run starts from fresh imports."""
    from multiprocessing import forkserver

    stop = getattr(getattr(forkserver, "_forkserver", None), "_stop", None)
    if stop is not None:
        try:
            stop()
        except OSError:
            pass


def _children_of(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (Linux /proc; empty elsewhere)."""
    out = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(name))
    return out


def run_claims_parallel(
    claims: Sequence[Claim],
    *,
    jobs: int,
    seed: int = 0,
    quick: bool = False,
    on_claim_done: Callable[[Claim], None] | None = None,
    resolve: Callable[[str], Claim],
    claims_file: str = "",
) -> list[ClaimResult]:
    """Run ``claims`` (and the premises they reach) in ``jobs`` worker processes.

    ``resolve`` maps a premise id to its claim (registry or the user's file); ``on_claim_done``
    is called in the parent as each claim asked for finishes (the progress bar). Returns the
    results of ``claims`` in their order; premises outside ``claims`` run but are not returned.
    """
    needed = _needed(claims, resolve)
    asked = {c.id for c in claims}
    prio = _priorities(needed, quick)
    done: dict[str, ClaimResult] = {}
    waiting = dict(needed)
    running: dict[Future, str] = {}

    def run_here(cid: str) -> ClaimResult:
        """Fallback when a worker could not deliver: the same run, in this process."""
        c = needed[cid]
        ctx = Context(seed=seed, quick=quick, claims_file=claims_file)
        return c.run(ctx, premises={pid: done[pid].verdict for pid in c.depends_on})

    def finish(cid: str, result: ClaimResult) -> None:
        done[cid] = result
        if on_claim_done is not None and cid in asked:
            on_claim_done(needed[cid])

    def ready() -> list[str]:
        ids = [cid for cid, c in waiting.items() if all(p in done for p in c.depends_on)]
        return sorted(ids, key=lambda cid: -prio[cid])

    saved_env = {k: os.environ.get(k) for k in _ONE_THREAD_ENV}
    os.environ.update({k: "1" for k in _ONE_THREAD_ENV})  # inherited by workers spawned below
    restore_term = _raise_on_sigterm()
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=_forkserver_context(),
        initializer=_worker_init,
    )
    finished = False
    try:
        while waiting or running:
            for cid in ready()[: max(0, jobs - len(running))]:
                c = waiting.pop(cid)
                premises = {pid: done[pid].verdict for pid in c.depends_on}
                try:
                    fut = pool.submit(_run_in_worker, cid, seed, quick, claims_file, premises)
                except BrokenProcessPool:
                    finish(cid, run_here(cid))
                else:
                    running[fut] = cid
            if not running:
                continue
            finished_now, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in finished_now:
                cid = running.pop(fut)
                try:
                    checks, prem = fut.result()
                except Exception:  # noqa: BLE001 - a lost worker or an unpicklable result
                    finish(cid, run_here(cid))
                else:
                    finish(cid, ClaimResult(claim=needed[cid], checks=checks, premises=prem))
        finished = True
    finally:
        if not finished:
            _kill_workers(pool)
        pool.shutdown(wait=finished, cancel_futures=True)
        _stop_forkserver()
        restore_term()
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return [done[c.id] for c in claims]


def _raise_on_sigterm() -> Callable[[], None]:
    """While workers run, SIGTERM unwinds the parent (which kills them) instead of orphaning them.

    Returns the function that restores the previous handler. Outside the main thread signal
    handlers cannot be set; the workers' PR_SET_PDEATHSIG still ends them with the parent.
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)

    def _terminate(signum, frame):  # noqa: ARG001
        raise SystemExit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, _terminate)
    return lambda: signal.signal(signal.SIGTERM, previous)
