"""Private names stay private: no module of the product packages reaches into another's privates.

The rule, read off the leading underscore as PEP 8 does:

* a name ``_x`` (not a dunder) is private to the module that defines it: no other module may
  ``from m import _x`` or read ``m._x`` through an imported module ``m``, and no ``__all__`` lists it;
* a module ``pkg._m`` is private to the package ``pkg`` that contains it: modules inside ``pkg``
  (its siblings, their sub-packages and ``pkg/__init__.py``) may import it and its public names, no
  module outside ``pkg`` may.  So ``accounting._log_a_int.log_a_int_dense`` is ``accounting``'s
  internal interface, used by ``accounting._rdp_evaluate``; ``dptheory`` may not import it.

Scope: every module of ``accounting/``, ``dptheory/`` and ``verification/``, imports anywhere in the
file (lazy ones too), relative imports resolved.  Tests and tools may use privates; product code
shares through public names, each with a docstring or a ``#:`` comment.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("accounting", "dptheory", "verification")


def _private(segment: str) -> bool:
    return segment.startswith("_") and not (segment.startswith("__") and segment.endswith("__"))


def _module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: pathlib.Path) -> bool:
    rel = pathlib.Path(*name.split("."))
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def _module_allowed(importer: str, target: str) -> bool:
    """May module ``importer`` import module ``target``? Only from inside the package of its first
    private component."""
    segments = target.split(".")
    for i, segment in enumerate(segments):
        if _private(segment):
            package = ".".join(segments[:i])
            return importer == package or importer.startswith(package + ".")
    return True


def crossings(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """Every use of another module's private name (or private module) in ``path``, one line each."""
    me = _module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in PACKAGES:
                    continue
                if not _module_allowed(me, alias.name):
                    found.append(f"{node.lineno}: import {alias.name}")
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            if base.split(".")[0] not in PACKAGES:
                continue
            if not _module_allowed(me, base):
                found.append(f"{node.lineno}: from {base} import ...")
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if _is_module(sub, root):
                    modules[alias.asname or alias.name] = sub
                    if not _module_allowed(me, sub):
                        found.append(f"{node.lineno}: from {base} import {alias.name}")
                elif _private(alias.name) and base != me:
                    found.append(f"{node.lineno}: from {base} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, inner = [], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in modules:
                target = ".".join([modules[inner.id], *reversed(chain)])
                if target != me:
                    found.append(f"{node.lineno}: {target}.{node.attr}")
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            if isinstance(node.value, ast.List | ast.Tuple):
                for elt in node.value.elts:
                    if isinstance(elt, ast.Constant) and isinstance(elt.value, str) and _private(elt.value):
                        found.append(f"{node.lineno}: __all__ lists {elt.value}")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def test_no_module_uses_another_modules_private_names() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for pkg in PACKAGES
        for path in sorted((ROOT / pkg).rglob("*.py"))
        for line in crossings(path)
    ]
    assert found == []


def test_the_scan_sees_each_form(tmp_path: pathlib.Path) -> None:
    """The scan can fail: a throw-away package with one crossing of each kind is caught, line by line,
    and the allowed forms are not."""
    pkg = tmp_path / "accounting"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_inner.py").write_text("def helper():\n    return 1\n")
    (pkg / "core.py").write_text("_SECRET = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "user.py").write_text(
        "from accounting._inner import helper\n"  # allowed: inside the package of `_inner`
        "from accounting.core import _SECRET\n"  # crossing 1
        "import accounting.core as core\n"
        "x = core._SECRET\n"  # crossing 2
        "from .. import core as c2\n"
        "y = c2._SECRET + c2.__name__.count('a')\n"  # crossing 3 (the dunder is fine)
        "__all__ = ['helper', '_SECRET']\n"  # crossing 4
    )
    (tmp_path / "dptheory").mkdir()
    (tmp_path / "dptheory" / "__init__.py").write_text("")
    (tmp_path / "dptheory" / "api.py").write_text("from accounting import _inner\n")  # crossing 5
    user = crossings(pkg / "sub" / "user.py", tmp_path)
    assert [line.split(":")[0] for line in user] == ["2", "4", "6", "7"], user
    assert crossings(tmp_path / "dptheory" / "api.py", tmp_path) == ["1: from accounting import _inner"]
    assert crossings(pkg / "core.py", tmp_path) == []
