"""Fuzz the command line: hypothesis builds argument lists (malformed, conflicting, extreme) for
every subcommand and each run must keep the contract of ``dptheory.cli.main``:

* exit 0 with output on stdout (valid JSON with ``--json``), or
* exit 2 with exactly one non-warning line on stderr that names an option, or
* exit 3 with the ``--timeout`` line;
* never a traceback, never a hang (the harness kills a run after ``HANG_S``), never more memory
  than ``MEMORY_LIMIT`` (an allocation of length T at T = 1e9 would trip it).

Each command runs in a child forked from a fresh ``forkserver`` process (fast: the accounting
modules are preloaded; isolated: a crash, a hang or an out-of-memory kills only the child).
The short profile runs in CI; ``-m slow`` runs the long one.  ``DPTHEORY_FUZZ_EXAMPLES=N``
overrides the number of commands.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._forked_cli import run_cli
from tests._hostile_claims import claims_source

TIMEOUT_S = "2"  # default suite: a shorter --timeout keeps the runs that hit it cheap (exit 3 is in contract)
TIMEOUT_LONG_S = "4"  # the slow profile gives commands more room to finish with exit 0


_NAMES_OPTION = re.compile(
    r"--[a-z][a-z0-9-]*|argument |COMMAND|invalid choice|\b(rounds|steps|sample_rate)\b"
)


def _assert_json(out: str, where: str) -> None:
    try:
        json.loads(out)
    except ValueError:
        raise AssertionError("BAD JSON (something else wrote to stdout): " + where) from None


def check_contract(argv: list[str], rc: int | None, out: str, err: str) -> None:
    where = f"dptheory {' '.join(argv)}\nrc={rc}\nstderr:\n{err[-3000:]}\nstdout:\n{out[-500:]}"
    assert rc is not None, "HANG: " + where
    assert "Traceback" not in err, "TRACEBACK: " + where
    if rc == 1 and argv[0] == "verify":  # a crashed check (a claims file's): reported, output intact
        assert "crashed" in err and out.strip(), "EXIT 1 WITHOUT A CRASHED CHECK: " + where
        if "--json" in argv:
            _assert_json(out, where)
        return
    assert rc in (0, 2, 3), "EXIT CODE: " + where
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
    bad = must_reject(argv)
    assert not (bad and rc == 0), f"ACCEPTED BAD INPUT ({bad}): " + where
    assert all(len(ln) < 2000 for ln in lines if "error:" in ln), "GIANT ERROR LINE: " + where[:2000]
    if rc == 0:
        if "--help" in argv:
            return
        assert out.strip(), "NO OUTPUT: " + where
        if "--json" in argv:
            _assert_json(out, where)
    elif rc == 2:
        # a progress bar may leave carriage-return fragments; the error is the last line
        errs = [ln for ln in lines if "error:" in ln]
        assert len(errs) == 1, "NOT ONE ERROR LINE: " + where
        assert _NAMES_OPTION.search(errs[0]), "NAMES NO OPTION: " + where
    else:
        assert any("--timeout" in ln for ln in lines), "EXIT 3 WITHOUT THE TIMEOUT LINE: " + where


def _value(argv: list[str], option: str) -> str | None:
    """The value after the last ``option`` in ``argv`` (None if absent)."""
    idx = [i for i, a in enumerate(argv[:-1]) if a == option]
    return argv[idx[-1] + 1] if idx else None


def _num(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def must_reject(argv: list[str]) -> str | None:
    """Why ``argv`` must not exit 0 (an option that does nothing, a count past its edge), or None.

    The oracle for "bad input accepted": each rule is one of issue 18's classes."""
    if not argv:
        return None
    cmd = argv[0]
    t = _num(_value(argv, "--timeout"))
    if t is not None and t > 1e8:
        return "--timeout past 1e8 s"
    if cmd in ("calibrate", "epsilon", "audit"):
        if "--schedule-rho" in argv and _value(argv, "--schedule") != "exp":
            return "--schedule-rho without --schedule exp"
        if _value(argv, "--clip-mode") == "automatic" and "--grad-bound" not in argv:
            return "--clip-mode automatic without --grad-bound"
        for opt in ("--steps", "--epochs"):
            v = _num(_value(argv, opt))
            if v is not None and opt == "--steps" and v > 2.0**53:
                return f"{opt} past 2^53 steps"
            if v is not None and opt == "--epochs" and v >= 1e300:
                return "--epochs giving more than 2^53 steps"
        if _value(argv, "--accountant") == "pld" and "--conversion" in argv:
            return "--conversion with --accountant pld"
        if "--max-grad-norm" in argv and "--c1" in argv:
            if _num(_value(argv, "--max-grad-norm")) != _num(_value(argv, "--c1")):
                return "--max-grad-norm and a different --c1"
        d = _num(_value(argv, "--model-dim"))
        if d is not None and d > 2.0**53 and _value(argv, "--algo") in ("d2p2sgd", "dp2sgd"):
            return "--model-dim past 2^53"
    if cmd == "audit":
        if _value(argv, "--algo") != "dicesgd" and ("--samples" in argv or "--confidence" in argv):
            return "--samples/--confidence on an exact audit"
        if _value(argv, "--accountant") == "pld":
            return "audit --accountant pld (its epsilons are RDP-accounted)"
        c = _num(_value(argv, "--confidence"))
        if c is not None and c <= 0.5:
            return "audit --confidence <= 0.5"
        s = _num(_value(argv, "--samples"))
        if s is not None and s > 1e7:
            return "--samples past 1e7"
    if cmd == "run" and _value(argv, "--plot") == "":
        return "run --plot ''"
    if (
        cmd == "run"
        and "--c1" in argv
        and _value(argv, "--algo") not in ("dpsgd", "dicesgd")
        and _value(argv, "--problem") != "dicesgd-b1"
    ):
        return "run --c1 on an algorithm that does not clip at C1"
    if cmd == "verify":
        s = _num(_value(argv, "--seed"))
        if s is not None and s < 0:
            return "verify --seed < 0"
    return None


