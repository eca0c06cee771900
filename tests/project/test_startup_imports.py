"""Start-up guard: a static calibration runs without the heavy scipy layers (issue 11, Start-up).

``import scipy.special`` alone costs ~0.5 s of CPU (scipy's array-API layer drags in
``numpy.f2py``, ``numpy.testing``, ``importlib.metadata``...), more than half of the whole
process.  ``accounting.special`` replaces what the RDP code needs; this keeps a later import
from bringing it back unnoticed.  The CPU target itself is measured by
``benchmarks/bench_startup.py`` (timings are too noisy on shared machines for a test).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from accounting.algorithms import ALGORITHMS, get_algorithm
from accounting.algorithms.registry import ALGO_NAMES
from accounting.errors import InvalidParameter

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Modules the static DP-SGD path must not import (the other algorithms load on demand).
FORBIDDEN = (
    "scipy",
    "numpy.testing",
    "numpy.f2py",
    "charset_normalizer",
    "requests",
    "accounting.algorithms.dicesgd",
    "accounting.algorithms.d2p2",
    "accounting.algorithms.clip21",
)


def _loaded_after(statement: str) -> list[str]:
    code = (
        "import sys, contextlib, io\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    {statement}\n"
        f"print([m for m in {FORBIDDEN!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout.strip().splitlines()[-1])  # a list literal printed by the child


@pytest.mark.parametrize(
    "statement",
    [
        "import accounting, accounting.rdp, accounting.calibration, dptheory, dptheory.api",
        "from dptheory.cli.main import main; main(['calibrate', '--eps', '2', '--delta', '1e-5',"
        " '--algo', 'dpsgd'])",
        "from dptheory.cli.main import main; main(['epsilon', '--algo', 'dpsgd', '--noise-multiplier',"
        " '1.1', '--delta', '1e-5'])",
    ],
)
def test_static_path_does_not_import_scipy(statement: str) -> None:
    assert _loaded_after(statement) == []


def test_lazy_registry_is_the_full_mapping() -> None:
    assert list(ALGORITHMS) == list(ALGO_NAMES) and len(ALGORITHMS) == len(ALGO_NAMES)
    for name in ALGO_NAMES:
        algo = get_algorithm(name)
        assert algo.name == name
        assert ALGORITHMS[name] is algo  # one instance per name
    assert dict(ALGORITHMS).keys() == set(ALGO_NAMES)
    for bad in ("DPSGD", "", None, ["dpsgd"]):
        with pytest.raises(InvalidParameter, match="--algo"):
            get_algorithm(bad)  # type: ignore[arg-type]
    assert "nope" not in ALGORITHMS
