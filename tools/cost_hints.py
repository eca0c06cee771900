"""Measured seconds per claim, the source of :mod:`verification.claim_costs`' tables.

Each number is a claim's summed check wall time in a serial run on the 2-core development machine
(``python benchmarks/verify_identity.py costs SNAP`` prints them from a snapshot).  These timings are
machine-specific development data, so they live here, outside the product package; ``dptheory
verify --jobs`` needs only the slow claims, which ``python -m tools.cost_hints`` prints in the form
of ``verification/claim_costs.py`` (``tests/verification/test_claim_costs.py`` keeps them equal).
"""

from __future__ import annotations

#: ``dptheory verify --all --quick``, seconds per claim
QUICK: dict[str, float] = {
    "clip21.alg3-implementation": 0.5,
    "clip21.code-noise": 0.0,
    "clip21.cor1": 1.1,
    "clip21.cor1-utility": 0.0,
    "clip21.eq16": 0.0,
    "clip21.eq8-factor": 0.0,
    "clip21.example1": 0.4,
    "clip21.heavy-ball": 5.3,
    "clip21.lemma1": 0.0,
    "clip21.lemma10": 0.0,
    "clip21.lemma11": 0.0,
    "clip21.lemma12": 0.0,
    "clip21.lemma13": 0.0,
    "clip21.lemma14": 0.0,
    "clip21.lemma15": 0.0,
    "clip21.lemma16": 0.0,
    "clip21.lemma17": 0.0,
    "clip21.lemma18": 0.0,
    "clip21.lemma19": 0.0,
    "clip21.lemma2": 0.0,
    "clip21.lemma3": 0.0,
    "clip21.lemma4": 0.0,
    "clip21.lemma5": 0.0,
    "clip21.lemma6": 0.0,
    "clip21.lemma7": 0.0,
    "clip21.lemma8": 0.0,
    "clip21.lemma9": 0.0,
    "clip21.message-bound": 1.1,
    "clip21.reduction-clip21sgd": 0.6,
    "clip21.thm1": 0.0,
    "clip21.thm1-part2": 0.0,
    "clip21.thm2": 4.5,
    "clip21.thm3": 0.0,
    "clip21.thm4": 0.0,
    "clip21.thm5": 0.0,
    "d2p2.a5-dpsgd-comparison": 0.1,
    "d2p2.a8-dpsgd-comparison": 0.1,
    "d2p2.a9-c1": 0.0,
    "d2p2.clipping-bias": 0.0,
    "d2p2.code-schedule": 0.0,
    "d2p2.cor1": 2.0,
    "d2p2.cor2": 0.5,
    "d2p2.jl-probability-remark": 0.3,
    "d2p2.lemma1": 0.7,
    "d2p2.lemma3": 0.1,
    "d2p2.lemma4": 0.6,
    "d2p2.lemma5": 8.5,
    "d2p2.lemma6": 0.0,
    "d2p2.noise-schedule": 1.0,
    "d2p2.nonconvex-complexity": 0.8,
    "d2p2.projection-postprocessing": 1.9,
    "d2p2.reduction-d2psgd": 0.7,
    "d2p2.reduction-dp2sgd": 0.2,
    "d2p2.reduction-privsgd": 0.0,
    "d2p2.thm1": 3.6,
    "d2p2.thm1-proof-constants": 0.0,
    "d2p2.thm2": 4.0,
    "d2p2.thm3": 0.3,
    "dicesgd.app-c4": 0.1,
    "dicesgd.code-noise": 1.2,
    "dicesgd.cor-a9": 0.7,
    "dicesgd.cor3.8": 1.6,
    "dicesgd.eq9": 0.4,
    "dicesgd.example-b1": 0.0,
    "dicesgd.fixed-point-ef": 4.4,
    "dicesgd.fixed-point-gc": 3.8,
    "dicesgd.gaussian-mechanism": 1.1,
    "dicesgd.lemma-a1": 0.8,
    "dicesgd.lemma-a10": 2.9,
    "dicesgd.lemma-a5": 0.2,
    "dicesgd.lemma-a6": 0.1,
    "dicesgd.lemma-a7": 9.6,
    "dicesgd.lemma-a8": 0.0,
    "dicesgd.remark-constant-factor": 0.8,
    "dicesgd.step2-composition": 0.0,
    "dicesgd.table1": 0.3,
    "dicesgd.thm2.3": 0.0,
    "dicesgd.thm3.6": 3.1,
    "dicesgd.thm3.7": 2.8,
    "dicesgd.thm3.7-clip-factor": 0.0,
}

