"""Load a user's claims file (``dptheory verify --claims-file FILE``).

A claims file is a Python module that defines ``CLAIMS``: a list or tuple of
:class:`~verification.claim.Claim`, or a function of no arguments returning one (so that costly
set-up runs only when the file is verified, not when it is imported elsewhere). It is written
against the public API :mod:`dptheory.claims`.

Everything that can go wrong while loading is reported as one :class:`ClaimsFileError` whose
message names the problem (missing or unreadable file, syntax error with its line, an exception
raised at import, no ``CLAIMS``, a wrong type, duplicate ids, a ``depends_on`` that names no
known claim). The CLI turns it into one stderr line naming ``--claims-file`` and exit status 2.
Nothing is written and no check runs before the whole file has been validated.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from verification.claim import Check, Claim
from verification.search import Domain, Reading


class ClaimsFileError(ValueError):
    """The claims file cannot be used; the message says why (one line)."""


def _one_line(text: str, n: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def load_claims_file(path: str | Path, *, builtin: Mapping[str, Claim] | None = None) -> list[Claim]:
    """Import ``path`` and return its validated claims, in the order the file gives them.

    ``builtin`` (the registry's claims) is used to reject ids that would shadow a built-in claim
    and to resolve ``depends_on`` entries that name one.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise ClaimsFileError(f"no such file '{path}'")
    if not p.is_file():
        raise ClaimsFileError(f"'{path}' is not a file")
    if p.suffix != ".py":
        raise ClaimsFileError(f"'{path}' must be a Python file ending in .py")
    try:
        source = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ClaimsFileError(f"cannot read '{path}': {getattr(exc, 'strerror', None) or exc}") from None
    try:
        code = compile(source, str(p), "exec")
    except SyntaxError as exc:
        raise ClaimsFileError(f"syntax error in '{path}' line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # e.g. null bytes
        raise ClaimsFileError(f"cannot compile '{path}': {exc}") from None

    # A unique module name per file, so two files with the same stem do not collide; the file's
    # directory is importable while it runs (a claims file may import its own helpers).
    modname = "dptheory_user_claims_" + "".join(ch if ch.isalnum() else "_" for ch in str(p.resolve()))
    spec = importlib.util.spec_from_file_location(modname, p)
    if spec is None:
        raise ClaimsFileError(f"cannot import '{path}'")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module  # dataclasses and pickling look the module up by name
    parent = str(p.resolve().parent)
    sys.path.insert(0, parent)
    from verification.guard import UserExit, guarded

    try:
        with guarded():  # print() to stderr; sys.exit / os._exit become UserExit
            exec(code, module.__dict__)  # noqa: S102 - the user asked to run this file
    except UserExit as exc:
        sys.modules.pop(modname, None)
        raise ClaimsFileError(f"'{path}': {exc} while being imported") from None
    except Exception as exc:  # noqa: BLE001 - any import-time failure is bad input, reported in one line
        sys.modules.pop(modname, None)
        line = _import_line(exc, str(p))
        raise ClaimsFileError(
            f"importing '{path}' raised {type(exc).__name__}{line}: {_one_line(exc)}"
        ) from None
    finally:
        try:
            sys.path.remove(parent)
        except ValueError:
            pass

    if not hasattr(module, "CLAIMS"):
        raise ClaimsFileError(
            f"'{path}' defines no CLAIMS (a list of dptheory.claims.Claim, or a function returning one)"
        )
    claims = module.CLAIMS
    if callable(claims) and not isinstance(claims, Claim):
        try:
            with guarded():
                claims = claims()
        except Exception as exc:  # noqa: BLE001
            raise ClaimsFileError(
                f"CLAIMS() in '{path}' raised {type(exc).__name__}: {_one_line(exc)}"
            ) from None
    return validate_claims(claims, where=f"'{path}'", builtin=builtin)


def _import_line(exc: BaseException, filename: str) -> str:
    import traceback

    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == filename:
            return f" at line {frame.lineno}"
    return ""


def validate_claims(
    claims: object, *, where: str = "CLAIMS", builtin: Mapping[str, Claim] | None = None
) -> list[Claim]:
    """Check the shape of a user's ``CLAIMS``; raise :class:`ClaimsFileError` with the first problem."""
    if isinstance(claims, Claim):
        claims = [claims]
    if isinstance(claims, (str, bytes, Mapping)) or not isinstance(claims, Iterable):
        raise ClaimsFileError(f"CLAIMS in {where} must be a list of Claim (got {type(claims).__name__})")
    out = list(claims)
    if not out:
        raise ClaimsFileError(f"CLAIMS in {where} is empty")
    seen: set[str] = set()
    for i, c in enumerate(out):
        if not isinstance(c, Claim):
            raise ClaimsFileError(
                f"CLAIMS[{i}] in {where} is of type {type(c).__name__}, not a dptheory.claims.Claim"
            )
        if not isinstance(c.id, str) or not c.id.strip() or any(ch.isspace() for ch in c.id):
            raise ClaimsFileError(
                f"CLAIMS[{i}] in {where} has id {c.id!r}: ids are non-empty, without spaces"
            )
        if c.id in seen:
            raise ClaimsFileError(f"duplicate claim id {c.id!r} in {where}")
        if builtin is not None and c.id in builtin:
            raise ClaimsFileError(f"claim id {c.id!r} in {where} is already a built-in claim; rename it")
        seen.add(c.id)
        if not c.checks:
            raise ClaimsFileError(f"claim {c.id!r} in {where} has no checks")
        if c.domain is not None and not isinstance(c.domain, Domain):
            raise ClaimsFileError(
                f"claim {c.id!r} in {where}: domain is of type {type(c.domain).__name__}, "
                "not a dptheory.claims.Domain"
            )
        if any(not isinstance(r, Reading) for r in c.readings):
            raise ClaimsFileError(f"claim {c.id!r} in {where}: readings must be dptheory.claims.Reading")
        bad = [type(ch).__name__ for ch in c.checks if not isinstance(ch, Check)]
        if bad:
            raise ClaimsFileError(f"claim {c.id!r} in {where} has checks that are not Check ({bad[0]})")
    known = seen | set(builtin or ())
    for c in out:
        for pid in c.depends_on:
            if pid not in known:
                raise ClaimsFileError(f"claim {c.id!r} in {where} depends on unknown claim {pid!r}")
    return out
