"""DiceSGD Lemmas A.1, A.7 and A.10 (the lemmas checked before this package was split)."""

from __future__ import annotations

import math

import numpy as np

from verification import properties as P
from verification.claim import Check, Claim, Context, Outcome, Verdict
from verification.claims._util import g
from verification.claims.dicesgd._common import PAPER

# =========================================================================== Lemma A.1


def _lemma_a1_nonexpansive(ctx: Context) -> Outcome:
    from hypothesis import strategies as st

    @st.composite
    def pairs(dr):
        d = dr(st.integers(1, 4))
        fl = st.floats(-100, 100, allow_nan=False, allow_infinity=False)
        x = np.array([dr(fl) for _ in range(d)])
        y = np.array([dr(fl) for _ in range(d)])
        return x, y, dr(st.floats(1e-3, 50.0))

    n_ex = 100 if ctx.quick else 1000
    found = P.search_counterexample(
        pairs(), lambda p: P.nonexpansive_gap(*p) > 1e-9, max_examples=n_ex, seed=ctx.seed
    )
    rng = np.random.default_rng(ctx.seed)
    n_rand = 20000 if ctx.quick else 200000
    d = 3
    x = rng.normal(size=(n_rand, d)) * rng.exponential(3, size=(n_rand, 1))
    y = x + rng.normal(size=(n_rand, d)) * rng.exponential(1, size=(n_rand, 1))
    c = rng.exponential(2.0, size=n_rand)

    def resid(v):
        nv = np.linalg.norm(v, axis=1, keepdims=True)
        return v - v * np.minimum(1.0, c[:, None] / np.maximum(nv, 1e-300))

    gaps = np.linalg.norm(resid(x) - resid(y), axis=1) - np.linalg.norm(x - y, axis=1)
    worst = float(gaps.max())
    details = {
        "hypothesis_examples": n_ex,
        "random_pairs": n_rand,
        "max_gap_random": g(worst),
        "tolerance": 1e-9,
        "seed": ctx.seed,
    }
    if found is not None or worst > 1e-9:
        return Outcome(
            Verdict.REFUTED, "x - clip(x, C) expands some pair", "hypothesis + random pairs", details
        )
    return Outcome(
        Verdict.CONFIRMED,
        f"||c(x)-c(y)|| <= ||x-y|| on {n_ex} hypothesis + {n_rand} random pairs (max gap {worst:.2e})",
        "hypothesis + random pairs in R^1..R^4",
        details,
    )


def lemma_a1_domain():
    from verification.search import Domain, Param

    return Domain(
        params=(
            Param("C", "C > 0", 1e-8, 1e8),
            Param("|x|", "x in R^d", 1e-8, 1e8),
            Param("|y|", "y in R^d", 1e-8, 1e8),
            Param("angle(x, y)", "[0, pi]", 0.0, math.pi, log=False),
        ),
        fixed={
            "d": "2: x - clip(x, C) = max(0, 1 - C/||x||) x is radial, so ||c(x) - c(y)|| / ||x - y|| "
            "depends only on ||x||, ||y|| and their angle; every dimension reduces to the plane of 0, x, y "
            "(d = 1 is angle 0 or pi, a corner)",
            "variance": "Var(c(X)) = E||c(X) - c(X')||^2 / 2 with X' an independent copy, so the variance "
            "claim is implied pointwise by the same ratio (squared)",
        },
        source="Lemma A.1 (proof A.4)",
    )


def _lemma_a1_ratio(p):
    C, rx, ry, th = p["C"], p["|x|"], p["|y|"], p["angle(x, y)"]
    x = np.stack([rx, np.zeros_like(rx)], axis=1)
    y = np.stack([ry * np.cos(th), ry * np.sin(th)], axis=1)

    def c(v):
        n = np.linalg.norm(v, axis=1, keepdims=True)
        return np.maximum(0.0, 1 - C[:, None] / np.maximum(n, 1e-300)) * v

    den = np.linalg.norm(x - y, axis=1)
    with np.errstate(all="ignore"):
        r = np.linalg.norm(c(x) - c(y), axis=1) / den
    return np.where(den > 1e-12 * np.maximum(rx, ry), r, np.nan)


