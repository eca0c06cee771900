"""DiceSGD Theorem 3.7 (= Thm A.3): the privacy statement, and Corollary 3.8."""

from __future__ import annotations

import math

from verification.claim import Check, Claim, Context, Outcome, Verdict
from verification.claims._util import g
from verification.claims.dicesgd._common import PAPER
from verification.claims.dicesgd.thm36 import units_gradient
from verification.search import Reading

# =========================================================================== Theorem 3.7


def _gtilde(c1: float, c2: float, gprime: float, reading: str, c_sens: float | None = None) -> float:
    if reading == "literal":  # C1^2 + 2 min{C2, G'^2}, as rendered
        return c1**2 + 2 * min(c2, gprime**2)
    if reading == "C-squared":  # C1^2 + 2 min{C, G'}^2 with C >= B C2 (the proof's last step)
        if c_sens is None:
            raise ValueError("reading 'C-squared' needs C (>= B C2)")
        return c1**2 + 2 * min(c_sens, gprime) ** 2
    return c1**2 + 2 * min(c2, gprime) ** 2  # C2 squared (App. C.4 / Algorithm 4)


def dicesgd_claimed_sigma1(*, eps, delta, steps, n, c1, c2, gprime, reading="squared", c_sens=None) -> float:
    """Thm 3.7's noise: sigma1^2 = 32 T G~ log(1/delta) / (N^2 eps^2)."""
    gt = _gtilde(c1, c2, gprime, reading, c_sens)
    return math.sqrt(32 * steps * gt * math.log(1 / delta) / (n**2 * eps**2))


#: the two readings of the flattened "min{C 2, G' 2}" in Thm 3.7
THM37_READINGS = {
    "squared": "G~ = C1^2 + 2 min{C2, G'}^2 (C2 squared; App. C.4 / Algorithm 4 prescribes this)",
    "C-squared": "G~ = C1^2 + 2 min{C, G'}^2 with C = B C2, the smallest C the theorem allows "
    "(C1 <= C2 <= C/B; the proof's last step bounds C2 <= C/B)",
}


THM37_CASES = [
    # N, B, T, C1, C2, G (per-sample gradient bound), sigma (variance constant; = G so that the audit
    # instance, whose per-sample deviations are <= G, satisfies Assumption 3.4), eps, delta
    dict(n=10000, batch=100, steps=1000, c1=1.0, c2=1.0, G=3.0, sigma=3.0, eps=2.0, delta=1e-5),
    dict(n=1000, batch=50, steps=200, c1=1.0, c2=2.0, G=3.0, sigma=3.0, eps=2.0, delta=1e-5),
    dict(n=50000, batch=1000, steps=500, c1=1.0, c2=1.0, G=1.0, sigma=1.0, eps=8.0, delta=1e-5),
    # The paper's own experiment (CIFAR-10: N = 50000, B = 1000, 3 epochs, C1 = C2 = 1) with a large
    # but finite gradient bound: Theorem 3.7 states that its noise "does not rely on the specific
    # values of the bounds, which can be arbitrarily large", so G = 101 is inside its domain.
    dict(n=50000, batch=1000, steps=150, c1=1.0, c2=1.0, G=101.0, sigma=101.0, eps=2.0, delta=1e-5),
]
# Same, at eps = 1: the prescribed z is 8.14 > 8, so even the condition the proof needs but the
# statement omits (Mironov et al. 2019 Thm 11, sigma > 4C) holds. Full runs only.
THM37_CASES.insert(
    -1, dict(n=50000, batch=1000, steps=150, c1=1.0, c2=1.0, G=101.0, sigma=101.0, eps=1.0, delta=1e-5)
)


# Under the proof's reading (min{C, G'} with C = B C2) the noise grows with min{B C2, G'}. The
# regime the cases above miss: a gradient bound far above N C2 (G = 1e4, N = 1000, B = 10,
# C1 = C2 = 1, C = B C2 = 10). Each time the differing example is sampled its residual adds
# (G - C1)/B > C2/q to the error state, which releases at most C2 per step, so the difference in
# e never drains and clip(e, C2) differs in *every* step -- unamplified by sampling -- while the
# prescribed noise scales with B C2 only. Theorem 3.7 allows it: the bounds "can be arbitrarily large".
THM37_FAR_CASE = dict(n=1000, batch=10, steps=1000, c1=1.0, c2=1.0, G=1e4, sigma=1e4, eps=2.0, delta=1e-5)


