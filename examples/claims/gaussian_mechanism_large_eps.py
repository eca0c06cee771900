"""Example claims file (false): the classical Gaussian-mechanism noise used for eps >= 1.

Dwork & Roth's Theorem A.1 (sigma = sqrt(2 ln(1.25/delta)) Delta/eps) is stated for eps < 1 only,
yet the formula is often applied at larger eps. Balle & Wang (2018, Sec. 2) show it then fails.
This file states the extension as a claim; the check finds a counterexample and replays it in
60-digit arithmetic, and our audit proves the violation independently.

    dptheory verify --claims-file examples/claims/gaussian_mechanism_large_eps.py
"""

from __future__ import annotations

from pathlib import Path

from gaussian_exact import classical_sigma, delta_ratio, delta_ratio_exact

from dptheory.claims import Check, Claim, Context, Domain, Outcome, Param, privacy_outcome, search_check

DOMAIN = Domain(
    params=(
        Param("eps", "[1, inf): the extension beyond the theorem", 1.0, 1e3),
        Param("delta", "(0, 1)", 1e-100, 1 - 1e-9),
    ),
    fixed={
        "Delta": "1 (delta(eps) depends on sigma/Delta only)",
        "sigma": "c Delta/eps, c = sqrt(2 ln(1.25/delta))",
    },
    source="Dwork & Roth (2014) Theorem A.1, applied outside its stated eps < 1",
)


HERE = str(Path(__file__).resolve().parent)


def _reproduce(p: dict) -> str:
    return (
        f"python -c \"import sys; sys.path.insert(0, '{HERE}'); from gaussian_exact import replay; "
        f'print(replay({p["eps"]!r}, {p["delta"]!r}))"'
    )


def _audit_textbook_point(ctx: Context) -> Outcome:
    """The textbook parameters eps = 10, delta = 1e-5: one full-batch DP-SGD step is exactly a
    Gaussian mechanism with sensitivity C, so the project's DP-SGD audit applies as is."""
    eps, delta = 10.0, 1e-5
    z = float(classical_sigma(eps, delta))
    return privacy_outcome(
        "dpsgd",
        [{"eps": eps, "delta": delta, "noise_multiplier": z, "sample_rate": 1.0, "steps": 1}],
        samples=1000,
        seed=ctx.seed,
    )


CLAIMS = [
    Claim(
        id="gauss.classical-eps-above-1",
        paper="folklore (Dwork & Roth 2014, Thm A.1 extended)",
        location="Theorem A.1 used for eps >= 1",
        statement="For every eps >= 1 and delta in (0, 1), sigma = sqrt(2 ln(1.25/delta)) Delta/eps "
        "makes the Gaussian mechanism (eps, delta)-DP.",
        formula="sigma = sqrt(2 ln(1.25/delta)) Delta/eps  =>  (eps, delta)-DP for eps >= 1",
        assumptions=("L2 sensitivity Delta",),
        domain=DOMAIN,
        checks=(
            Check(
                "exact-curve-search",
                "privacy",
                search_check(
                    DOMAIN,
                    delta_ratio,
                    exact=delta_ratio_exact,
                    what="exact delta(eps)/delta",
                    reproduce=_reproduce,
                ),
            ),
            Check("audit-eps10", "privacy", _audit_textbook_point),
        ),
    )
]