# ----------------------------------------------------------------------------------------------
# Strategies
# ----------------------------------------------------------------------------------------------

MALFORMED = ["nan", "NaN", "inf", "-inf", "1e400", "-1e400", "1e-400", "abc", "", "1,5", "0x10", "1e", "--"]
NUMBERS = [
    "0",
    "-0",
    "-1",
    "1",
    "0.5",
    "2",
    "3.7",
    "100",
    "1e-9",
    "1e-6",
    "1e-3",
    "0.999",
    "1e4",
    "1e6",
    "1e9",
]
EXTREME = ["1e-300", "1e300", "1e-100", "2e-308", "1000000000", "4294967297"]
#: counts at and past their edges: T = 1e9 (the envelope), 2^53 (+1), int64 and float overflow
EDGES = ["3e8", "1e9", "2e9", "1e10", "9007199254740992", "9007199254740993", "1e16", "1e19", "1e300"]
ALGOS = ["dpsgd", "dicesgd", "d2p2sgd", "d2psgd", "dp2sgd", "clip21sgd2m"]


def num() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NUMBERS), st.sampled_from(EXTREME), st.sampled_from(MALFORMED), st.sampled_from(EDGES)
    )


def huge() -> st.SearchStrategy[str]:
    """A value of 1e5 characters: an error line must echo only ~80 of them."""
    return st.sampled_from(["9" * 100_000, "x" * 100_000, "1e" + "0" * 100_000])


#: claims files whose code tries to corrupt the output or the exit status (issue 18)
HOSTILE_CLAIMS = {
    "sysexit3": ("sys.exit(3)", ""),
    "osexit-check": ("os._exit(0)", ""),
    "print": ("print('{not json')", ""),
    "close-stdout": ("sys.stdout.close()", ""),
    "osexit-import": ("pass", "os._exit(0)"),
    "sysexit-import": ("pass", "sys.exit(0)"),
    "raise-import": ("pass", "raise RuntimeError('x' * 100000)"),
    "plain": ("pass", ""),
}