def thm37_domain():
    from verification.search import Constraint, Domain, Param

    return Domain(
        params=(
            Param("N", "any dataset size", 10, 1e7, integer=True),
            Param("B", "B/N <= 1/5", 1, 1e6, integer=True),
            Param("T", "any number of iterations", 1, 1e6, integer=True),
            Param("C1", "0 < C1 <= C2", 1e-3, 1e3),
            Param("C2", "C1 <= C2 <= C/B", 1e-3, 1e3),
            Param("C", "a given constant with C >= B C2", 1e-3, 1e9),
            Param("G", "Assumption 3.5, 'can be arbitrarily large'", 1e-3, 1e9),
            Param("sigma", "Assumption 3.4, 'can be arbitrarily large'", 0.0, 1e9, log=False),
            Param("eps", "eps > 0", 1e-3, 1e3),
            Param("delta", "0 < delta < 1", 1e-12, 0.5),
        ),
        constraints=(
            Constraint("B/N <= 1/5", lambda p: p["B"] <= p["N"] / 5),
            Constraint("C1 <= C2 <= C/B", lambda p: (p["C1"] <= p["C2"]) & (p["C2"] * p["B"] <= p["C"])),
        ),
        source="Theorem 3.7 (= Thm A.3)",
    )


def _thm37_units(ctx: Context) -> Outcome:
    import sympy as sp

    from verification.symbolic import inhomogeneous_terms

    C1, C2, Gp, T, N, eps, dl = sp.symbols("C1 C2 Gprime T N epsilon delta", positive=True)
    gu = units_gradient()
    units = {C1: gu, C2: gu, Gp: gu}
    literal = C1**2 + 2 * sp.Min(C2, Gp**2)
    squared = C1**2 + 2 * sp.Min(C2, Gp) ** 2
    u1, p1 = inhomogeneous_terms(literal, units)
    u2, p2 = inhomogeneous_terms(squared, units)
    return Outcome(
        Verdict.REFUTED if p1 else Verdict.CONFIRMED,
        "as rendered, G~ = C1^2 + 2 min{C2, G'^2} compares a gradient norm C2 with a squared one G'^2 "
        "(and adds it to C1^2); the reading C1^2 + 2 min{C2, G'}^2 is consistent"
        if p1
        else "G~ is dimensionally consistent as rendered",
        "units: thresholds and G' carry gradient units F/X",
        {"literal": {"unit": u1, "problems": p1}, "squared_reading": {"unit": u2, "problems": p2}},
    )


def _thm37_proof_chain(ctx: Context) -> Outcome:
    """Does the paper's own RDP bound, converted with Lemma A.5, reach eps at its own noise?"""
    rows = []
    for eps in (0.5, 1.0, 2.0, 8.0):
        for delta in (1e-5, 1e-8):
            Lg = math.log(1 / delta)
            # RDP(alpha) = 16 alpha T G~/(sigma1^2 N^2) = alpha eps^2/(2 log(1/delta))
            # at the prescribed sigma1
            c = eps**2 / (2 * Lg)
            t = math.sqrt(Lg / c)  # optimal alpha - 1 for c alpha + L/(alpha - 1)
            best = c * (1 + t) + Lg / t
            rows.append(
                {
                    "eps": eps,
                    "delta": delta,
                    "best_alpha": g(1 + t),
                    "eps_from_paper_chain": g(best),
                    "ratio": g(best / eps),
                }
            )
    worst = max(r["ratio"] for r in rows)
    return Outcome(
        Verdict.INCONCLUSIVE if worst > 1 + 1e-12 else Verdict.CONFIRMED,
        "proof gap (not a counterexample): the paper's RDP sum 16 alpha T G~/(sigma1^2 N^2) at its "
        "prescribed sigma1 "
        f"converts (Lemma A.5, best alpha) to {worst:.3f} x eps at best, not eps; the theorem needs "
        "another argument"
        if worst > 1 + 1e-12
        else "the paper's chain reaches eps",
        "closed-form minimisation over alpha of alpha eps^2/(2 log(1/delta)) + log(1/delta)/(alpha-1)",
        {"rows": rows, "note": "independent of the Lemma A.10 domain, which the proof also leaves unchecked"},
    )


