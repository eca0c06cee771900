"""The CLI's last-resort error handling: one line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from dptheory.cli import main as cli


def test_closed_pipe_is_quiet() -> None:
    cmd = f"{sys.executable} -m dptheory.cli.main calibrate --eps 2 --delta 1e-5 --algo dpsgd --json"
    cmd += " | head -1"
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert out.stdout.strip() == "{"
    assert out.stderr == ""


def _stderr_when_the_command_raises(exc: OSError, monkeypatch, capsys) -> str:
    """Run a command whose handler raises ``exc``: exit status 2, and what stderr got."""

    def handler(args):
        raise exc

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    args = types.SimpleNamespace(handler=handler, command="x")
    monkeypatch.setattr(parser, "parse_args", lambda argv: args)
    assert cli.main(["x"]) == 2
    return capsys.readouterr().err


def test_oserror_escaping_a_command_is_one_line_exit_two(monkeypatch, capsys) -> None:
    exc = FileNotFoundError(2, "No such file or directory", "/nowhere/x")
    err = _stderr_when_the_command_raises(exc, monkeypatch, capsys)
    assert err.count("\n") == 1 and "/nowhere/x" in err and "Traceback" not in err


def test_a_full_disk_under_stdout_is_named_as_the_output() -> None:
    """``> /dev/full``: the write error carries no file name; the line says the output failed."""
    cmd = f"{sys.executable} -m dptheory.cli.main epsilon --algo dpsgd --noise-multiplier 1"
    cmd += " --delta 1e-5 --sample-rate 0.1 --steps 10 --json > /dev/full"
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr == "dptheory epsilon: error: cannot write the output: No space left on device\n"


EPS = ["epsilon", "--algo", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10"]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        ([*EPS, "--delta", "1e-5", "--delta", "0.5"], "--delta: given more than once"),
        ([*EPS, "--delta=1e-5", "--delta", "0.5"], "--delta: given more than once"),
        (["calibrate", "--eps", "2", "--eps", "8", "--delta", "1e-5", "--algo", "dpsgd"], "--eps"),
        ([*EPS, "--delta", "1e-5", "--steps", "10"], "--steps: given more than once"),
    ],
)
def test_an_option_given_twice_is_refused(argv: list[str], named: str, capsys) -> None:
    """argparse keeps the last value: a script appending ``--delta 0.5`` would silently change δ."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err and "silently" in err, err


@pytest.mark.parametrize(
    ("argv", "guess"),
    [
        (["epsilon", "--algo", "dpsgd", "--noise-mu", "1", "--del", "1e-5"], "--noise-multiplier"),
        (["calibrate", "--eps", "2", "--del", "1e-5", "--algo", "dpsgd"], "--delta"),
    ],
)
def test_a_prefix_of_an_option_is_not_the_option(argv: list[str], guess: str, capsys) -> None:
    """Prefixes are refused (adding an option later would change what one means), with a guess,
    before argparse's complaint about the required option the prefix was meant to be."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "spelt in full" in err and guess in err, err


def test_repeatable_options_and_flags_still_repeat(capsys) -> None:
    argv = ["verify", "--claim", "dicesgd.lemma-a1", "--claim", "d2p2.lemma4", "--quick", "--json", "--json"]
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.lstrip().startswith("[")


@pytest.mark.parametrize(
    ("option", "text"), [("--sample-rate", "1.0000000000000000001"), ("--steps", "1000.00000000000000000001")]
)
def test_a_literal_that_only_rounds_to_an_integer_is_refused(option: str, text: str, capsys) -> None:
    """float('1.0000000000000000001') is 1.0: the rate passed (0, 1] and the count passed
    "integral".  The Python API refuses the same Decimal; the CLI reads the text exactly."""
    argv = ["epsilon", "--algo", "dpsgd", "--noise-multiplier", "1", "--delta", "1e-5"]
    argv += ["--sample-rate", "0.5", "--steps", "100"]
    argv[argv.index(option) + 1] = text
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option in err and "rounds to" in err, err
    argv[argv.index(text)] = "1e0" if option == "--sample-rate" else "1e2"  # exact literals still pass
    assert cli.main(argv) == 0


def test_option_names_are_checked_by_the_parser_they_belong_to(capsys) -> None:
    """After the subcommand, --ver is the subcommand's unknown argument: no guess of the top-level
    --version, which epsilon refuses; '--=x' prefixes no option."""
    assert cli.main([*EPS, "--delta", "1e-5", "--ver"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ver" in err and "--version" not in err, err
    assert cli.main(["--=x"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_an_unnamed_read_error_is_not_called_a_write(monkeypatch, capsys) -> None:
    """EIO comes from reads too (standard input, a schedule file): only write-only errnos are
    named as the output."""
    import errno

    err = _stderr_when_the_command_raises(OSError(errno.EIO, "Input/output error"), monkeypatch, capsys)
    assert err == "dptheory x: error: cannot access a file or stream: Input/output error\n"
