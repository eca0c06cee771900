"""Start a Flower run of the dptheory apps and stop everything it started.

Three runtimes, all on this machine only:

``threads``
    Flower's simulation engine (``flwr.simulation.run_simulation``) in a child process, each
    ClientApp call on a worker thread of that process (:mod:`.threads`); needs no Ray.
``simulation``
    Flower's simulation engine with its Ray backend in a child process; the ClientApps run in
    Ray actor processes (one per CPU, reused across clients and rounds).
``deployment``
    A real local deployment: one ``flower-superlink`` and N ``flower-supernode`` processes bound to
    127.0.0.1, and ``flwr run`` submitting the app (a generated Flower App directory) to the
    SuperLink, which starts the ServerApp; each SuperNode starts the ClientApp in a subprocess.

Every process is started in its own session (process group) and the whole group is killed in a
``finally`` -- on success, on error, on Ctrl-C and on the CLI's ``--timeout`` alarm -- so nothing
is left running. Flower's telemetry, update check and runtime dependency installation and Ray's
usage statistics are switched off: nothing tries to reach another host.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

RUNTIMES = ("threads", "simulation", "deployment")
#: the module naming the apps of the generated Flower App (preloaded by the warm clientapp server)
APPS_MODULE = "dptheory.integrations.flower.deployment_apps"
#: Environment variable set (to the run's work directory) in every process a run starts: lets
#: tests and users find leftovers with ``grep -l DPTHEORY_FLOWER_RUN /proc/*/environ``.
RUN_MARKER = "DPTHEORY_FLOWER_RUN"
LOOPBACK = "127.0.0.1"

#: Environment of every Flower / Ray process we start: no network beyond loopback.
QUIET_ENV = {
    "FLWR_TELEMETRY_ENABLED": "0",
    "FLWR_DISABLE_UPDATE_CHECK": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def round_path(result_path: str) -> str:
    """Where the ServerApp records its last finished round, next to its result file (read by
    :func:`run_flower`'s ``on_round``)."""
    return result_path + ".round"


class FlowerRunError(RuntimeError):
    """The Flower run ended without a result (the message says why, with the log's tail)."""

    def summary(self) -> str:
        """First line of the message plus the last non-empty line of the log tail (one line)."""
        lines = [ln.strip() for ln in str(self).splitlines() if ln.strip()]
        if not lines:
            return "no result"
        return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """os.environ plus QUIET_ENV, with this checkout first on PYTHONPATH (apps import dptheory)."""
    env = dict(os.environ)
    env.update(QUIET_ENV)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    paths = [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra or {})
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


class ProcessGroup:
    """Processes started in their own sessions; :meth:`stop` kills every group (TERM, then KILL)."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str], cwd: str | None = None):
        log = open(os.path.join(self.log_dir, f"{name}.log"), "wb")  # noqa: SIM115 (closed by the child)
        try:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        finally:
            log.close()
        self.procs.append((name, proc))
        return proc

    def log_tail(self, name: str, chars: int = 1500) -> str:
        try:
            with open(os.path.join(self.log_dir, f"{name}.log"), "rb") as fh:
                return fh.read().decode("utf-8", "replace")[-chars:]
        except OSError:
            return ""

    def check_alive(self) -> None:
        for name, proc in self.procs:
            if name not in ("flwr-run", "simulation") and proc.poll() is not None:
                raise FlowerRunError(f"{name} exited with status {proc.returncode}:\n{self.log_tail(name)}")

    def stop(self) -> None:
        """Kill every started process and all its descendants, whatever session they moved to
        (the SuperLink starts ``flower-superexec`` in a session of its own): TERM, then KILL."""
        roots = [p.pid for _, p in self.procs]
        for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            targets = _descendants(roots)
            for pid in targets:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                for _, p in self.procs:
                    p.poll()  # reap our direct children
                if not any(_alive(pid) for pid in targets):
                    break
                time.sleep(0.05)
            roots = [pid for pid in targets if _alive(pid)]
            if not roots:
                break
        for _, p in self.procs:
            try:
                p.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass


def _children_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _descendants(roots: list[int]) -> list[int]:
    """``roots`` and all their living descendants (a snapshot of /proc)."""
    children = _children_map()
    seen: list[int] = []
    stack = [r for r in roots if _alive(r)]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.append(pid)
        stack.extend(children.get(pid, []))
    return seen


def processes_of_run(workdir: str) -> list[int]:
    """Living processes whose environment carries this run's marker (should be none after a run)."""
    needle = f"{RUN_MARKER}={workdir}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    env = fh.read()
            except OSError:
                continue
            if needle in env.split(b"\0") and _alive(int(entry)):
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie counts as gone: it only waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@contextmanager
def _workdir(keep: str | None) -> Iterator[str]:
    if keep:
        os.makedirs(keep, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="dptheory-flower-") as d:
        yield d


class SimulationChild:
    """The child process of the ``threads`` or ``simulation`` runtime, started before its
    configuration is known: it imports flwr and torch (about 2.5 s of a 10-client, 20-round run)
    while the caller prepares the run, then waits for ``config.json`` in :attr:`workdir`.

    :func:`run_flower` (``child=``) writes the configuration, waits for the result and stops the
    child; :meth:`stop` stops one that is not used. A child whose parent dies exits by itself."""

    def __init__(self, runtime: str, workdir: str | None = None) -> None:
        if runtime not in ("threads", "simulation"):
            raise ValueError(f"runtime must be threads or simulation (got {runtime!r})")
        self.runtime = runtime
        self._own_dir = workdir is None
        self.workdir = tempfile.mkdtemp(prefix="dptheory-flower-") if workdir is None else workdir
        os.makedirs(self.workdir, exist_ok=True)
        self.group = ProcessGroup(self.workdir)
        self._tmp: list[str] = []
        try:
            self._tmp = _start_simulation(self.group, self.workdir, runtime)
        except BaseException:
            self.stop()
            raise

    def write_config(self, cfg: dict[str, Any]) -> None:
        path = os.path.join(self.workdir, "config.json")
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(cfg, fh)
        os.replace(path + ".tmp", path)  # the child never reads a partial file

    def stop(self) -> None:
        """Kill the child and everything it started; remove its directories."""
        self.group.stop()
        for d in self._tmp:
            shutil.rmtree(d, ignore_errors=True)
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def run_flower(
    config: dict[str, Any],
    *,
    runtime: str = "threads",
    timeout: float = 600.0,
    workdir: str | None = None,
    on_round: Callable[[int], None] | None = None,
    warm: bool | None = None,
    child: SimulationChild | None = None,
) -> dict[str, Any]:
    """Run the apps with ``config`` (keys of :data:`apps.CONFIG_KEYS`); return the server's result.

    ``timeout`` bounds the whole run; on expiry every started process is killed and
    :class:`FlowerRunError` is raised.  ``on_round(t)``, if given, is called in this process as
    the ServerApp reports finished rounds (polled every 0.1 s; the progress bar of ``dptheory run``).
    ``child``: a :class:`SimulationChild` started earlier (its runtime is used; it is stopped here).
    ``warm`` (deployment only; default on, off with the
    environment variable ``DPTHEORY_FLOWER_COLD=1``) serves every ``flwr-clientapp`` from a warm
    process (:mod:`.forkserver`) instead of a cold Python + flwr + torch start per message.
    """
    if warm is None:
        warm = os.environ.get("DPTHEORY_FLOWER_COLD", "") != "1"
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {RUNTIMES} (got {runtime!r})")
    if child is not None or runtime != "deployment":
        previous = _raise_on_sigterm()
        try:
            if child is None:
                child = SimulationChild(runtime, workdir)
            cfg = dict(config)
            cfg["result-path"] = os.path.join(child.workdir, "result.json")
            child.write_config(cfg)
            return _wait_for_result(child.group, cfg["result-path"], timeout, child.runtime, on_round)
        finally:
            if child is not None:
                child.stop()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    with _workdir(workdir) as wd:
        cfg = dict(config)
        cfg["result-path"] = os.path.join(wd, "result.json")
        group = ProcessGroup(wd)
        previous = _raise_on_sigterm()
        try:
            _start_deployment(group, cfg, wd, warm=warm)
            return _wait_for_result(group, cfg["result-path"], timeout, runtime, on_round)
        finally:
            group.stop()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _raise_on_sigterm() -> Any:
    """Turn SIGTERM into SystemExit while a run is up, so that its ``finally`` stops the processes."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, handler)


def _wait_for_result(
    group: ProcessGroup,
    path: str,
    timeout: float,
    runtime: str,
    on_round: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Poll for the ServerApp's result file; fail when the driver (the simulation child, or
    ``flwr run --stream``, which returns when the run ends) is gone without one, or at timeout."""
    driver = "flwr-run" if runtime == "deployment" else "simulation"
    deadline = time.monotonic() + timeout
    ended_at: float | None = None
    last = 0
    while time.monotonic() < deadline:
        if on_round is not None:
            try:
                with open(round_path(path), encoding="utf-8") as fh:
                    rnd = int(fh.read() or 0)
            except (OSError, ValueError):
                rnd = last
            if rnd > last:
                on_round(rnd)
                last = rnd
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        group.check_alive()
        proc = dict(group.procs).get(driver)
        if ended_at is None and proc is not None and proc.poll() is not None:
            ended_at = time.monotonic()
        if ended_at is not None and time.monotonic() - ended_at > 5.0:  # grace for the file
            raise FlowerRunError(
                f"{driver} ended (status {proc.returncode}) without a result:\n{group.log_tail(driver)}"
            )
        time.sleep(0.1)
    raise FlowerRunError(f"no result from the Flower {runtime} within {timeout:g} s")


# ----------------------------------------------------------------------------------------------
def _start_simulation(group: ProcessGroup, wd: str, runtime: str) -> list[str]:
    """Start the simulation child (it waits for ``wd/config.json``); returns the directories to
    remove after the run (Ray's)."""
    extra, tmp = {RUN_MARKER: wd, "DPTHEORY_FLOWER_PARENT": str(os.getpid())}, []
    if runtime == "simulation":
        tmp.append(tempfile.mkdtemp(prefix="r", dir="/tmp"))  # short: Ray's socket paths are length-limited
        extra["DPTHEORY_RAY_TMPDIR"] = tmp[0]
    backend = "threads" if runtime == "threads" else "ray"
    path = os.path.join(wd, "config.json")
    argv = [sys.executable, "-m", "dptheory.integrations.flower.simulate", path, backend]
    group.start("simulation", argv, child_env(extra))
    return tmp


def app_pyproject(cfg: dict[str, Any]) -> str:
    """A Flower App's pyproject.toml whose components are the dptheory apps and whose run config
    is ``cfg`` (every key present, so ``flwr run --run-config`` can override any of them)."""
    lines = [
        "[build-system]",
        'requires = ["hatchling"]',
        'build-backend = "hatchling.build"',
        "",
        "[project]",
        'name = "dptheory-clip21"',
        'version = "1.0.0"',
        'description = "Clip21-SGD2M with local DP (dptheory)"',
        'license = "Apache-2.0"',
        "dependencies = []",
        "",
        "[tool.hatch.build.targets.wheel]",
        'packages = ["."]',
        "",
        "[tool.flwr.app]",
        'publisher = "dptheory"',
        "",
        "[tool.flwr.app.components]",
        'serverapp = "dptheory.integrations.flower.deployment_apps:server_app"',
        'clientapp = "dptheory.integrations.flower.deployment_apps:client_app"',
        "",
        "[tool.flwr.app.config]",
    ]
    for key, value in cfg.items():
        lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def write_app_dir(app_dir: str, cfg: dict[str, Any]) -> str:
    """Write ``app_dir/pyproject.toml`` (see :func:`app_pyproject`); returns its path."""
    path = os.path.join(app_dir, "pyproject.toml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(app_pyproject(cfg))
    return path


def _start_forkserver(group: ProcessGroup, env: dict[str, str], wd: str) -> dict[str, str]:
    """Start the warm ``flwr-clientapp`` server (:mod:`.forkserver`) with the apps preloaded, and
    return ``env`` with its shim first on PATH (for the SuperNodes)."""
    from dptheory.integrations.flower import forkserver

    sock = os.path.join(wd, "clientapp.sock")
    group.start(
        "clientapp-forkserver",
        [sys.executable, "-m", "dptheory.integrations.flower.forkserver", sock, APPS_MODULE],
        env,
        cwd=wd,
    )
    deadline = time.monotonic() + 120.0
    while not os.path.exists(sock):
        group.check_alive()
        if time.monotonic() > deadline:
            raise FlowerRunError("the warm flwr-clientapp server did not start within 120 s")
        time.sleep(0.05)
    shim_dir = os.path.join(wd, "bin")
    forkserver.write_shim(shim_dir, sock)
    return {**env, "PATH": os.pathsep.join([shim_dir, env["PATH"]]), forkserver.SOCKET_ENV: sock}


def _start_deployment(group: ProcessGroup, cfg: dict[str, Any], wd: str, warm: bool = True) -> None:
    n = int(cfg["num-clients"])
    home = os.path.join(wd, "flwr-home")
    os.makedirs(home, exist_ok=True)
    link_port = free_port()
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as fh:
        fh.write(
            '[superlink]\ndefault = "dptheory-local"\n\n'
            f'[superlink.dptheory-local]\naddress = "{LOOPBACK}:{link_port}"\ninsecure = true\n'
        )
    app_dir = os.path.join(wd, "app")
    os.makedirs(app_dir, exist_ok=True)
    write_app_dir(app_dir, cfg)
    bindir = os.path.dirname(sys.executable)
    # this interpreter's scripts first on PATH: a SuperNode then starts flwr-clientapp directly,
    # not through a version-manager shim (pyenv's costs a bash and a pyenv per message)
    path = os.pathsep.join([bindir, os.environ.get("PATH", "")])
    env = child_env({"FLWR_HOME": home, RUN_MARKER: wd, "PATH": path})
    if warm:
        env = _start_forkserver(group, env, wd)

    def exe(name: str) -> str:
        path = os.path.join(bindir, name)
        return path if os.path.exists(path) else name

    group.start(
        "superlink",
        [
            exe("flower-superlink"),
            "--insecure",
            "--host",
            LOOPBACK,
            "--port",
            str(link_port),
            "--disable-runtime-dependency-installation",
        ],
        env,
        cwd=wd,
    )
    _wait_port(group, link_port, 60.0)
    for i in range(n):
        group.start(
            f"supernode-{i}",
            [
                exe("flower-supernode"),
                "--insecure",
                "--superlink",
                f"{LOOPBACK}:{link_port}",
                "--host",
                LOOPBACK,
                "--port",
                str(free_port()),
                "--node-config",
                f"partition-id={i} num-partitions={n}",
            ],
            env,
            cwd=wd,
        )
    group.start("flwr-run", [exe("flwr"), "run", app_dir, "dptheory-local", "--stream"], env, cwd=wd)


def _wait_port(group: ProcessGroup, port: int, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        group.check_alive()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.1)
    raise FlowerRunError(f"the SuperLink did not open {LOOPBACK}:{port} within {wait_s:g} s")