def _thm37_privacy_reading(reading: str):
    def check(ctx: Context) -> Outcome:
        return _thm37_privacy(ctx, reading)

    return check


def _thm37_privacy(ctx: Context, reading: str = "squared") -> Outcome:
    """Strongest evidence at the paper's noise: audit lower bound vs certified upper bound vs eps.

    Under the 'C-squared' reading C = B C2 is the worst case for the claim: min{C, G'} is
    nondecreasing in C, so any larger C only prescribes more noise.
    """
    from accounting.algorithms.base import PrivacyParams
    from accounting.algorithms.registry import get_algorithm
    from accounting.audit import run_audit

    rows = []
    cases = [THM37_CASES[0], THM37_CASES[-1]] if ctx.quick else list(THM37_CASES)
    if reading == "C-squared":
        cases.append(THM37_FAR_CASE)
    samples = 1000 if ctx.quick else 20000
    for case in cases:
        gprime = max(0.0, case["G"] + case["sigma"] - case["c1"])
        sigma1 = dicesgd_claimed_sigma1(
            eps=case["eps"],
            delta=case["delta"],
            steps=case["steps"],
            n=case["n"],
            c1=case["c1"],
            c2=case["c2"],
            gprime=gprime,
            reading=reading,
            c_sens=case["batch"] * case["c2"],
        )
        q = case["batch"] / case["n"]
        z = sigma1 * case["batch"] / case["c1"]
        params = PrivacyParams(
            algo="dicesgd",
            noise_multiplier=z,
            delta=case["delta"],
            sample_rate=q,
            steps=case["steps"],
            dataset_size=case["n"],
            batch_size=case["batch"],
            c1=case["c1"],
            c2=case["c2"],
            grad_bound=case["G"],
        )
        # The product's certified number: the smallest of every certified regime (hidden-state RDP,
        # inclusion cap, flush, conservation law), the one `dptheory epsilon --algo dicesgd` reports.
        report = get_algorithm("dicesgd").epsilon(params, mode="certified")
        cert = report.epsilon
        audit = run_audit(params, samples=samples, confidence=0.99, seed=ctx.seed)
        rows.append(
            {
                **case,
                "G_prime": gprime,
                "claimed_sigma1": g(sigma1),
                "noise_multiplier_z=sigma1*B/C1": g(z),
                "eps_certified_upper": g(cert),
                "certified_regime": report.details.get("regime"),
                "eps_audit_lower": g(audit.epsilon_lower),
                "audit_confidence": audit.confidence,
                "audit_method": audit.method,
                "audit_instance": audit.instance,
                "audit_assumptions": [list(a) for a in audit.assumptions_checked],
                "audit_command": (
                    f"dptheory audit --algo dicesgd --noise-multiplier {g(z, 10)} --delta {case['delta']} "
                    f"--sample-rate {q} --steps {case['steps']} --dataset-size {case['n']} --batch-size "
                    f"{case['batch']} "
                    f"--c1 {case['c1']} --c2 {case['c2']} --grad-bound {case['G']} --samples {samples} "
                    "--seed "
                    f"{ctx.seed}"
                ),
            }
        )
    details = {
        "cases": rows,
        "G_tilde_reading": THM37_READINGS[reading] + "; G' = max{0, G + sigma - C1}",
        "certified": "accounting.algorithms dicesgd, mode certified (grad_bound = G): the smallest of the "
        "certified regimes of docs/hidden-state.md",
        "audit": "accounting.audit.run_audit (1-D linear-loss instance, exact likelihood ratios, "
        "Clopper-Pearson)",
        "rule": (
            "refuted if some audit lower bound > eps; confirmed if every certified upper bound <= eps; else "
            "inconclusive"
        ),
    }
    viol = [r for r in rows if r["eps_audit_lower"] > r["eps"]]
    if viol:
        r = viol[0]
        return Outcome(
            Verdict.REFUTED,
            f"at the prescribed sigma1={r['claimed_sigma1']} (z={r['noise_multiplier_z=sigma1*B/C1']}) the "
            "audit proves eps >= "
            f"{r['eps_audit_lower']} (confidence {r['audit_confidence']}) > claimed {r['eps']}",
            "audit lower bound at the paper's noise",
            details,
            reproduce=r["audit_command"],
        )
    if all(r["eps_certified_upper"] <= r["eps"] for r in rows):
        return Outcome(
            Verdict.CONFIRMED,
            f"sound: the certified epsilon at the prescribed noise is <= eps in all {len(rows)} cases",
            "certified hidden-state accountant at the paper's noise",
            details,
        )
    gaps = ", ".join(f"[{r['eps_audit_lower']}, {r['eps_certified_upper']}] vs {r['eps']}" for r in rows)
    return Outcome(
        Verdict.INCONCLUSIVE,
        "neither refuted nor certified: true eps at the paper's noise lies in [audit lower, certified "
        f"upper] = {gaps}",
        "audit lower bound and certified upper bound at the paper's noise",
        details,
    )