def _files() -> dict[str, str]:
    d = Path(tempfile.mkdtemp(prefix="dptheory-fuzz-"))
    # Built at import (hypothesis strategies sample these paths), so removed at interpreter exit.
    atexit.register(shutil.rmtree, d, True)
    (d / "good.txt").write_text("1.0\n0.8\n# comment\n0.5\n")
    (d / "bom.txt").write_bytes(b"\xef\xbb\xbf1.0\n2.0\n")
    (d / "empty.txt").write_text("")
    (d / "bad.txt").write_text("1.0\nnan\n")
    (d / "neg.txt").write_text("1.0\n-2\n")
    (d / "binary.bin").write_bytes(bytes(range(256)))
    (d / "huge-line.txt").write_text("1" * 10**7 + "x\n")  # a 10 MB error line before issue 18
    (d / "dir").mkdir()
    for name, (body, top) in HOSTILE_CLAIMS.items():
        (d / f"claims_{name}.py").write_text(claims_source(body, top))
    fifo = d / "fifo"
    try:
        os.mkfifo(fifo)
    except (OSError, AttributeError):
        fifo = d / "empty.txt"
    return {
        "good": str(d / "good.txt"),
        "bom": str(d / "bom.txt"),
        "empty": str(d / "empty.txt"),
        "bad": str(d / "bad.txt"),
        "neg": str(d / "neg.txt"),
        "binary": str(d / "binary.bin"),
        "dir": str(d / "dir"),
        "fifo": str(fifo),
        "missing": str(d / "missing.txt"),
        "stdin": "-",
        "root": "/",
        "outdir": str(d / "out"),
        "proc": "/proc/version",
        "huge-line": str(d / "huge-line.txt"),
        **{f"claims-{name}": str(d / f"claims_{name}.py") for name in HOSTILE_CLAIMS},
    }


FILES = _files()

PRIVACY_OPTIONS: dict[str, st.SearchStrategy[list[str]]] = {
    "--sample-rate": num().map(lambda v: ["--sample-rate", v]),
    "--batch-size": num().map(lambda v: ["--batch-size", v]),
    "--dataset-size": num().map(lambda v: ["--dataset-size", v]),
    "--steps": num().map(lambda v: ["--steps", v]),
    "--epochs": num().map(lambda v: ["--epochs", v]),
    "--c1": num().map(lambda v: ["--c1", v]),
    "--max-grad-norm": num().map(lambda v: ["--max-grad-norm", v]),
    "--c2": st.one_of(num(), st.just("auto")).map(lambda v: ["--c2", v]),
    "--grad-bound": num().map(lambda v: ["--grad-bound", v]),
    "--max-noise-ratio": num().map(lambda v: ["--max-noise-ratio", v]),
    "--schedule": st.sampled_from(["constant", "inv-k", "inv-sqrt-k", "exp", "cosine", ""]).map(
        lambda v: ["--schedule", v]
    ),
    "--schedule-file": st.sampled_from(sorted(FILES)).map(lambda k: ["--schedule-file", FILES[k]]),
    "--schedule-rho": num().map(lambda v: ["--schedule-rho", v]),
    "--projection-dim": num().map(lambda v: ["--projection-dim", v]),
    "--model-dim": num().map(lambda v: ["--model-dim", v]),
    "--projection": st.sampled_from(["fresh", "fixed", "none"]).map(lambda v: ["--projection", v]),
    "--projection-sigma-max": num().map(lambda v: ["--projection-sigma-max", v]),
    "--clients": num().map(lambda v: ["--clients", v]),
    "--tau": num().map(lambda v: ["--tau", v]),
    "--rounds": num().map(lambda v: ["--rounds", v]),
    "--orders": st.sampled_from(
        ["default", "1.5,2,4-64", "1e300", "2-1000000", "abc", "1", "default,4096", "1.01", "2-5:0", ""]
    ).map(lambda v: ["--orders", v]),
    "--conversion": st.sampled_from(["improved", "classic", "other"]).map(lambda v: ["--conversion", v]),
    "--clip-mode": st.sampled_from(["flat", "automatic", "x"]).map(lambda v: ["--clip-mode", v]),
    "--residual-clip": num().map(lambda v: ["--residual-clip", v]),
    "--gamma": num().map(lambda v: ["--gamma", v]),
    "--huge": st.tuples(st.sampled_from(["--noise-multiplier", "--delta", "--algo", "--orders"]), huge()).map(
        list
    ),
    "--mode": st.sampled_from(["certified", "claimed", "audit"]).map(lambda v: ["--mode", v]),
    "--accountant": st.sampled_from(["rdp", "pld", "moments"]).map(lambda v: ["--accountant", v]),
    "--json": st.just(["--json"]),
    "--compare": st.just(["--compare"]),
}