def _lemma_a1_search(ctx: Context) -> Outcome:
    from verification.search import adversarial_search

    tol = 1e-9
    res = adversarial_search(
        lemma_a1_domain(),
        _lemma_a1_ratio,
        samples=512 if ctx.quick else 8192,
        maxiter=20 if ctx.quick else 100,
        seed=ctx.seed,
        tol=tol,
    )
    details = res.details()
    if res.counterexample is not None:
        cx = res.counterexample
        import mpmath as mp

        mp.mp.dps = 50
        C, rx, ry, th = (mp.mpf(cx[k]) for k in ("C", "|x|", "|y|", "angle(x, y)"))
        x, y = mp.matrix([rx, 0]), mp.matrix([ry * mp.cos(th), ry * mp.sin(th)])

        def c(v):
            return max(mp.mpf(0), 1 - C / mp.norm(v)) * v

        exact = mp.norm(c(x) - c(y)) / mp.norm(x - y)
        details["exact_ratio_at_argmax"] = float(exact)
        if exact > 1:
            return Outcome(
                Verdict.REFUTED,
                f"x - clip(x, C) expands at {cx}: ratio {float(exact)} (50 digits)",
                "adversarial search + mpmath replay",
                details,
            )
        return Outcome(
            Verdict.CONFIRMED,
            f"the float maximum {res.max_ratio:.17g} is rounding: exactly {float(exact):.17g} <= 1; "
            + res.summary(),
            "adversarial search + mpmath replay",
            details,
        )
    return Outcome(
        Verdict.CONFIRMED,
        "confirmed on the searched domain: " + res.summary(),
        "adversarial search over (C, |x|, |y|, angle) (the plane reduction covers every dimension); "
        "supports the firm non-expansiveness derived in the claim's notes",
        details,
    )


def _lemma_a1_variance(ctx: Context) -> Outcome:
    from hypothesis import strategies as st

    @st.composite
    def dists(dr):
        d = dr(st.integers(1, 3))
        k = dr(st.integers(2, 6))
        fl = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
        pts = np.array([[dr(fl) for _ in range(d)] for _ in range(k)])
        w = np.array([dr(st.floats(0.01, 1.0)) for _ in range(k)])
        c = dr(st.floats(1e-3, 30.0))
        which = dr(st.sampled_from(["residual", "clip"]))
        return pts, w, c, which

    def bad(p):
        pts, w, c, which = p
        fn = (lambda v: P.clip_residual(v, c)) if which == "residual" else (lambda v: P.clip(v, c))
        return P.variance_gap(pts, w, fn) > 1e-9 * (1 + float(np.abs(pts).max()) ** 2)

    n_ex = 80 if ctx.quick else 600
    found = P.search_counterexample(dists(), bad, max_examples=n_ex, seed=ctx.seed)
    details = {
        "maps": ["x - clip(x, C)", "clip(x, C)"],
        "distributions": "discrete, 2..6 atoms in R^1..R^3",
        "hypothesis_examples": n_ex,
        "seed": ctx.seed,
    }
    if found is not None:
        pts, w, c, which = found
        details["counterexample"] = {"points": pts.tolist(), "weights": w.tolist(), "C": c, "map": which}
        return Outcome(Verdict.REFUTED, "Var(c(X)) > Var(X) for a non-expansive c", "hypothesis", details)
    return Outcome(
        Verdict.CONFIRMED,
        f"Var(c(X)) <= Var(X) in {n_ex} hypothesis cases (discrete X, both maps)",
        "supporting: hypothesis search over discrete distributions and two maps (not every non-expansive "
        "c; the claim's notes derive the bound for all of them)",
        details,
    )


# =========================================================================== Lemma A.7


def _lemma_a7_symbolic(ctx: Context) -> Outcome:
    import sympy as sp

    x, a, b = sp.symbols("x a b", real=True)
    s = sp.symbols("sigma", positive=True)
    al = sp.symbols("alpha", positive=True)
    # exponent of p^alpha q^(1-alpha) (without the normalising constant), completed in x
    expo = -(al * (x - a) ** 2 + (1 - al) * (x - b) ** 2) / (2 * s**2)
    # sympy's rule-based integrator (manual=True) completes the square and takes the erf limits, the
    # textbook route; it yields the same closed form as the default algorithm cascade at ~1/7 the CPU
    integral = sp.integrate(sp.exp(sp.expand(expo)), (x, -sp.oo, sp.oo), conds="none", manual=True)
    derived = sp.simplify(sp.log(sp.simplify(integral / sp.sqrt(2 * sp.pi * s**2))) / (al - 1))
    stated = al * (a - b) ** 2 / (2 * s**2)
    diff = sp.simplify(sp.expand_log(derived - stated, force=True))
    zero = diff == 0
    return Outcome(
        Verdict.CONFIRMED if zero else Verdict.REFUTED,
        f"sympy: (1/(alpha-1)) log ∫ p^alpha q^(1-alpha) = {sp.sstr(derived)}; paper states alpha "
        "(a-b)^2/(2 sigma^2); "
        f"difference simplifies to {sp.sstr(diff)}",
        "symbolic integration over the real line (alpha > 0, sigma > 0)",
        {"derived": sp.sstr(derived), "stated": sp.sstr(stated), "difference": sp.sstr(diff)},
    )