# =========================================================================== Corollary 3.8


def cor38_symbolic(ctx: Context) -> Outcome:
    """Corollary 3.8's rate re-derived symbolically from Theorems 3.6 and 3.7 (a check of two claims)."""
    import sympy as sp

    from verification.symbolic import leading_rate

    N, eps, Lg, Gt, Lc, D, C1, C2, d, c = sp.symbols(
        "N epsilon logdelta Gtilde L Delta C1 C2 d c", positive=True
    )
    T = c * N**2 * eps**2 / (Gt * Lg)  # T = O(N^2 eps^2 / (G~ log(1/delta)))
    s1sq = 32 * T * Gt * Lg / (N**2 * eps**2)
    K = 2 * C1**2 + 3 * C2**2 + d * s1sq
    bound = 2 * sp.sqrt(2 * Lc * D * K / T)
    bound = sp.simplify(bound)
    r_sqrt = sp.sqrt(Gt * Lg) / (N * eps)
    r_lin = Gt * Lg / (N * eps)
    lim_sqrt = sp.simplify(bound / r_sqrt)
    n_rate = leading_rate(bound, N, [1 / N, sp.log(N) / N**2, 1 / N**2])
    details = {
        "bound_after_substitution": sp.sstr(bound),
        "sigma1^2_after_substitution": sp.sstr(sp.simplify(s1sq)),
        "bound / (sqrt(G~ log(1/delta))/(N eps))": sp.sstr(lim_sqrt),
        "rate_in_N": n_rate,
    }
    details["bound / (G~ log(1/delta)/(N eps)) as log(1/delta) -> oo"] = sp.sstr(
        sp.limit(bound / r_lin, Lg, sp.oo)
    )
    free_of = lim_sqrt.free_symbols & {N, eps, Lg, Gt}
    ok = not free_of
    details["reading"] = "E||grad f||^2 = O(sqrt(G~ log(1/delta)) / (N eps)) (square root lost in rendering)"
    return Outcome(
        Verdict.CONFIRMED if ok else Verdict.REFUTED,
        "with T = c N^2 eps^2/(G~ log(1/delta)) the Thm 3.6 bound is exactly const·sqrt(G~ "
        "log(1/delta))/(N eps) "
        f"(const = {sp.sstr(lim_sqrt)})"
        if ok
        else f"the substituted bound is not Θ(sqrt(G~ log(1/delta))/(N eps)): ratio {sp.sstr(lim_sqrt)}",
        "sympy substitution of Thm 3.7's sigma1 and the corollary's T into Thm 3.6",
        details,
    )


#: Corollary 3.8's conditions at one point: 3 C1 < C2 <= C/B with C = B C2 (the smallest C allowed)
COR38_POINT = dict(n=10_000, batch=10, c1=1.0, c2=4.0, eps=2.0, delta=1e-5)


