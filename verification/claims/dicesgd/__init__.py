"""Claims of Zhang, Bu, Wu, Hong, *DP-SGD without clipping bias: an error-feedback approach*
(ICLR 2024, arXiv 2311.14632).

One module per group of statements; ``CLAIMS`` lists them in the paper's order. Readings of
formulas whose rendering lost structure are stated in each claim's ``notes`` and ``readings``;
where two readings differ, both are checks (the less faithful one non-deciding).

The helpers that tests, docs and reproduce commands import from ``verification.claims.dicesgd``
are re-exported here.
"""

from __future__ import annotations

from verification.claims.dicesgd import (
    fixed_points,
    hidden_state_steps,
    lemmas,
    mechanism,
    noise_claims,
    rdp_lemmas,
    thm23,
    thm36,
    thm37,
)
from verification.claims.dicesgd._common import PAPER
from verification.claims.dicesgd.fixed_points import (
    ef_fixed_point_residuals,
    fixed_point_ef_domain,
)
from verification.claims.dicesgd.lemmas import lemma_a1_domain
from verification.claims.dicesgd.thm36 import (
    THM36_WITNESS,
    thm36_domain,
    thm36_huber_batch,
    thm36_huber_run,
)
from verification.claims.dicesgd.thm37 import (
    THM37_CASES,
    THM37_FAR_CASE,
    THM37_READINGS,
    dicesgd_claimed_sigma1,
    thm37_domain,
)

_MODULES = (
    mechanism,
    thm23,
    fixed_points,
    lemmas,
    thm36,
    thm37,
    noise_claims,
    rdp_lemmas,
    hidden_state_steps,
)
_BY_ID = {c.id: c for m in _MODULES for c in m.CLAIMS}
#: registry order: main text first (in the paper's order), then App. A, then App. C
_ORDER = (
    "dicesgd.gaussian-mechanism",
    "dicesgd.thm2.3",
    "dicesgd.fixed-point-gc",
    "dicesgd.fixed-point-ef",
    "dicesgd.thm3.6",
    "dicesgd.thm3.7",
    "dicesgd.remark-constant-factor",
    "dicesgd.cor3.8",
    "dicesgd.table1",
    "dicesgd.lemma-a1",
    "dicesgd.eq9",
    "dicesgd.lemma-a5",
    "dicesgd.step2-composition",
    "dicesgd.thm3.7-clip-factor",
    "dicesgd.lemma-a6",
    "dicesgd.lemma-a7",
    "dicesgd.lemma-a8",
    "dicesgd.cor-a9",
    "dicesgd.lemma-a10",
    "dicesgd.example-b1",
    "dicesgd.app-c4",
)
assert set(_ORDER) == set(_BY_ID), sorted(set(_ORDER) ^ set(_BY_ID))
CLAIMS = [_BY_ID[cid] for cid in _ORDER]

__all__ = [
    "CLAIMS",
    "PAPER",
    "THM36_WITNESS",
    "THM37_CASES",
    "THM37_FAR_CASE",
    "THM37_READINGS",
    "ef_fixed_point_residuals",
    "dicesgd_claimed_sigma1",
    "fixed_point_ef_domain",
    "lemma_a1_domain",
    "thm36_domain",
    "thm36_huber_batch",
    "thm36_huber_run",
    "thm37_domain",
]