def _lemma_a7_quadrature(ctx: Context) -> Outcome:
    rng = np.random.default_rng(ctx.seed)
    n = 5 if ctx.quick else 40
    worst = 0.0
    cases = []
    for _ in range(n):
        alpha = float(rng.uniform(1.01, 40.0))
        a, b = rng.normal(scale=3, size=2)
        s = float(rng.uniform(0.3, 5.0))
        exact = P.renyi_gaussian_quadrature(alpha, a, b, s, dps=30)
        stated = P.renyi_gaussian_closed(alpha, a, b, s)
        rel = abs(exact - stated) / max(abs(exact), 1e-300)
        worst = max(worst, rel)
        cases.append([g(alpha), g(a), g(b), g(s), g(exact, 12), g(stated, 12)])
    ok = worst < 1e-10
    return Outcome(
        Verdict.CONFIRMED if ok else Verdict.REFUTED,
        f"30-digit quadrature agrees with alpha (a-b)^2/(2 sigma^2) at {n} random points (max rel. error "
        f"{worst:.1e})",
        "mpmath quadrature at random (alpha, a, b, sigma), seeds as given",
        {
            "cases_[alpha,a,b,sigma,quadrature,stated]": cases[:10],
            "n_cases": n,
            "max_relative_error": worst,
            "tolerance": 1e-10,
        },
    )


# =========================================================================== Lemma A.10


def _a10_scan(ctx: Context, reading: str, sensitivities: tuple[float, ...]):
    ps = (
        [0.001, 0.01, 0.05, 0.1, 0.2]
        if ctx.quick
        else [0.0005, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2]
    )
    zs = [4.01, 5.0, 8.0, 16.0] if ctx.quick else [4.01, 4.5, 5.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0]
    worst = None
    n_cases = 0
    viol = 0
    sources = set()
    per_c = {}
    for c in sensitivities:
        worst_c = 0.0
        for p in ps:
            for z in zs:
                sigma = z * c  # absolute noise std; sigma > 4C <=> z > 4
                # the conditions imply alpha(alpha-1) <= sigma^2 (alpha-1)/2 + sigma^2/(2p)
                # (literal C3 >= ln form), which bounds the largest order to scan
                amax = int(min(4096, math.ceil(sigma**2 / 2 + sigma / math.sqrt(2 * p) + 2)))
                cand = np.unique(
                    np.concatenate(
                        [np.arange(2, min(amax, 200) + 1), np.geomspace(2, max(amax, 2), 300).astype(int)]
                    )
                )
                alphas = np.array(
                    [a for a in cand if P.mtz_domain(p, sigma, a, reading=reading, sensitivity=c)],
                    dtype=float,
                )
                if alphas.size == 0:
                    continue
                rdp, src = P.sgm_rdp(p, z, alphas)  # RDP depends on the multiplier z = sigma / C only
                sources.add(src)
                bound = 2 * p * p * c * c * alphas / sigma**2
                n_cases += alphas.size
                ratio = rdp / bound
                viol += int(np.sum(rdp > bound * (1 + 1e-9)))
                i = int(np.nanargmax(ratio))
                worst_c = max(worst_c, float(ratio[i]))
                if worst is None or ratio[i] > worst["ratio"]:
                    worst = {
                        "C": c,
                        "p": p,
                        "sigma": sigma,
                        "noise_multiplier_sigma/C": z,
                        "alpha": float(alphas[i]),
                        "exact_rdp": float(rdp[i]),
                        "bound_2p^2C^2alpha/sigma^2": float(bound[i]),
                        "ratio": float(ratio[i]),
                        "cross_check_integer_formula": P.sgm_rdp_integer(p, z, int(alphas[i])),
                    }
        per_c[f"C={c:g}"] = g(worst_c)
    return worst, n_cases, viol, sorted(sources), ps, zs, per_c