def cor38_case(c: float, reading: str = "C-squared") -> dict:
    """Corollary 3.8's privacy half at ``T = floor(c N^2 eps^2/(G~ ln(1/delta)))`` and Thm 3.7's sigma1.

    The instance is :mod:`accounting.audit.dicesgd_sum`'s: every example of D has zero gradient, the
    differing one has gradient ``G = C1 + B T C2`` (Assumption 3.5: any finite G), so G' >= C and
    min{C, G'} = C. One inclusion leaves a residual that cannot drain at C2 per step, so the sum of the
    released updates shifts by ``C2 (T - 1 - tau)`` after the first inclusion tau. At Thm 3.7's noise
    sigma1^2 = 32 T G~ ln(1/delta)/(N^2 eps^2) = 32 c, the shift over its s.d. sigma1 sqrt(T) tends to
    ``C2 N eps / sqrt(32 G~ ln(1/delta))`` as qT grows. That alone does not defeat the O(.) in T: at
    fixed N a small enough c (T = 1) is private. It does once N grows: for any fixed c, N -> infinity
    makes qT = c B N eps^2/(G~ ln(1/delta)) -> infinity and the limit above -> infinity.
    ``eps_lower`` is the sum test's deterministic lower bound (confidence 1).
    """
    from accounting.audit.dicesgd_sum import dicesgd_sum_test_epsilon_lower

    p = COR38_POINT
    n, b, c1, c2, eps, delta = p["n"], p["batch"], p["c1"], p["c2"], p["eps"], p["delta"]
    big_c = b * c2
    gt = _gtilde(c1, c2, math.inf, reading, c_sens=big_c)  # G' >= C on this instance
    steps = max(1, math.floor(c * n**2 * eps**2 / (gt * math.log(1 / delta))))
    sigma1 = dicesgd_claimed_sigma1(
        eps=eps, delta=delta, steps=steps, n=n, c1=c1, c2=c2, gprime=math.inf, reading=reading, c_sens=big_c
    )
    q, z = b / n, sigma1 * b / c1
    # E[shift] = sum_tau q (1-q)^tau (C1/B + C2 (T - 1 - tau)), in closed form
    pin = 1 - (1 - q) ** steps
    mean_shift = c1 / b * pin + c2 * (
        (steps - 1) * pin - ((1 - q) / q) * (pin - steps * q * (1 - q) ** (steps - 1))
    )
    lower = dicesgd_sum_test_epsilon_lower(
        sample_rate=q, noise_multiplier=z, steps=steps, delta=delta, c1=c1, c2=c2, batch_size=b
    )
    return {
        **p,
        "C": big_c,
        "G": c1 + b * steps * c2,
        "G_tilde_reading": reading,
        "G_tilde": gt,
        "c": c,
        "T": steps,
        "sigma1": g(sigma1),
        "mean_shift_of_sum": g(mean_shift),
        "noise_sd_of_sum": g(sigma1 * math.sqrt(steps)),
        "mu_limit_C2_N_eps/sqrt(32_G~_ln(1/delta))": g(
            c2 * n * eps / math.sqrt(32 * gt * math.log(1 / delta))
        ),
        "eps_lower": g(lower),
        "reproduce": (
            'python -c "from accounting.audit.dicesgd_sum import dicesgd_sum_test_epsilon_lower as f; '
            f"print(f(sample_rate={q}, noise_multiplier={z!r}, steps={steps}, delta={delta}, c1={c1}, "
            f'c2={c2}, batch_size={b}))"'
        ),
    }


