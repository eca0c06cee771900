"""The claim registry: every claim of the three papers, by id.

``CLAIMS`` is built on first access (the claim modules import numpy only; sympy, hypothesis,
torch and matplotlib are imported inside the checks), so ``import verification.registry``
stays light.
"""

from __future__ import annotations

import importlib

from verification.claim import Claim
from verification.claims import PAPER_MODULES, SHARED_MODULES

PAPERS = tuple(PAPER_MODULES)


def _load() -> dict[str, Claim]:
    claims: dict[str, Claim] = {}
    for paper, modname in PAPER_MODULES.items():
        mod = importlib.import_module(modname)
        for claim in mod.CLAIMS:
            if claim.id in claims:
                raise RuntimeError(f"duplicate claim id {claim.id}")
            if claim.paper != paper:
                raise RuntimeError(f"{claim.id} registered under {paper} but says {claim.paper}")
            claims[claim.id] = claim
    for modname in SHARED_MODULES:
        for claim in importlib.import_module(modname).CLAIMS:
            if claim.id in claims:
                raise RuntimeError(f"duplicate claim id {claim.id}")
            if claim.paper not in PAPER_MODULES:
                raise RuntimeError(f"{claim.id} names an unknown paper {claim.paper}")
            claims[claim.id] = claim
    return claims


def __getattr__(name: str):
    if name == "CLAIMS":
        value = _load()
        globals()["CLAIMS"] = value
        return value
    raise AttributeError(name)


def get_claim(claim_id: str) -> Claim:
    """The claim with this id (KeyError if unknown)."""
    from verification import registry

    return registry.CLAIMS[claim_id]


def claims_for(paper: str) -> list[Claim]:
    """All claims of one paper, in registry order."""
    from verification import registry

    return [c for c in registry.CLAIMS.values() if c.paper == paper]
