"""The split of ``accounting.rdp`` into modules keeps its names and its monkeypatch points honest.

``accounting.rdp`` is a façade over ``rdp_curve``, ``_log_a_int``, ``_log_a_frac``,
``_frac_chord``, ``_rdp_evaluate`` and ``sigma_grid``.  A re-exported name must be the very object of its home
module (a copy of a cache would not be the cache that is cleared), and a tunable global that
tests rebind must be read only in its home module, so that rebinding it there reaches every
reader (a reader holding its own copy would make such a test pass without testing anything).
"""

from __future__ import annotations

import dis
import importlib
import inspect
import types
from pathlib import Path

import pytest

import accounting.rdp as rdp

HOME = {
    "RdpCurve": "accounting.rdp_curve",
    "AUTO_GRID_MIN_ROWS": "accounting.sigma_grid",
    "AUTO_GRID_THRESHOLD": "accounting.sigma_grid",
    "EVALUATIONS": "accounting.sigma_grid",
    "GRID_RATIO": "accounting.sigma_grid",
    "GRID_TOL": "accounting.sigma_grid",
    "evaluate_steps": "accounting._rdp_evaluate",
}
#: Globals the tests rebind (monkeypatch), with the one module whose code reads them.
TUNABLE = {
    "_DENSE_BUDGET": "accounting._rdp_evaluate",
    "_DENSE_MAX_ORDER": "accounting._rdp_evaluate",
    "_DENSE_MAX_ROWS": "accounting._rdp_evaluate",
    "_FRAC_MAX_TERMS": "accounting._rdp_evaluate",
    "_PRECISE_BELOW": "accounting._log_a_int",
    "_CUMSUM_COLS": "accounting._log_a_frac",
    "AUTO_GRID_MIN_ROWS": "accounting.sigma_grid",
    "AUTO_GRID_THRESHOLD": "accounting.sigma_grid",
}
SPLIT = ["rdp", "rdp_curve", "_log_a_int", "_log_a_frac", "_frac_chord", "_rdp_evaluate", "sigma_grid"]


def _global_reads(mod: types.ModuleType) -> set[str]:
    """Names the module's own code (functions, methods, nested code) reads as globals."""
    names: set[str] = set()
    stack = [
        obj.__code__
        for obj in vars(mod).values()
        if inspect.isfunction(obj) and obj.__module__ == mod.__name__
    ]
    for cls in (c for c in vars(mod).values() if inspect.isclass(c) and c.__module__ == mod.__name__):
        stack += [f.__code__ for f in vars(cls).values() if inspect.isfunction(f)]
    for obj in vars(mod).values():  # lru_cache / contextmanager wrappers
        wrapped = getattr(obj, "__wrapped__", None)
        if inspect.isfunction(wrapped) and wrapped.__module__ == mod.__name__:
            stack.append(wrapped.__code__)
    while stack:
        code = stack.pop()
        names |= {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def test_public_and_reexported_names_are_the_home_objects() -> None:
    for name in rdp.__all__:
        assert hasattr(rdp, name), name
    for name, home in HOME.items():
        assert getattr(rdp, name) is getattr(importlib.import_module(home), name), name


@pytest.mark.parametrize("name", sorted(TUNABLE))
def test_tunable_globals_are_read_only_in_their_home_module(name: str) -> None:
    home = TUNABLE[name]
    assert hasattr(importlib.import_module(home), name)
    readers = [
        m.__name__
        for m in (importlib.import_module(f"accounting.{s}") for s in SPLIT)
        if name in _global_reads(m)
    ]
    assert readers == [home], f"{name} is read as a global in {readers}, patch point is {home}"
    if name.startswith("_"):  # not re-exported, so a stale monkeypatch on the façade fails loudly
        assert not hasattr(rdp, name)


def test_the_reader_scan_sees_known_reads() -> None:
    """The scan above can fail: it finds reads that are known to exist."""
    ev = importlib.import_module("accounting._rdp_evaluate")
    assert {"_DENSE_BUDGET", "_FRAC_MAX_TERMS", "log_a_int_dense"} <= _global_reads(ev)
    assert "GRID_CACHE" in _global_reads(importlib.import_module("accounting.sigma_grid"))
    assert "_COARSE" in _global_reads(rdp)  # through subsampled_gaussian_rdp


def test_split_modules_stay_small() -> None:
    root = Path(rdp.__file__).parent
    for s in SPLIT:
        n = len((root / f"{s}.py").read_text().splitlines())
        assert n < 600, f"accounting/{s}.py has {n} lines"