def _cor38_privacy(ctx: Context) -> Outcome:
    """The corollary's privacy half, checked directly (not through the refuted Thm 3.7)."""
    plan = {
        "C-squared": (1.0, 0.1) if ctx.quick else (1.0, 0.1, 0.01),
        "squared": (0.01,) if ctx.quick else (0.01, 0.001),
    }
    rows = [cor38_case(c, reading) for reading, cs in plan.items() for c in cs]
    bad = {r["G_tilde_reading"] for r in rows if r["eps_lower"] > r["eps"]}
    details = {
        "cases": rows,
        "readings_of_G~": {k: THM37_READINGS[k] for k in plan},
        "instance": "accounting.audit.dicesgd_sum: zero-gradient D, one example with G = C1 + B T C2 (never "
        "drains); sum test on the released updates, add/remove, Poisson sampling q = B/N",
        "assumptions": "Thm 3.7's (the corollary's privacy half rests on it): Assumptions 3.4-3.5 with "
        "G and sigma finite; 0 < 3 C1 < C2 <= C/B (C = B C2); B/N <= 1/5",
        "rule": "refuted if the deterministic lower bound exceeds eps for every reading of G~ and every c "
        "tried",
    }
    r = rows[0]
    if bad == set(plan) and all(x["eps_lower"] > x["eps"] for x in rows):
        return Outcome(
            Verdict.REFUTED,
            f"N={r['n']}, B={r['batch']}, C1={r['c1']}, C2={r['c2']}, C=B C2={r['C']}, eps={r['eps']}, "
            f"delta={r['delta']}, T = c N^2 eps^2/(G~ ln(1/delta)) with c = {r['c']} (T={r['T']}), Thm 3.7's "
            f"sigma1={r['sigma1']}: the sum of the updates shifts by {r['mean_shift_of_sum']} on average "
            f"against a noise s.d. of {r['noise_sd_of_sum']}, so eps >= {r['eps_lower']} (deterministic); "
            f"not (eps, delta)-DP at any of {len(rows)} (c, G~-reading) pairs, c from "
            f"{min(x['c'] for x in rows)} to 1. The O(.) in T does not rescue it: for any fixed c, N -> "
            "infinity makes qT = c B N eps^2/(G~ ln(1/delta)) -> infinity, and the shift-to-noise ratio "
            "tends to C2 N eps/sqrt(32 G~ ln(1/delta)) -> infinity (at fixed N, a c small enough for T = 1 "
            "is not refuted)",
            "deterministic sum-test lower bound at the corollary's own T and sigma1",
            details,
            reproduce=r["reproduce"],
        )
    return Outcome(
        Verdict.INCONCLUSIVE,
        "the sum test does not exceed eps at every (c, reading): "
        + ", ".join(f"c={x['c']} {x['G_tilde_reading']}: {x['eps_lower']}" for x in rows),
        "deterministic sum-test lower bound at the corollary's own T and sigma1",
        details,
    )


def _cor38_n_rate(ctx: Context) -> Outcome:
    import sympy as sp

    N = sp.symbols("N", positive=True)
    derived = sp.sqrt(sp.log(N)) / N  # delta = 1/N, constants dropped (see symbolic check)
    claimed = sp.log(N) / N**2
    lim = sp.limit(derived / claimed, N, sp.oo)
    rows = [
        {
            "N": n,
            "derived_sqrt(logN)/N": g(math.sqrt(math.log(n)) / n),
            "claimed_logN/N^2": g(math.log(n) / n**2),
        }
        for n in (1e3, 1e4, 1e6)
    ]
    return Outcome(
        Verdict.REFUTED if lim == sp.oo else Verdict.CONFIRMED,
        f"the text's rate O(log(N)/N^2) does not follow: the bound is Θ(sqrt(log N)/N) with delta=1/N "
        f"(ratio -> {sp.sstr(lim)}; at N=1e6: {rows[-1]['derived_sqrt(logN)/N']} vs "
        f"{rows[-1]['claimed_logN/N^2']})"
        if lim == sp.oo
        else "rate follows",
        "sympy limit of derived/claimed as N -> oo (delta = 1/N reading of log(N))",
        {"limit": sp.sstr(lim), "rows": rows},
    )