@st.composite
def privacy_command(draw) -> list[str]:
    cmd = draw(st.sampled_from(["calibrate", "epsilon", "audit"]))
    argv = [cmd, "--algo", draw(st.one_of(st.sampled_from(ALGOS), st.sampled_from(["nope", ""])))]
    if cmd == "calibrate" or (cmd == "audit" and draw(st.booleans())):
        if draw(st.integers(0, 9)):
            argv += ["--eps", draw(num())]
    if cmd != "calibrate" or draw(st.integers(0, 5)) == 0:
        if draw(st.integers(0, 9)):
            argv += ["--noise-multiplier", draw(num())]
    if draw(st.integers(0, 9)):
        argv += ["--delta", draw(num())]
    names = draw(st.lists(st.sampled_from(sorted(PRIVACY_OPTIONS)), max_size=5, unique=True))
    for name in names:
        if cmd == "audit" and name == "--compare":
            continue
        argv += draw(PRIVACY_OPTIONS[name])
    if cmd == "calibrate" and draw(st.integers(0, 7)) == 0:
        argv += ["--target", draw(st.sampled_from(["steps", "noise", "x"]))]
    if cmd == "audit" and draw(st.booleans()):
        argv += ["--samples", draw(st.sampled_from(["10", "0", "1e9", "abc", "100", "1e7", "1e8", "1e12"]))]
    if cmd == "audit" and draw(st.integers(0, 3)) == 0:
        argv += ["--confidence", draw(st.sampled_from(["0.9", "0.99", "1", "0"]))]
    return argv


PATH_ALGOS = ["dpsgd", "dicesgd", "d2p2sgd", "d2psgd", "dp2sgd", "clip21sgd2m"]
#: T up to and past 1e9 (the envelope), and 2^53 (+1), where counts stop being exact floats
T_VALUES = ["1", "1000", "1000000", "300000000", "1000000000", "2000000000", "9007199254740993", "1e16"]
#: sigma over the envelope, down to 0.1 (where dp-accounting's PLD ran for minutes at T = 10)
SIGMAS = ["0.1", "0.3", "1", "4", "100", "10000"]


@st.composite
def envelope_command(draw) -> list[str]:
    """Every algorithm x accountant x subcommand at the envelope's corners: T (or epochs, rounds) up
    to and past 1e9, sigma down to 0.1 with PLD, delta down to 1e-100, schedules with extreme rho."""
    cmd = draw(st.sampled_from(["calibrate", "epsilon", "audit"]))
    algo = draw(st.sampled_from(PATH_ALGOS))
    argv = [cmd, "--algo", algo, "--delta", draw(st.sampled_from(["1e-5", "1e-100", "0.1"]))]
    if cmd == "calibrate":
        argv += ["--eps", draw(st.sampled_from(["1e-3", "1", "1e3"]))]
    else:
        argv += ["--noise-multiplier", draw(st.sampled_from(SIGMAS))]
    if cmd != "audit":
        argv += ["--accountant", draw(st.sampled_from(["rdp", "pld"]))]
        if draw(st.integers(0, 3)) == 0:
            argv += ["--mode", draw(st.sampled_from(["claimed", "certified"]))]
    t = draw(st.sampled_from(T_VALUES))
    if algo == "clip21sgd2m":
        argv += ["--rounds", t]
    else:
        argv += draw(
            st.sampled_from([["--steps", t], ["--epochs", draw(st.sampled_from(EDGES + ["3", "1e6"]))]])
        )
        if draw(st.booleans()):
            argv += ["--sample-rate", draw(st.sampled_from(["1e-9", "1e-3", "0.02", "1"]))]
    if algo in ("d2p2sgd", "d2psgd", "dp2sgd") and draw(st.booleans()):
        argv += [
            "--schedule",
            "exp",
            "--schedule-rho",
            draw(st.sampled_from(["1e-300", "1e-6", "2", "1e6", "1e300"])),
        ]
    if algo in ("d2p2sgd", "dp2sgd") and draw(st.booleans()):
        argv += ["--model-dim", draw(st.sampled_from(["1", "100000", "1e9", "1e300"]))]
        argv += ["--projection-dim", draw(st.sampled_from(["1", "100000", "1e9"]))]
    if algo == "dicesgd" and draw(st.booleans()):
        argv += ["--grad-bound", draw(st.sampled_from(["0.5", "1.001", "1e300"]))]
    return argv


