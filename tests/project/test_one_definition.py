"""Facts the package states in several places have one owner that the others derive from."""

from __future__ import annotations

import accounting.algorithms.registry as registry
import accounting.audit as audit
from accounting.algo_names import ALGO_NAMES
from dptheory.cli.main import main


def test_algo_names_are_one_object() -> None:
    assert registry.ALGO_NAMES is ALGO_NAMES and audit.AUDITED_ALGOS is ALGO_NAMES
    assert list(registry.ALGORITHMS) == list(ALGO_NAMES)


def test_the_cli_lists_the_same_names(capsys) -> None:
    assert main(["calibrate", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"algorithm: one of {', '.join(ALGO_NAMES)}" in out