CLAIMS = [
    Claim(
        id="dicesgd.thm3.7",
        paper=PAPER,
        location="Theorem 3.7 (= Thm A.3, App. A.2)",
        statement="With 0 < C1 <= C2 <= C/B, B/N <= 1/5 and sigma1^2 >= 32 T G~ log(1/delta)/(N^2 eps^2), "
        "G~ = C1^2 + 2 min{C2, G'^2}, DiceSGD run for T iterations is (eps, delta)-DP.",
        formula="sigma1^2 >= 32 T G~ log(1/delta) / (N^2 eps^2)  =>  (eps, delta)-DP",
        assumptions=(
            "Assumptions 3.4, 3.5",
            "0 < C1 <= C2 <= C/B",
            "B/N <= 1/5",
            "G' = max{0, G + sigma - C1}",
        ),
        depends_on=("dicesgd.lemma-a10",),
        readings=(
            Reading("C2 squared", THM37_READINGS["squared"]),
            Reading("C squared, C >= B C2", THM37_READINGS["C-squared"] + "; supported by the proof", True),
        ),
        domain=thm37_domain(),
        checks=(
            Check(
                "audit-vs-certified-at-paper-noise",
                "privacy",
                _thm37_privacy_reading("squared"),
                deciding=False,
                reading="C2 squared",
            ),
            Check(
                "audit-vs-certified-C-squared",
                "privacy",
                _thm37_privacy_reading("C-squared"),
                reading="C squared, C >= B C2",
            ),
            Check("proof-chain", "symbolic", _thm37_proof_chain, deciding=False),
            Check("units-of-G~", "symbolic", _thm37_units, deciding=False),
        ),
        notes=(
            "The privacy verdict rests on the strongest evidence: an audit lower bound above eps would "
            "refute; a "
            "certified upper bound at or below eps confirms soundness; otherwise the gap is reported."
        ),
    ),
    Claim(
        id="dicesgd.cor3.8",
        paper=PAPER,
        location="Corollary 3.8",
        statement=(
            "With eta = O(1/sqrt(T)), 0 < 3C1 < C2 <= C/B, sigma1^2 as in Thm 3.7 and T = O(N^2 eps^2/(G~ "
            "log(1/delta))), "
            "DiceSGD is (eps, delta)-DP and E||grad f||^2 = O(sqrt(G~ log(1/delta))/(N eps)); the text adds "
            "a "
            "rate O(log(N)/N^2)."
        ),
        formula="E||grad f(x_t)||^2 = O( sqrt(G~ log(1/delta)) / (N eps) )",
        assumptions=("as Thm 3.6 and 3.7",),
        depends_on=("dicesgd.thm3.6", "dicesgd.thm3.7"),
        checks=(
            Check("privacy-half-direct", "privacy", _cor38_privacy),
            Check("rate-derivation", "symbolic", cor38_symbolic),
            Check(
                "text-rate-logN/N^2",
                "symbolic",
                _cor38_n_rate,
                deciding=False,
                reading="log(N) means delta = 1/N",
            ),
        ),
        notes=(
            "Why the O(.) in T does not rescue the privacy half: the shift-to-noise ratio of the sum test "
            "tends to C2 N eps/sqrt(32 G~ ln(1/delta)), free of c but not of N; that alone is no argument, "
            "since at fixed N a small c escapes the test (N = 1e4, C-squared reading, c = 1e-4 gives T = 1 "
            "and only eps >= 0.188 < 2). The argument is: for any fixed c, let N -> infinity, so qT = c B N "
            "eps^2/(G~ ln(1/delta)) -> infinity and the ratio -> infinity. At the pinned N = 1e4 every T "
            "tried from 2 up is already refuted (T = 2, 3, 5, 10, 100: eps >= 792, 1344, 1888, 2355, 2822). "
            "Instance caveat: the linear loss is not bounded below, so it violates Assumption 3.1 (f "
            "bounded below), and Thm 3.6's step size involves f*. This is fixable, not implemented here: a "
            "Huber loss whose kink lies beyond the iterates' reach gives the same gradients, with a fixed "
            "public eta (the sum test divides the released updates by eta, so it does not depend on eta's "
            "scale). Literal reading G~ = C1^2 + 2 C2 = 9 (no square, no C): eps >= 9.66e5 at the same "
            "point (c = 0.01, T = 38603; cor38_case(0.01, 'literal'))."
        ),
    ),
]