@st.composite
def run_command(draw) -> list[str]:
    algos = ["dpsgd", "dicesgd", "clipsgd", "clip21sgd", "clip21sgd2m", "d2p2sgd", "d2psgd", "dp2sgd", "x"]
    problems = ["dicesgd-b1", "clip21-example1", "stochastic-quadratic", "quadratic", "logreg-nonconvex", "y"]
    argv = ["run", "--algo", draw(st.sampled_from(algos)), "--problem", draw(st.sampled_from(problems))]
    pool = {
        "--steps": st.sampled_from(["0", "1", "50", "1e9", "2.5", "nan", "-3"]),
        "--lr": num(),
        "--sample-rate": num(),
        "--c1": num(),
        "--c2": num(),
        "--tau": num(),
        "--beta": num(),
        "--beta-hat": num(),
        "--gamma": num(),
        "--projection-dim": st.sampled_from(["1", "0", "3", "100000", "1e9", "1e300", "abc"]),
        "--noise-multiplier": num(),
        "--eps": num(),
        "--delta": num(),
        "--dim": st.sampled_from(["1", "0", "5", "100000", "1e9", "1e300"]),
        "--x0": num(),
        "--seeds": st.sampled_from(["1", "2", "0", "1000000", "abc"]),
        "--clients": st.sampled_from(["1", "3", "0", "1000000"]),
        "--device": st.sampled_from(["cpu", "auto", "cuda", "tpu"]),
        "--plot": st.sampled_from(
            [FILES["root"], FILES["dir"], FILES["outdir"] + "/x.png", FILES["proc"], ""]
        ),
        "--clip-mode": st.sampled_from(["flat", "automatic"]),
    }
    for name in draw(st.lists(st.sampled_from(sorted(pool)), max_size=4, unique=True)):
        argv += [name, draw(pool[name])]
    if "--steps" not in argv:
        argv += ["--steps", "40"]  # keep default runs short
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@st.composite
def other_command(draw) -> list[str]:
    kind = draw(st.sampled_from(["verify", "figures", "bare", "junk"]))
    if kind == "verify":
        argv = ["verify"]
        argv += draw(
            st.sampled_from(
                [
                    ["--claim", "dicesgd.lemma-a7"],
                    ["--claim", "nope.claim"],
                    ["--paper", "x"],
                    [],
                    ["--list"],
                    ["--list", "--json"],
                    ["--claim", "dicesgd.example-b1", "--json"],
                ]
            )
        )
        if draw(st.booleans()):
            argv += ["--report", draw(st.sampled_from([FILES["root"], "", FILES["good"], FILES["proc"]]))]
        if draw(st.booleans()):
            argv += ["--seed", draw(st.sampled_from(["0", "-1", "1.5", "abc", "1e400", "1e300"]))]
        if draw(st.integers(0, 2)) == 0:
            argv = [*argv, "--claims-file", FILES["claims-" + draw(st.sampled_from(sorted(HOSTILE_CLAIMS)))]]
            if "--claim" in argv:  # a built-in claim id is fine; keep the file's claims the subject
                argv = argv[:1] + argv[3:]
        argv.append("--quick")
        return argv
    if kind == "figures":
        return ["figures", "--out", draw(st.sampled_from([FILES["root"], FILES["good"], FILES["proc"], ""]))]
    if kind == "bare":
        return draw(st.sampled_from([[], ["--help"], ["--version"], ["epsilon", "--help"]]))
    return draw(
        st.sampled_from([["frobnicate"], ["epsilon"], ["calibrate", "--eps"], ["run"], ["--timeout", "1"]])
    )


