"""Every callable at the package roots documents its parameters and result, Google style.

As dp-accounting writes them: a function that takes parameters has an ``Args:`` section and one
that returns something a ``Returns:`` section.  A class documents its constructor's parameters in
``Args:`` (or ``Attributes:`` for a dataclass, whose fields are its parameters), in the class
docstring or in ``__init__``'s.  A protocol has no constructor to document.
"""

from __future__ import annotations

import inspect
import re
import typing

import pytest

import accounting
import dptheory

EXPORTED = [(mod, name) for mod in (accounting, dptheory) for name in mod.__all__]


def _sections(doc: str) -> set[str]:
    return set(re.findall(r"^\s*(Args|Returns|Raises|Attributes|Yields):\s*$", doc, flags=re.M))


def _parameters(sig: inspect.Signature) -> list[str]:
    return [p.name for p in sig.parameters.values() if p.name != "self" and not p.name.startswith("_")]


def missing_sections(obj: object) -> set[str]:
    """The sections ``obj``'s docstrings lack; empty when documented (or not callable)."""
    if not callable(obj):
        return set()
    if inspect.isclass(obj):
        if getattr(obj, "_is_protocol", False):
            return set()
        init = obj.__dict__.get("__init__")
        found = _sections((obj.__doc__ or "") + "\n" + (getattr(init, "__doc__", None) or ""))
        if _parameters(inspect.signature(obj)) and not found & {"Args", "Attributes"}:
            return {"Args"}
        return set()
    sig = inspect.signature(obj)
    found, want = _sections(obj.__doc__ or ""), set()
    if _parameters(sig):
        want.add("Args")
    if sig.return_annotation not in (None, "None", inspect.Signature.empty):
        want.add("Returns")
    return want - found


@pytest.mark.parametrize(("mod", "name"), EXPORTED, ids=[f"{m.__name__}.{n}" for m, n in EXPORTED])
def test_exported_callable_has_google_sections(mod, name) -> None:
    assert missing_sections(getattr(mod, name)) == set()


def test_every_documented_parameter_exists() -> None:
    """The Args entries name real parameters (a renamed parameter cannot leave a stale entry)."""
    checked = 0
    for mod, name in EXPORTED:
        obj = getattr(mod, name)
        if not inspect.isfunction(obj) and not inspect.isfunction(getattr(obj, "__wrapped__", None)):
            continue
        doc = obj.__doc__ or ""
        args = doc.split("Args:", 1)[1] if "Args:" in doc else ""
        args = re.split(r"^\s*(?:Returns|Raises):\s*$", args, flags=re.M)[0]
        documented = {m.strip("*") for m in re.findall(r"^\s{4,8}(\*{0,2}\w+):", args, flags=re.M)}
        assert documented and documented <= set(inspect.signature(obj).parameters), (name, documented)
        checked += 1
    assert checked >= 12  # the functions of both roots were read


def test_the_check_can_fail() -> None:
    def undocumented(x: int) -> int:
        """Does something."""
        return x

    def documented(x: int) -> int:
        """Does something.

        Args:
            x: a number.

        Returns:
            The number.
        """
        return x

    class Plain:
        """No sections."""

        def __init__(self, x: int) -> None:
            self.x = x

    class Proto(typing.Protocol):
        def rdp(self, orders: object) -> object: ...

    assert missing_sections(undocumented) == {"Args", "Returns"}
    assert missing_sections(documented) == set()
    assert missing_sections(Plain) == {"Args"}
    assert missing_sections(Proto) == set()


#: a module docstring says what and why in a screen; derivations and measurements live in docs/
MAX_MODULE_DOCSTRING_LINES = 40


def test_module_docstrings_fit_a_screen() -> None:
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    long = {}
    for pkg in ("accounting", "dptheory", "verification"):
        for path in (root / pkg).rglob("*.py"):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or ""
            if doc.count("\n") + 1 > MAX_MODULE_DOCSTRING_LINES:
                long[str(path.relative_to(root))] = doc.count("\n") + 1
    assert long == {}
