"""DiceSGD Def. 2.2: the classic Gaussian mechanism."""

from __future__ import annotations

import numpy as np

from verification import properties as P
from verification.claim import Check, Claim, Context, Outcome, Plot, Verdict
from verification.claims._util import g
from verification.claims.dicesgd._common import PAPER

# =========================================================================== Def. 2.2


def _gm_delta_grid(ctx: Context):
    eps_grid = np.geomspace(0.05, 50.0, 14 if ctx.quick else 40)
    delta_grid = [1e-10, 1e-6, 1e-5, 1e-3, 1e-2, 0.1, 0.3, 0.5, 0.9, 1.0]
    return eps_grid, delta_grid


def _gm_exact(ctx: Context) -> Outcome:
    eps_grid, delta_grid = _gm_delta_grid(ctx)
    rows = []
    for eps in eps_grid:
        for delta in delta_grid:
            s = P.classic_gaussian_sigma(eps, delta)
            rows.append((float(eps), delta, s, P.gaussian_delta_exact(eps, 1.0, s)))
    # hypothesis: search the stated domain eps > 0, 0 < delta <= 1 for a violation
    from hypothesis import strategies as st

    strat = st.tuples(st.floats(0.01, 60.0), st.floats(1e-12, 1.0))

    def violates(p):
        eps, delta = p
        s = P.classic_gaussian_sigma(eps, delta)
        return P.gaussian_delta_exact(eps, 1.0, s) > delta * (1 + 1e-9)

    found = P.search_counterexample(strat, violates, max_examples=60 if ctx.quick else 400, seed=ctx.seed)
    bad = [r for r in rows if r[3] > r[1] * (1 + 1e-9)]
    small_eps_bad = [r for r in rows if r[0] < 1 and r[3] > r[1] * (1 + 1e-9)]
    details = {
        "domain": (
            "eps in [0.05, 50] (log grid) x delta in {1e-10..1}; plus hypothesis over eps in [0.01, 60], "
            "delta in [1e-12, 1]"
        ),
        "sensitivity": 1.0,
        "grid_cases": len(rows),
        "grid_violations": len(bad),
        "violations_with_eps_below_1": len(small_eps_bad),
        "hypothesis_examples": 60 if ctx.quick else 400,
        "hypothesis_seed": ctx.seed,
        "exact_delta": "Balle & Wang (2018) Thm 8: Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D)",
    }
    if found is not None:
        eps, delta = found
        s = P.classic_gaussian_sigma(eps, delta)
        details["hypothesis_counterexample"] = {
            "eps": g(eps),
            "delta_target": g(delta),
            "sigma": g(s),
            "delta_exact": g(P.gaussian_delta_exact(eps, 1.0, s, precise=True)),
        }
    plots = ()
    if bad or found is not None:
        # the most instructive cases: eps = 5 at delta = 1e-5 and the worst ratio on the grid
        worst = max(bad, key=lambda r: r[3] / r[1]) if bad else None
        showcase = []
        for eps, delta in ((5.0, 1e-5), (5.0, 0.5), (20.0, 1e-5)):
            s = P.classic_gaussian_sigma(eps, delta)
            showcase.append(
                {
                    "eps": eps,
                    "delta_target": delta,
                    "sigma": g(s),
                    "delta_exact": g(P.gaussian_delta_exact(eps, 1.0, s, precise=True)),
                }
            )
        details["showcase"] = showcase
        if worst is not None:
            details["worst_grid_case"] = {
                "eps": g(worst[0]),
                "delta_target": g(worst[1]),
                "sigma": g(worst[2]),
                "delta_exact": g(P.gaussian_delta_exact(worst[0], 1.0, worst[2], precise=True)),
            }
        details["smallest_violating_eps_on_grid"] = g(min(r[0] for r in bad)) if bad else None
        details["smallest_violating_eps_by_delta"] = {
            f"{d:g}": g(min((r[0] for r in bad if r[1] == d), default=float("nan"))) for d in delta_grid
        }
        series = []
        for delta in (1e-5, 0.5):
            xs = [r[0] for r in rows if r[1] == delta]
            ys = [r[3] / delta for r in rows if r[1] == delta]
            series.append({"label": f"target delta={delta:g}", "x": xs, "y": ys})
        plots = (
            Plot(
                name="gaussian_mechanism_ratio",
                title="Classic Gaussian mechanism: exact delta / target delta",
                xlabel="epsilon",
                ylabel="exact delta / target delta",
                series=tuple(series),
                hlines=({"label": "target (ratio 1)", "y": 1.0},),
                logx=True,
                logy=True,
            ),
        )
        ex = details.get("hypothesis_counterexample") or details["worst_grid_case"]
        return Outcome(
            Verdict.REFUTED,
            "sigma = sqrt(2 ln(1.25/delta))/eps is not (eps, delta)-DP for all eps > 0: e.g. "
            f"eps={ex['eps']}, "
            f"delta={ex['delta_target']} gives sigma={ex['sigma']} with exact delta {ex['delta_exact']} > "
            "target "
            f"({len(bad)}/{len(rows)} grid cases violate; {len(small_eps_bad)} of them with eps < 1; "
            f"at delta=1e-5 from eps ~ {details['smallest_violating_eps_by_delta']['1e-05']})",
            "exact Gaussian-mechanism delta vs the target on a grid and a hypothesis search",
            details,
            plots,
        )
    return Outcome(
        Verdict.CONFIRMED,
        f"no violation in {len(rows)} grid cases and {details['hypothesis_examples']} hypothesis examples",
        "exact Gaussian-mechanism delta vs the target on a grid and a hypothesis search",
        details,
    )


