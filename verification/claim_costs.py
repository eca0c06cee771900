"""Rough run time of the slow claims, used only to order the work of ``dptheory verify --jobs N``.

A free worker takes the ready claim heading the longest estimated chain first, so the last claim to
finish is a short one; :func:`verification.parallel.default_jobs` runs in-process when the estimated
total is too small to pay for workers.  Only the claims that take a second or more matter for
either decision; every other claim is estimated at :data:`PER_CHECK_S` per check.  The numbers are
derived from the measured tables in ``tools/cost_hints.py`` (``python -m tools.cost_hints`` prints
this module's tables; a test keeps the two in step).  A stale entry only makes the schedule less
tight, never a result different.
"""

from __future__ import annotations

#: ``dptheory verify --all --quick``: seconds per claim, for the claims taking at least a second
SLOW_QUICK: dict[str, float] = {
    "clip21.cor1": 1.1,
    "clip21.heavy-ball": 5.3,
    "clip21.message-bound": 1.1,
    "clip21.thm2": 4.5,
    "d2p2.cor1": 2.0,
    "d2p2.lemma5": 8.5,
    "d2p2.noise-schedule": 1.0,
    "d2p2.projection-postprocessing": 1.9,
    "d2p2.thm1": 3.6,
    "d2p2.thm2": 4.0,
    "dicesgd.code-noise": 1.2,
    "dicesgd.cor3.8": 1.6,
    "dicesgd.fixed-point-ef": 4.4,
    "dicesgd.fixed-point-gc": 3.8,
    "dicesgd.gaussian-mechanism": 1.1,
    "dicesgd.lemma-a10": 2.9,
    "dicesgd.lemma-a7": 9.6,
    "dicesgd.thm3.6": 3.1,
    "dicesgd.thm3.7": 2.8,
}

#: ``dptheory verify --all``: seconds per claim, for the claims taking at least a second
SLOW_FULL: dict[str, float] = {
    "clip21.alg3-implementation": 1.2,
    "clip21.eq8-factor": 1.2,
    "clip21.example1": 3.0,
    "clip21.heavy-ball": 56.2,
    "clip21.message-bound": 7.0,
    "clip21.reduction-clip21sgd": 52.2,
    "clip21.thm2": 20.6,
    "d2p2.cor1": 2.3,
    "d2p2.jl-probability-remark": 2.7,
    "d2p2.lemma1": 21.6,
    "d2p2.lemma3": 1.2,
    "d2p2.lemma4": 8.0,
    "d2p2.lemma5": 69.8,
    "d2p2.noise-schedule": 2.2,
    "d2p2.nonconvex-complexity": 2.9,
    "d2p2.projection-postprocessing": 5.4,
    "d2p2.thm1": 63.6,
    "d2p2.thm2": 6.1,
    "dicesgd.code-noise": 1.4,
    "dicesgd.cor-a9": 1.3,
    "dicesgd.cor3.8": 2.1,
    "dicesgd.eq9": 8.8,
    "dicesgd.fixed-point-ef": 4.4,
    "dicesgd.fixed-point-gc": 2.6,
    "dicesgd.lemma-a1": 3.9,
    "dicesgd.lemma-a10": 10.4,
    "dicesgd.lemma-a7": 18.5,
    "dicesgd.remark-constant-factor": 9.4,
    "dicesgd.thm3.6": 6.3,
    "dicesgd.thm3.7": 25.5,
}

#: estimate per check of a claim not listed above (a fast built-in one, or a user's --claims-file)
PER_CHECK_S = 0.1


def estimated_seconds(claim_id: str, n_checks: int, quick: bool) -> float:
    """The expected run time of one claim.

    Args:
        claim_id: the claim's id, e.g. ``"dicesgd.thm3.7"``.
        n_checks: how many checks the claim has (the estimate for a claim not in the tables).
        quick: whether the run is ``--quick``.

    Returns:
        Seconds: the table's entry, else ``PER_CHECK_S * n_checks``.
    """
    table = SLOW_QUICK if quick else SLOW_FULL
    return table.get(claim_id, PER_CHECK_S * n_checks)
