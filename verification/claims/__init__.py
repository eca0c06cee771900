"""Claim modules, one per paper; each exposes ``CLAIMS: list[Claim]``."""

PAPER_MODULES = {
    "dicesgd": "verification.claims.dicesgd",
    "clip21": "verification.claims.clip21",
    "d2p2": "verification.claims.d2p2",
}

#: Modules whose claims span papers (each claim's ``paper`` picks where it is listed).
SHARED_MODULES = ("verification.claims.released_code",)