def _gm_small_eps(ctx: Context) -> Outcome:
    """The classic theorem's own domain (eps < 1): does the formula hold there?"""
    eps_grid = np.linspace(0.02, 0.999, 12 if ctx.quick else 50)
    deltas = np.geomspace(1e-12, 0.999, 8 if ctx.quick else 30)
    worst = 0.0
    n = 0
    for eps in eps_grid:
        for delta in deltas:
            s = P.classic_gaussian_sigma(eps, delta)
            worst = max(worst, P.gaussian_delta_exact(eps, 1.0, s) / delta)
            n += 1
    verdict = Verdict.CONFIRMED if worst <= 1 + 1e-9 else Verdict.REFUTED
    return Outcome(
        verdict,
        f"on eps in (0,1), {n} cases: max exact/target delta = {worst:.4g}",
        "exact delta on the classic theorem's domain eps < 1 (Dwork & Roth Thm 3.22)",
        {
            "cases": n,
            "max_ratio_exact_over_target": g(worst),
            "eps_range": [0.02, 0.999],
            "delta_range": [1e-12, 0.999],
        },
    )


CLAIMS = [
    Claim(
        id="dicesgd.gaussian-mechanism",
        paper=PAPER,
        location="Def. 2.2",
        statement=(
            "Adding N(0, sigma^2 I) with sigma = Delta sqrt(2 ln(1.25/delta))/eps to a function of L2 "
            "sensitivity "
            "Delta gives (eps, delta)-DP for any eps > 0, delta <= 1."
        ),
        formula=(
            "sigma = Delta_f sqrt(2 ln(1.25/delta)) / eps  =>  (eps, delta)-DP  for all eps > 0, delta <= 1"
        ),
        assumptions=("L2 sensitivity Delta_f", "eps > 0, 0 < delta <= 1"),
        checks=(
            Check("exact-delta", "property", _gm_exact),
            Check(
                "classic-domain-eps<1",
                "property",
                _gm_small_eps,
                deciding=False,
                reading="Dwork-Roth Thm 3.22's own domain eps < 1",
            ),
        ),
        notes="Compared with the exact delta(eps) of the Gaussian mechanism (Balle & Wang 2018).",
    ),
]