def _a10_check(reading: str, sensitivities: tuple[float, ...]):
    def fn(ctx: Context) -> Outcome:
        worst, n_cases, viol, sources, ps, zs, per_c = _a10_scan(ctx, reading, sensitivities)
        details = {
            "C3_form": reading,
            "sensitivities_C": list(sensitivities),
            "p_grid": ps,
            "noise_multiplier_grid_sigma/C": zs,
            "orders": (
                "integer alpha >= 2 satisfying both stated conditions (evaluated in sigma, as written); all "
                "up to "
                "200, then 300 log-spaced up to the domain edge, max 4096"
            ),
            "cases": n_cases,
            "violations": viol,
            "worst_exact/bound_per_C": per_c,
            "rdp_source": sources,
            "worst_case": {k: (g(v, 8) if isinstance(v, float) else v) for k, v in (worst or {}).items()},
        }
        if viol:
            w = worst
            return Outcome(
                Verdict.REFUTED,
                f"inside the stated domain ({reading} C3) the exact subsampled-Gaussian RDP exceeds 2p^2 "
                "C^2 alpha/sigma^2: "
                f"C={w['C']:g}, sigma={w['sigma']:.4g} (> 4C), p={w['p']}, alpha={w['alpha']:.0f}: exact "
                f"{w['exact_rdp']:.5g} > bound {w['bound_2p^2C^2alpha/sigma^2']:.5g} ({viol}/{n_cases} "
                "cases; worst "
                f"exact/bound per C: {per_c}). The alpha conditions are stated in sigma, not sigma/C, so "
                "for C > 1 "
                "they admit orders where subsampling no longer helps; for C <= 1 (the paper uses C = 2C1/B "
                "<< 1) "
                "and in the normalised form it holds",
                "exact RDP (integer orders) vs the bound over the stated conditions",
                details,
            )
        if n_cases == 0:
            return Outcome(Verdict.INCONCLUSIVE, "the stated domain is empty on the grid", "grid", details)
        return Outcome(
            Verdict.CONFIRMED,
            f"bound holds in all {n_cases} (C, p, sigma, alpha) cases of the {reading} domain "
            f"(max exact/bound = {worst['ratio']:.3f}; per C: {per_c})",
            "exact RDP (integer orders) vs the bound over the stated conditions",
            details,
        )

    return fn


def _a10_units(ctx: Context) -> Outcome:
    """Units of the lemma's conditions when sigma and C carry the units of the released quantity."""
    import sympy as sp

    from verification.symbolic import inhomogeneous_terms

    al, s, c, p, c3 = sp.symbols("alpha sigma C p C3", positive=True)
    u = {s: {"G": 1}, c: {"G": 1}}  # G: units of the function the noise is added to
    exprs = {
        "alpha <= sigma^2 C3/2 - 2 ln sigma": sp.Le(al, s**2 * c3 / 2 - 2 * sp.log(s)),
        "sigma > 4C": sp.Gt(s, 4 * c),
        "bound 2 p^2 C^2 alpha / sigma^2": 2 * p**2 * c**2 * al / s**2,
    }
    out, problems = {}, []
    for k, e in exprs.items():
        unit, probs = inhomogeneous_terms(e, u)
        out[k] = {"unit": unit, "problems": probs}
        problems += probs
    return Outcome(
        Verdict.REFUTED if problems else Verdict.CONFIRMED,
        "the alpha conditions are not dimensionally homogeneous when sigma has units (ln sigma, and a "
        "dimensionless "
        "alpha compared with sigma^2): they are only meaningful for sigma measured in units of C, i.e. C = 1"
        if problems
        else "homogeneous",
        "units: sigma and C in the units of the released function",
        out,
    )


