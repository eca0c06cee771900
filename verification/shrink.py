"""Shrink a counterexample to a simpler one that still violates the claim.

The adversarial search returns the *worst* point it found, typically a float like
``eps=999.9999999999998``. A reader needs the *simplest* point that still fails: each coordinate
is replaced, one at a time, by the shortest decimal that keeps the point inside the box and the
constraints and still violating (1 significant digit, then 2, ...; integers stay integers).
Coordinates are visited in order and the pass repeats until nothing changes, so the result is a
local minimum of "number of significant digits", verified with the caller's ``violates``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from verification.search import Domain


def _round_sig(x: float, digits: int) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    return float(f"{x:.{digits}g}")


def _candidates(x: float, integer: bool) -> list[float]:
    out: list[float] = []
    if integer:
        out.append(float(round(x)))
    for d in range(1, 16):
        v = _round_sig(x, d)
        if integer:
            v = float(round(v))
        if v not in out:
            out.append(v)
        if v == x:
            break
    return out


def shrink_point(
    point: dict[str, float],
    domain: Domain,
    violates: Callable[[dict[str, float]], bool],
    *,
    max_evaluations: int = 400,
) -> tuple[dict[str, float], int]:
    """The simplest point near ``point`` (inside ``domain``'s box and constraints) for which
    ``violates`` still holds; returns it and the number of evaluations spent."""
    box = {p.name: p for p in domain.params}
    best = dict(point)
    spent = 0
    changed = True
    while changed and spent < max_evaluations:
        changed = False
        for name, value in list(best.items()):
            p = box.get(name)
            for cand in _candidates(value, bool(p and p.integer)):
                if cand == value or spent >= max_evaluations:
                    break
                if p is not None and not (p.lo <= cand <= p.hi):
                    continue
                trial = {**best, name: cand}
                if not domain.contains(trial):
                    continue
                spent += 1
                if violates(trial):
                    best = trial
                    changed = True
                    break
    return best, spent
