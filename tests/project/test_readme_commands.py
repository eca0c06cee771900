"""The README's two set-up commands are the contract: CI must run the very same test command."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = 'pip install -e ".[test]" && python -m pytest -q'
    assert command in readme
    assert command in ci.splitlines()[-1]
    assert "pip install -e . && dptheory calibrate --eps 2 --delta 1e-5 --algo dicesgd" in readme