CLAIMS = [
    Claim(
        id="dicesgd.lemma-a1",
        basis="definition",
        paper=PAPER,
        location="Lemma A.1 (proof A.4)",
        statement=(
            "x - clip(x, C) is non-expansive for any C > 0, and Var(c(X)) <= Var(X) for any non-expansive c."
        ),
        formula="||c(x) - c(y)|| <= ||x - y||,  c(x) = x - clip(x, C);   Var(c(X)) <= Var(X)",
        assumptions=("C > 0",),
        checks=(
            Check("non-expansive", "property", _lemma_a1_nonexpansive),
            Check("variance", "property", _lemma_a1_variance),
            Check("adversarial-search", "property", _lemma_a1_search),
        ),
        domain=lemma_a1_domain(),
        notes=(
            "Basis: definition / algebra; both halves are standard. (1) Variance, for any non-expansive c "
            "and any X with E||X||^2 < inf: with X' an independent copy, Var(X) = E||X - X'||^2/2 (expand "
            "the square: 2 E||X||^2 - 2 ||E X||^2), so Var(c(X)) = E||c(X) - c(X')||^2/2 <= E||X - "
            "X'||^2/2 = Var(X). (2) clip(x, C) = min(1, C/||x||) x is the projection P onto the closed "
            "ball of radius C, a convex set; P is firmly non-expansive, <Px - Py, x - y> >= ||Px - Py||^2 "
            "(add the projection inequalities <x - Px, Py - Px> <= 0 and <y - Py, Px - Py> <= 0), hence "
            "||(x - Px) - (y - Py)||^2 = ||x - y||^2 - 2 <x - y, Px - Py> + ||Px - Py||^2 <= ||x - y||^2 - "
            "||Px - Py||^2 (Bauschke & Combettes, Convex Analysis and Monotone Operator Theory, ch. 4: "
            "Id - T is firmly non-expansive when T is; the paper cites Takahashi 1970). The checks support "
            "it: the adversarial search covers half (2) on its whole domain by the plane reduction (ratio "
            "1, tight, on a ray outside the ball), the hypothesis search covers half (1) only for two maps "
            "and discrete X, so the claim is not counted as a confirmation by search."
        ),
    ),
    Claim(
        id="dicesgd.lemma-a7",
        basis="definition",
        paper=PAPER,
        location="Lemma A.7 (Gil 2011, Prop. B.4.10)",
        statement=(
            "The Rényi divergence between N(a, sigma^2) and N(b, sigma^2) is alpha (a-b)^2 / (2 sigma^2)."
        ),
        formula="D_alpha(N(a, s^2) || N(b, s^2)) = alpha (a - b)^2 / (2 s^2)",
        assumptions=("alpha > 1",),
        checks=(
            Check("sympy-integral", "symbolic", _lemma_a7_symbolic),
            Check("quadrature", "property", _lemma_a7_quadrature),
        ),
        notes="The paper's rendering states alpha (a-b)^2/(2 sigma^2), which is checked as written.",
    ),
    Claim(
        id="dicesgd.lemma-a10",
        paper=PAPER,
        location="Lemma A.10 (Mironov, Talwar, Zhang 2019, Thm 11)",
        statement="If p <= 1/5, sigma > 4C and alpha satisfies 1 <= alpha <= sigma^2 C3/2 - 2 ln sigma and "
        "alpha <= (sigma^2 C3^2/2 - ln 5 - 2 ln sigma)/(C3 + ln(p alpha) + 1/(2 sigma^2)) with C3 = 1 + "
        "1/(p(alpha-1)), "
        "the p-subsampled Gaussian mechanism with sensitivity C satisfies (alpha, 2 p^2 C^2 alpha / "
        "sigma^2)-RDP.",
        formula=(
            "D_alpha((1-p) N(0, s^2) + p N(C, s^2) || N(0, s^2)) <= 2 p^2 C^2 alpha / s^2 on the stated "
            "domain"
        ),
        assumptions=("p <= 1/5", "sigma > 4C", "alpha conditions with C3 as rendered"),
        checks=(
            Check(
                "as-written",
                "property",
                _a10_check("literal", (0.02, 0.25, 1.0, 10.0)),
                reading=(
                    "sigma = absolute noise std (as the paper applies it: sigma1 with C = 2C1/B), "
                    "conditions in "
                    "sigma as written, C3 = 1 + 1/(p(alpha-1)) as rendered, C in {0.02, 0.25, 1, 10}"
                ),
            ),
            Check(
                "normalised-C=1-literal-C3",
                "property",
                _a10_check("literal", (1.0,)),
                deciding=False,
                reading="C = 1 (sigma is the noise multiplier), C3 as rendered",
            ),
            Check("units-of-conditions", "symbolic", _a10_units, deciding=False),
            Check(
                "normalised-C=1-mtz-C3",
                "property",
                _a10_check("mtz", (1.0,)),
                deciding=False,
                reading="C = 1 and C3 = ln(1 + 1/(p(alpha-1))) as in MTZ 2019 Thm 11",
            ),
        ),
        notes=(
            "As written the lemma mixes two scalings: sigma > 4C and the bound 2p^2C^2 alpha/sigma^2 treat "
            "sigma as the "
            "absolute noise std, the displayed mixture N(0, C^2 sigma^2) treats it as a multiplier, and the "
            "alpha "
            "conditions use sigma itself. The deciding check takes sigma absolute throughout (how the proof "
            "of Thm 3.7 "
            "applies it); with C = 1 every reading coincides with MTZ's normalised theorem, checked "
            "separately."
        ),
    ),
]
