"""The tracked tree keeps the documented layout: no stray outputs committed at the root.

A folder named ``''`` (a report written by ``verify --report "''"``) was once committed; these tests
make such an accident fail CI instead of reaching users.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import pytest

from dptheory.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: the design card's top level, plus the folders the project documents (docs/, benchmarks/, examples/,
#: tools/ for development scripts) and CI's entry point.
TOP_LEVEL = {
    ".ci",
    ".gitignore",
    "README.md",
    "pyproject.toml",
    "accounting",
    "benchmarks",
    "docs",
    "dptheory",
    "examples",
    "figures",
    "tests",
    "tools",
    "verification",
}
#: one path component: starts with a letter, digit or underscore (or is a known dot-file); no quotes,
#: spaces or shell metacharacters.
COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(
        ["git", "-c", "core.quotepath=off", "ls-files", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    return [p for p in out.split("\0") if p]


def test_top_level_is_the_documented_layout() -> None:
    files = _tracked()
    assert len(files) > 100, "git ls-files returned too little to be this repository"
    top = {p.split("/", 1)[0] for p in files}
    assert top <= TOP_LEVEL, f"unexpected tracked names at the root: {sorted(top - TOP_LEVEL)}"
    assert {"README.md", "pyproject.toml", "accounting", "dptheory", "verification", "tests"} <= top


def test_no_tracked_name_is_odd() -> None:
    odd = sorted(
        p
        for p in _tracked()
        if any(not COMPONENT.match(c) for c in p.split("/")[:-1] if c != ".ci")
        or not (COMPONENT.match(p.rsplit("/", 1)[-1]) or p == ".gitignore")
    )
    assert not odd, f"tracked paths with odd names (quotes, spaces, empty): {odd}"


def test_component_rule_rejects_the_stray_folder() -> None:
    assert not COMPONENT.match("''") and not COMPONENT.match("") and not COMPONENT.match("a b")
    assert COMPONENT.match("report.md") and COMPONENT.match("test_x.py")


def test_verify_refuses_an_empty_report_path(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rc = main(["verify", "--claim", "dicesgd.example-b1", "--report", ""])
    out, err = capsys.readouterr()
    assert rc == 2
    assert err.count("\n") == 1 and "--report" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_tests_mirror_the_packages_and_are_named_after_what_they_test() -> None:
    """Test modules live in a folder per layer (tests/accounting, tests/verification, ...), none at the
    top of tests/, and no file is named after an episode of the project (review, more, fast, fix)."""
    tests = ROOT / "tests"
    assert not list(tests.glob("test_*.py")), "test modules belong in a folder mirroring the package"
    folders = {p.parent.name for p in tests.rglob("test_*.py")}
    assert folders <= {"accounting", "verification", "optim", "cli", "integrations", "api", "project"}
    episodic = re.compile(r"_(review|reviews|more|fast|fix|fixes|regressions|new|old|v\d+)(_|\.py$)")
    assert not [p.name for p in tests.rglob("test_*.py") if episodic.search(p.name)]
