"""A warm ``flwr-clientapp`` for local deployments: fork a process that has flwr and torch loaded.

Why: in Flower 1.41 a SuperNode starts a new ``flwr-clientapp`` process for every message
(``subprocess.Popen(["flwr-clientapp", ...])``, a ``PATH`` lookup), so every round pays a Python
start-up, ``import flwr`` and ``import torch`` per client (about 3 s of CPU each on our machine,
against milliseconds of work). Without Ray there is no actor to reuse, so we keep one warm
process instead:

* ``python -m dptheory.integrations.flower.forkserver SOCKET MODULE...`` imports flwr's
  ``flwr-clientapp`` entry point and the MODULEs (the apps, hence torch), calls their
  ``warm_up()`` if they have one (the first ``torch.func.grad`` imports ``torch._dynamo``: about
  2 s of CPU, paid per message by a cold ``flwr-clientapp``), then waits on the Unix socket SOCKET;
* :func:`write_shim` writes an executable ``flwr-clientapp`` (run with ``python -S``: no site
  import, a few ms) that sends its arguments and its stdin/stdout/stderr to the server; the run's
  SuperNodes find it first on their ``PATH``;
* per request the server forks; the child *is* a ``flwr-clientapp`` process (same arguments, same
  file descriptors, Flower's own ``flwr_clientapp()`` main), with its imports already done. It
  tells the shim its exit status and exits; the shim exits with that status.

Nothing in the protocol changes: the ClientApp still runs in its own process per message, with a
fresh interpreter state for everything Flower does (the fork happens before any Flower call).
The server is forked from a process that has started no threads and opened no connections.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import sys
import traceback

SOCKET_ENV = "DPTHEORY_FORKSERVER"

SHIM = """#!{python} -S
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ.get("{env}") or {path!r})
socket.send_fds(s, [json.dumps(sys.argv[1:]).encode()], [0, 1, 2])
b = s.recv(1)
sys.exit(b[0] if b else 1)
"""


def write_shim(bin_dir: str, socket_path: str) -> str:
    """Write ``bin_dir/flwr-clientapp`` talking to the server at ``socket_path``; returns its path."""
    os.makedirs(bin_dir, exist_ok=True)
    path = os.path.join(bin_dir, "flwr-clientapp")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SHIM.format(python=sys.executable, env=SOCKET_ENV, path=socket_path))
    os.chmod(path, 0o755)
    return path


def _child(conn: socket.socket, fds: list[int], argv: list[str], entry) -> None:
    for i, fd in enumerate(fds[:3]):
        os.dup2(fd, i)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sys.argv = ["flwr-clientapp", *argv]
    code = 0
    try:
        entry()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 -- report it as the process would, then exit
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        try:
            conn.sendall(bytes([code & 255]))
        except OSError:
            pass
        os._exit(code & 255)


def serve(socket_path: str, preload: list[str], entry: str = "") -> None:
    """Preload, then fork one ``flwr-clientapp`` per request. ``entry`` (``module:function``)
    replaces flwr's ``flwr_clientapp`` main (for tests)."""
    for name in preload:
        module = importlib.import_module(name)
        if callable(getattr(module, "warm_up", None)):
            module.warm_up()  # e.g. torch's lazy imports, done once here instead of once per message
    if entry:
        mod, _, fn = entry.partition(":")
        flwr_clientapp = getattr(importlib.import_module(mod), fn)
    else:
        from flwr.supernode.cli.flwr_clientapp import flwr_clientapp

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(socket_path + ".tmp")
    os.replace(socket_path + ".tmp", socket_path)  # appears only once it is bound
    srv.listen(128)
    while True:
        conn, _ = srv.accept()
        msg, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        try:
            argv = [str(a) for a in json.loads(msg.decode())]
        except (ValueError, UnicodeDecodeError):
            conn.close()
            for fd in fds:
                os.close(fd)
            continue
        if os.fork() == 0:
            srv.close()
            _child(conn, fds, argv, flwr_clientapp)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    entry = args.pop(1) if len(args) > 1 and args[1].startswith("--entry=") else ""
    serve(args[0], args[1:], entry.removeprefix("--entry="))
