"""Example claims file (true): the classical Gaussian mechanism for eps < 1.

Dwork & Roth, "The Algorithmic Foundations of Differential Privacy" (2014), Theorem A.1: for
eps in (0, 1) and c^2 > 2 ln(1.25/delta), the Gaussian mechanism with sigma >= c Delta/eps is
(eps, delta)-DP. Checked against the exact privacy curve of Balle & Wang (2018), with an
adversarial search over the theorem's whole domain.

    dptheory verify --claims-file examples/claims/gaussian_mechanism.py [--report out/] [--json]
"""

from __future__ import annotations

from pathlib import Path

from gaussian_exact import classical_sigma, delta_ratio, delta_ratio_exact

from dptheory.claims import (
    Check,
    Claim,
    Context,
    Domain,
    Outcome,
    Param,
    Reading,
    Verdict,
    certified_epsilon,
    search_check,
)

DOMAIN = Domain(
    params=(
        # eps < 1 strictly; the box stops one part in 1e9 short of it
        Param("eps", "(0, 1)", 1e-6, 1 - 1e-9),
        Param("delta", "(0, 1): no bound stated", 1e-100, 1 - 1e-9),
        Param("factor", "sigma >= c Delta/eps: factor = sigma eps/(c Delta) >= 1", 1.0, 1e3),
    ),
    fixed={
        "Delta": "1 (delta(eps) depends on sigma/Delta only)",
        "c": "sqrt(2 ln(1.25/delta)), the infimum of the allowed c (delta(eps) is continuous in c)",
    },
    source="Dwork & Roth (2014), Theorem A.1",
)

HERE = str(Path(__file__).resolve().parent)
READING = "sigma = c Delta/eps at the infimum c = sqrt(2 ln(1.25/delta)), eps in (0, 1)"


def _reproduce(p: dict) -> str:
    return (
        f"python -c \"import sys; sys.path.insert(0, '{HERE}'); "
        f'from gaussian_exact import replay; print(replay({p["eps"]!r}, {p["delta"]!r}, {p["factor"]!r}))"'
    )


def _certified_is_looser(ctx: Context) -> Outcome:
    """Our RDP accountant's certified eps at the classical noise (one step, q = 1): an upper bound,
    so it can only be *above* the true eps; a value below the claim would confirm, above says nothing."""
    rows = []
    for eps, delta in [(0.1, 1e-5), (0.5, 1e-5), (0.9, 1e-3)]:
        z = float(classical_sigma(eps, delta))
        cert = certified_epsilon(algo="dpsgd", noise_multiplier=z, delta=delta, sample_rate=1.0, steps=1)
        rows.append({"eps": eps, "delta": delta, "noise_multiplier": z, "eps_certified": cert})
    ok = all(r["eps_certified"] <= r["eps"] for r in rows)
    return Outcome(
        Verdict.CONFIRMED if ok else Verdict.INCONCLUSIVE,
        "certified eps " + ", ".join(f"{r['eps_certified']:.4g} (claim {r['eps']})" for r in rows),
        "dptheory certified accountant (RDP) at sigma = c/eps, one full-batch step",
        {"cases": rows},
    )


CLAIMS = [
    Claim(
        id="gauss.classical-eps-below-1",
        paper="Dwork & Roth 2014",
        location="Theorem A.1",
        statement="For eps in (0, 1) and c^2 > 2 ln(1.25/delta), the Gaussian mechanism with "
        "sigma >= c Delta/eps is (eps, delta)-DP.",
        formula="sigma = sqrt(2 ln(1.25/delta)) Delta/eps  =>  (eps, delta)-DP for 0 < eps < 1",
        assumptions=("L2 sensitivity Delta", "0 < eps < 1", "0 < delta < 1"),
        domain=DOMAIN,
        readings=(Reading(READING, "the theorem's own statement (the proof uses eps < 1)", headline=True),),
        checks=(
            Check(
                "exact-curve-search",
                "privacy",
                search_check(
                    DOMAIN,
                    delta_ratio,
                    exact=delta_ratio_exact,
                    what="exact delta(eps)/delta",
                    # the corner the float box cannot reach exactly: eps -> 1, delta -> 1
                    extra_points=[{"eps": 0.999999, "delta": 0.999999, "factor": 1.0}],
                    reproduce=_reproduce,
                ),
                reading=READING,
            ),
            Check("certified-accountant", "privacy", _certified_is_looser, deciding=False, can_refute=False),
        ),
        notes="Truth established independently: Balle & Wang's delta(eps) is exact (an iff), so the "
        "search's ratio is the true delta over the claimed one.",
    )
]