#: ``dptheory verify --all``, seconds per claim
FULL: dict[str, float] = {
    "clip21.alg3-implementation": 1.2,
    "clip21.code-noise": 0.1,
    "clip21.cor1": 0.9,
    "clip21.cor1-utility": 0.0,
    "clip21.eq16": 0.0,
    "clip21.eq8-factor": 1.2,
    "clip21.example1": 3.0,
    "clip21.heavy-ball": 56.2,
    "clip21.lemma1": 0.0,
    "clip21.lemma10": 0.0,
    "clip21.lemma11": 0.0,
    "clip21.lemma12": 0.0,
    "clip21.lemma13": 0.0,
    "clip21.lemma14": 0.0,
    "clip21.lemma15": 0.0,
    "clip21.lemma16": 0.0,
    "clip21.lemma17": 0.0,
    "clip21.lemma18": 0.0,
    "clip21.lemma19": 0.0,
    "clip21.lemma2": 0.0,
    "clip21.lemma3": 0.0,
    "clip21.lemma4": 0.0,
    "clip21.lemma5": 0.0,
    "clip21.lemma6": 0.0,
    "clip21.lemma7": 0.0,
    "clip21.lemma8": 0.0,
    "clip21.lemma9": 0.0,
    "clip21.message-bound": 7.0,
    "clip21.reduction-clip21sgd": 52.2,
    "clip21.thm1": 0.3,
    "clip21.thm1-part2": 0.0,
    "clip21.thm2": 20.6,
    "clip21.thm3": 0.0,
    "clip21.thm4": 0.0,
    "clip21.thm5": 0.0,
    "d2p2.a5-dpsgd-comparison": 0.1,
    "d2p2.a8-dpsgd-comparison": 0.0,
    "d2p2.a9-c1": 0.0,
    "d2p2.clipping-bias": 0.1,
    "d2p2.code-schedule": 0.0,
    "d2p2.cor1": 2.3,
    "d2p2.cor2": 0.2,
    "d2p2.jl-probability-remark": 2.7,
    "d2p2.lemma1": 21.6,
    "d2p2.lemma3": 1.2,
    "d2p2.lemma4": 8.0,
    "d2p2.lemma5": 69.8,
    "d2p2.lemma6": 0.3,
    "d2p2.noise-schedule": 2.2,
    "d2p2.nonconvex-complexity": 2.9,
    "d2p2.projection-postprocessing": 5.4,
    "d2p2.reduction-d2psgd": 0.9,
    "d2p2.reduction-dp2sgd": 0.2,
    "d2p2.reduction-privsgd": 0.0,
    "d2p2.thm1": 63.6,
    "d2p2.thm1-proof-constants": 0.0,
    "d2p2.thm2": 6.1,
    "d2p2.thm3": 0.4,
    "dicesgd.app-c4": 0.1,
    "dicesgd.code-noise": 1.4,
    "dicesgd.cor-a9": 1.3,
    "dicesgd.cor3.8": 2.1,
    "dicesgd.eq9": 8.8,
    "dicesgd.example-b1": 0.0,
    "dicesgd.fixed-point-ef": 4.4,
    "dicesgd.fixed-point-gc": 2.6,
    "dicesgd.gaussian-mechanism": 0.7,
    "dicesgd.lemma-a1": 3.9,
    "dicesgd.lemma-a10": 10.4,
    "dicesgd.lemma-a5": 0.1,
    "dicesgd.lemma-a6": 0.2,
    "dicesgd.lemma-a7": 18.5,
    "dicesgd.lemma-a8": 0.2,
    "dicesgd.remark-constant-factor": 9.4,
    "dicesgd.step2-composition": 0.1,
    "dicesgd.table1": 0.1,
    "dicesgd.thm2.3": 0.1,
    "dicesgd.thm3.6": 6.3,
    "dicesgd.thm3.7": 25.5,
    "dicesgd.thm3.7-clip-factor": 0.0,
}

#: claims under this many seconds are left to ``claim_costs.PER_CHECK_S``
MIN_SECONDS = 1.0


def slow(table: dict[str, float]) -> dict[str, float]:
    """The entries of ``table`` of at least :data:`MIN_SECONDS`, sorted by claim id."""
    return {cid: s for cid, s in sorted(table.items()) if s >= MIN_SECONDS}


def main() -> int:
    """Print ``SLOW_QUICK`` and ``SLOW_FULL`` for ``verification/claim_costs.py``."""
    for name, table in (("SLOW_QUICK", QUICK), ("SLOW_FULL", FULL)):
        print(f"{name}: dict[str, float] = {{")
        for cid, seconds in slow(table).items():
            print(f'    "{cid}": {seconds},')
        print("}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