any_command = st.one_of(
    privacy_command(),
    privacy_command(),
    envelope_command(),
    envelope_command(),
    run_command(),
    other_command(),
)


#: the child's stream encodings: 'ascii' is a terminal with PYTHONIOENCODING=ascii ('§' in verify --list)
ENCODINGS = st.sampled_from(["utf-8", "utf-8", "ascii"])


def _with_timeout(argv: list[str], timeout: str = TIMEOUT_S) -> list[str]:
    if (
        argv
        and argv[0] in ("calibrate", "epsilon", "audit", "run", "verify", "figures")
        and "--help" not in argv
    ):
        return [*argv, "--timeout", timeout]
    return argv


def run_and_check(argv: list[str], timeout: str = TIMEOUT_S, encoding: str = "utf-8") -> float:
    """Run ``argv`` (with ``--timeout`` added where it applies), assert the contract, return seconds."""
    argv = _with_timeout(argv, timeout)
    rc, out, err, elapsed = run_cli(argv, encoding=encoding)
    check_contract(argv, rc, out, err)
    return elapsed


def _examples(default: int) -> int:
    return int(os.environ.get("DPTHEORY_FUZZ_EXAMPLES", default))


# 20 commands per default run (CI: the profile's derandomize fixes them); the long profile below
# (-m slow) runs 600 with the longer timeout.
@settings(max_examples=_examples(20), deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=any_command, encoding=ENCODINGS)
def test_cli_fuzz_contract(argv, encoding):
    run_and_check(argv, encoding=encoding)


@pytest.mark.slow
@settings(max_examples=_examples(600), deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=any_command, encoding=ENCODINGS)
def test_cli_fuzz_contract_long(argv, encoding):
    run_and_check(argv, TIMEOUT_LONG_S, encoding)


