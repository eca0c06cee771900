"""The README's example outputs, rerun: ``python -m tools.readme_examples [--write README.md]``.

Two kinds of example are checked:

* a ```` ```console ```` block: its first line is ``$ dptheory ...``, the rest is what the command
  prints on stdout;
* a ```` ```python ```` block followed directly by a ```` ```text ```` block: the text block is
  what the Python block prints.

Each example runs in a fresh process (what a user sees, not the state of a test session), in an
empty temporary directory so that nothing is written into the repository. Timings (``12.3s``)
are masked before comparing. Without ``--write`` the command reports the examples that differ
(exit 1); with it, their outputs are rewritten in place (atomically), which is how the README is
refreshed after a change to what a command prints. ``tests/project/test_readme_examples.py`` fails when
they drift.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^```(\w*)\s*$")
_TIMING = re.compile(r"\b\d+(?:\.\d+)?s\b")
_CLI = "import sys; from dptheory.cli.main import main; sys.argv[0] = 'dptheory'; sys.exit(main())"


@dataclass(frozen=True)
class Example:
    """One checked example: ``kind`` is ``console`` or ``python``; ``lines`` is the expected output's
    span ``(first, end)`` in the document's lines (``end`` exclusive)."""

    kind: str
    code: str
    expected: str
    lines: tuple[int, int]


def blocks(text: str) -> list[tuple[str, str, int, int]]:
    """Fenced code blocks as ``(language, body, first body line, end line)`` (0-based, end exclusive)."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        out.append((m.group(1), "\n".join(lines[i + 1 : j]), i + 1, j))
        i = j + 1
    return out


def examples(text: str) -> list[Example]:
    """The checked examples of a Markdown document, in order."""
    found, bs, lines = [], blocks(text), text.split("\n")
    for k, (lang, body, first, end) in enumerate(bs):
        if lang == "console":
            head, _, rest = body.partition("\n")
            if not head.startswith("$ dptheory "):
                raise ValueError(f"line {first + 1}: a console block starts with '$ dptheory ...'")
            found.append(Example("console", head[2:], rest + "\n" if rest else "", (first + 1, end)))
        elif lang == "python" and k + 1 < len(bs) and bs[k + 1][0] == "text":
            nxt = bs[k + 1]
            between = lines[end + 1 : nxt[2] - 1]
            if all(not ln.strip() for ln in between):
                found.append(Example("python", body, nxt[1] + "\n" if nxt[1] else "", (nxt[2], nxt[3])))
    return found


def run(example: Example, timeout: float = 300.0) -> str:
    """What the example prints on stdout, in a fresh process in an empty directory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONWARNINGS", "ignore")
    env["COLUMNS"] = "100"
    if example.kind == "console":
        argv = shlex.split(example.code)[1:]
        cmd = [sys.executable, "-c", _CLI, *argv]
    else:
        cmd = [sys.executable, "-c", example.code]
    with tempfile.TemporaryDirectory(prefix="readme-example-") as tmp:
        done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        first = example.code.splitlines()[0]
        raise RuntimeError(f"{first!r} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def same(expected: str, actual: str) -> bool:
    """Equal after masking timings and trailing whitespace."""

    def norm(s: str) -> list[str]:
        return [_TIMING.sub("<t>s", ln.rstrip()) for ln in s.rstrip("\n").split("\n")]

    return norm(expected) == norm(actual)


def refresh(text: str, outputs: dict[int, str]) -> str:
    """``text`` with the expected output of example ``k`` replaced by ``outputs[k]``."""
    lines = text.split("\n")
    for k, ex in sorted(enumerate(examples(text)), key=lambda kv: -kv[1].lines[0]):
        if k in outputs:
            a, b = ex.lines
            lines[a:b] = outputs[k].rstrip("\n").split("\n") if outputs[k].strip() else []
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.readme_examples", description=__doc__)
    ap.add_argument("file", nargs="?", default=str(ROOT / "README.md"))
    ap.add_argument("--write", action="store_true", help="rewrite the outputs that differ, in place")
    args = ap.parse_args(argv)
    path = Path(args.file)
    text = path.read_text(encoding="utf-8")
    changed = {}
    for k, ex in enumerate(examples(text)):
        got = run(ex)
        if not same(ex.expected, got):
            changed[k] = got
            sys.stderr.write(f"differs: {ex.code.splitlines()[0]}\n")
    if changed and args.write:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".readme-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(refresh(text, changed))
        os.replace(tmp, path)
        sys.stderr.write(f"{len(changed)} example output(s) rewritten in {path}\n")
        return 0
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
