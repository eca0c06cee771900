"""The dependency direction of docs/architecture.md, checked on the code itself."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = ("torch", "sympy", "matplotlib")


def _module_level_imports(path: pathlib.Path) -> set[str]:
    """Top-level package names imported at module level (not inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_import_is_light() -> None:
    code = (
        "import sys, accounting, dptheory, dptheory.api, dptheory.cli.main;"
        f"bad = [m for m in {HEAVY!r} if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_accounting_depends_on_numpy_scipy_only() -> None:
    allowed_third_party = {"numpy", "scipy"}
    own = {"accounting"}
    stdlib = set(sys.stdlib_module_names)
    for path in (ROOT / "accounting").rglob("*.py"):
        for name in _module_level_imports(path):
            assert name in stdlib | allowed_third_party | own | {"__future__"}, f"{path}: imports {name}"


def _all_imports(path: pathlib.Path) -> set[str]:
    """Top-level package names imported anywhere in the file, lazily or not."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_accounting_never_imports_upper_layers() -> None:
    for path in (ROOT / "accounting").rglob("*.py"):
        upper = _all_imports(path) & {"dptheory", "verification", "torch", "sympy", "matplotlib"}
        assert not upper, f"{path} reaches up into {upper}"


def test_cli_subcommands_import_heavy_modules_lazily() -> None:
    for path in (ROOT / "dptheory" / "cli").glob("*.py"):
        heavy = _module_level_imports(path) & set(HEAVY)
        assert not heavy, f"{path} imports {heavy} at module level"


def test_integrations_package_is_light() -> None:
    """``dptheory.integrations`` itself imports nothing heavy; only its submodules need the extras."""
    code = (
        "import sys, dptheory, dptheory.integrations;"
        "bad = [m for m in ('torch', 'opacus', 'flwr') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