@pytest.mark.parametrize(
    "argv",
    [
        # the reproducers, each once, deterministically
        [
            "epsilon",
            "--algo",
            "dpsgd",
            "--noise-multiplier",
            "38745322",
            "--sample-rate",
            "0.3",
            "--steps",
            "1000000000",
            "--delta",
            "1e-100",
        ],
        [
            "epsilon",
            "--algo",
            "d2psgd",
            "--noise-multiplier",
            "2000",
            "--sample-rate",
            "2e-5",
            "--steps",
            "20001",
            "--delta",
            "0.2",
        ],
        ["epsilon", "--algo", "dpsgd", "--noise-multiplier", "3", "--delta", "1e-5", "--orders", "1e300"],
        [
            "epsilon",
            "--algo",
            "dpsgd",
            "--noise-multiplier",
            "1",
            "--delta",
            "1e-5",
            "--max-noise-ratio",
            "nan",
        ],
        ["verify", "--claim", "dicesgd.lemma-a7", "--report", "/"],
        ["run", "--algo", "dpsgd", "--problem", "quadratic", "--dim", "100000"],
        [
            "epsilon",
            "--algo",
            "d2psgd",
            "--noise-multiplier",
            "3",
            "--delta",
            "1e-5",
            "--steps",
            "1000000000",
        ],
        ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "d2p2sgd", "--steps", "1000000000"],
        ["audit", "--algo", "dpsgd", "--noise-multiplier", "1", "--delta", "1e-5", "--steps", "1000000000"],
        ["audit", "--algo", "dicesgd", "--noise-multiplier", "4", "--delta", "1e-5", "--steps", "1000000000"],
        [
            "epsilon",
            "--algo",
            "d2psgd",
            "--noise-multiplier",
            "3",
            "--delta",
            "1e-5",
            "--schedule-file",
            FILES["fifo"],
        ],
        ["run", "--algo", "dpsgd", "--problem", "dicesgd-b1", "--seeds", "1000000"],
        # review of the GDP fast path (F3): exp overflow in the rounding guard at mu = 2e8
        [
            "epsilon",
            "--algo",
            "clip21sgd2m",
            "--mode",
            "certified",
            "--accountant",
            "pld",
            "--noise-multiplier",
            "1e-8",
            "--rounds",
            "1",
            "--delta",
            "1e-5",
        ],
        [
            "epsilon",
            "--algo",
            "dpsgd",
            "--mode",
            "certified",
            "--accountant",
            "pld",
            "--sample-rate",
            "1",
            "--steps",
            "1",
            "--noise-multiplier",
            "1e-8",
            "--delta",
            "1e-5",
        ],
        # issue 18: the envelope on every path
        ["epsilon", "--algo", "dicesgd", "--noise-multiplier", "4", "--delta", "1e-5", "--steps", "1e9"],
        [
            "epsilon",
            "--algo",
            "dpsgd",
            "--noise-multiplier",
            "4",
            "--delta",
            "1e-5",
            "--steps",
            "1e9",
            "--accountant",
            "pld",
        ],
        [
            "epsilon",
            "--algo",
            "dpsgd",
            "--noise-multiplier",
            "0.1",
            "--delta",
            "1e-5",
            "--steps",
            "10",
            "--accountant",
            "pld",
        ],
        [
            "calibrate",
            "--algo",
            "d2p2sgd",
            "--eps",
            "2",
            "--delta",
            "1e-5",
            "--steps",
            "1e9",
            "--accountant",
            "pld",
        ],
        ["epsilon", "--algo", "dicesgd", "--noise-multiplier", "1", "--delta", "1e-5", "--epochs", "1e300"],
        # found by the fuzz: epochs / q overflows to inf before the 2^53 check (a traceback)
        [
            "calibrate",
            "--algo",
            "dpsgd",
            "--eps",
            "1e-3",
            "--delta",
            "1e-5",
            "--epochs",
            "1e300",
            "--sample-rate",
            "1e-9",
        ],
        ["audit", "--algo", "dpsgd", "--noise-multiplier", "1", "--delta", "1e-5", "--epochs", "1e300"],
        ["audit", "--algo", "dicesgd", "--noise-multiplier", "1", "--delta", "1e-5", "--samples", "1e12"],
        [
            "epsilon",
            "--algo",
            "d2psgd",
            "--noise-multiplier",
            "1",
            "--delta",
            "1e-5",
            "--schedule-file",
            FILES["huge-line"],
        ],
        [
            "audit",
            "--algo",
            "d2psgd",
            "--noise-multiplier",
            "2",
            "--delta",
            "1e-5",
            "--schedule",
            "exp",
            "--schedule-rho",
            "1e6",
            "--sample-rate",
            "1",
            "--steps",
            "1000",
        ],
        ["run", "--algo", "dpsgd", "--problem", "quadratic", "--plot", ""],
        ["verify", "--list", "--seed", "-1"],
    ],
)
def test_known_bad_inputs_keep_the_contract(argv):
    assert run_and_check(argv) < float(TIMEOUT_S) + 20


@pytest.mark.parametrize("seconds", ["1e8", "1.0000001e8", "1e10", "1e300"])
def test_timeout_at_its_overflow_edge(seconds):
    """--timeout is the last option here (run_and_check would append its own)."""
    argv = ["epsilon", "--algo", "dpsgd", "--noise-multiplier", "1", "--delta", "1e-5", "--timeout", seconds]
    rc, out, err, _ = run_cli(argv)
    check_contract(argv, rc, out, err)
    assert (rc == 2) == (float(seconds) > 1e8)


def test_ascii_terminal_verify_list():
    run_and_check(["verify", "--list"], encoding="ascii")
