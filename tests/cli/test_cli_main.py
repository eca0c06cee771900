"""The CLI's last-resort error handling: one line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
import types

from dptheory.cli import main as cli


def test_closed_pipe_is_quiet() -> None:
    cmd = f"{sys.executable} -m dptheory.cli.main calibrate --eps 2 --delta 1e-5 --algo dpsgd --json"
    cmd += " | head -1"
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert out.stdout.strip() == "{"
    assert out.stderr == ""


def test_oserror_escaping_a_command_is_one_line_exit_two(monkeypatch, capsys) -> None:
    def handler(args):
        raise FileNotFoundError(2, "No such file or directory", "/nowhere/x")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    args = types.SimpleNamespace(handler=handler, command="x")
    monkeypatch.setattr(parser, "parse_args", lambda argv: args)
    assert cli.main(["x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/nowhere/x" in err and "Traceback" not in err
