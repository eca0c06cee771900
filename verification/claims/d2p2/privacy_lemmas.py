"""D2P2-SGD Lemma 4 (RDP to (eps, delta)) and Lemma 5 (subsampled-Gaussian RDP bound), App. A.3."""

from __future__ import annotations

import math

import numpy as np

from verification import properties as P
from verification.claim import Check, Claim, Context, Outcome, Verdict
from verification.claims._util import g
from verification.claims.d2p2._common import PAPER
from verification.search import Reading

# =========================================================================== Lemma 4


def _rr_rdp(eps0: float, eta: float) -> float:
    """Exact RDP of binary randomized response with parameter eps0 at order eta."""
    lp = eps0 - math.log1p(math.exp(eps0))  # log p, p = e^eps0 / (1 + e^eps0)
    l1p = -math.log1p(math.exp(eps0))  # log(1 - p)
    return float(np.logaddexp(eta * lp + (1 - eta) * l1p, eta * l1p + (1 - eta) * lp)) / (eta - 1)


def _rr_delta(eps0: float, eps: float) -> float:
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return max(0.0, p - math.exp(eps) * (1 - p))


def _lemma4_sufficiency(ctx: Context) -> Outcome:
    from hypothesis import strategies as st

    strat = st.tuples(
        st.sampled_from(["gaussian", "randomized-response"]),
        st.floats(0.2, 10.0),  # sigma (Gaussian) or eps0 (RR)
        st.floats(0.01, 20.0),  # eps
        st.floats(1.001, 300.0),  # eta
    )

    def bad(p):
        fam, par, eps, eta = p
        if fam == "gaussian":
            e = eta / (2 * par * par)
            cond = (eta - 1) * (e - eps)
            if cond > 0:
                return False
            return P.gaussian_delta_exact(eps, 1.0, par) > math.exp(cond) * (1 + 1e-9) + 1e-300
        e = _rr_rdp(par, eta)
        cond = (eta - 1) * (e - eps)
        if cond > 0:
            return False
        return _rr_delta(par, eps) > math.exp(cond) * (1 + 1e-9) + 1e-300

    n_ex = 150 if ctx.quick else 1500
    found = P.search_counterexample(strat, bad, max_examples=n_ex, seed=ctx.seed)
    details = {
        "families": (
            "Gaussian mechanism (sensitivity 1, exact delta of Balle & Wang) and binary randomized response "
            "(exact)"
        ),
        "domain": "sigma or eps0 in [0.2, 10], eps in [0.01, 20], eta in (1.001, 300]",
        "hypothesis_examples": n_ex,
        "seed": ctx.seed,
    }
    if found is not None:
        details["counterexample"] = found
        return Outcome(Verdict.REFUTED, f"sufficiency fails at {found}", "hypothesis", details)
    return Outcome(
        Verdict.CONFIRMED,
        "'if' direction: whenever delta >= exp[(eta-1)(e(eta)-eps)] the exact delta(eps) is <= delta "
        f"({n_ex} cases, "
        "two mechanism families) -- it is Mironov's Prop. 3",
        "hypothesis search with exact privacy profiles",
        details,
    )


def _lemma4_necessity(ctx: Context) -> Outcome:
    # Gaussian, sensitivity 1, sigma = 1, eps = 1: delta_exact(1) is the smallest delta that works
    rows = []
    for sigma, eps in ((1.0, 1.0), (2.0, 0.5), (0.5, 3.0)):
        mu = 1.0 / sigma
        d_exact = P.gaussian_delta_exact(eps, 1.0, sigma, precise=True)
        best, arg = P.gaussian_lemma4_min_delta(eps, mu)
        rows.append(
            {
                "mechanism": f"Gaussian, sensitivity 1, sigma={sigma}",
                "eps": eps,
                "exact_delta": g(d_exact),
                "min_over_eta_of_exp[(eta-1)(e(eta)-eps)]": g(best),
                "argmin_eta": g(arg),
            }
        )
    rr = {
        "mechanism": "randomized response, eps0 = 1 (pure 1-DP, so (1, 0)-DP)",
        "eps": 1.0,
        "exact_delta": 0.0,
    }
    rr_vals = [math.exp((eta - 1) * (_rr_rdp(1.0, eta) - 1.0)) for eta in np.geomspace(1.001, 1e4, 200)]
    rr["min_over_eta_grid"] = g(min(rr_vals))
    rows.append(rr)
    viol = [
        r for r in rows[:3] if r["min_over_eta_of_exp[(eta-1)(e(eta)-eps)]"] > r["exact_delta"] * (1 + 1e-9)
    ]
    if viol or rr["min_over_eta_grid"] > 0:
        r = viol[0] if viol else rr
        return Outcome(
            Verdict.REFUTED,
            f"'only if' fails: {r['mechanism']} is ({r['eps']}, {r['exact_delta']})-DP (exact), but "
            "min over eta of exp[(eta-1)(e(eta)-eps)] = "
            f"{r.get('min_over_eta_of_exp[(eta-1)(e(eta)-eps)]', r.get('min_over_eta_grid'))} "
            "> delta; for pure DP (randomized response) no eta can reach delta = 0",
            "closed-form minimum over eta for the Gaussian (e(eta) = eta/(2 sigma^2)) and exact delta(eps)",
            {"cases": rows},
        )
    return Outcome(
        Verdict.CONFIRMED, "RDP conversion is tight on the tested mechanisms", "closed form", {"cases": rows}
    )


# =========================================================================== Lemma 5


def _lemma5_check(ctx: Context) -> Outcome:
    # q spans 11 decades (the statement only asks B/n < 1/10) and sigma reaches down to where
    # the order range (sigma^2/2) log(1/q) still contains eta > 1: small noise at tiny q is
    # where e^{1/sigma^2} outgrows the constant 7 (an earlier grid stopped at q = 1e-4,
    # sigma = 0.6 and confirmed the lemma).
    qs = [1e-12, 1e-9, 1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.09, 0.0999]
    sigmas = (
        [0.4, 0.47, 0.55, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0]
        if ctx.quick
        else [0.35, 0.4, 0.45, 0.47, 0.5, 0.55, 0.6, 0.7, 0.8, 1.0, 1.2, 1.5, 2, 3, 5, 8, 10, 20, 40]
    )
    worst = None
    worst_source = 0.0  # largest exact/bound under the cited source's conditions (Abadi et al. Lemma 3)
    n_int = n_frac = viol = n_quad = 0
    frac_over = 0
    sources = set()
    for q in qs:
        for s in sigmas:
            emax = 0.5 * s * s * math.log(1 / q)
            if emax <= 1:
                continue
            ints = np.unique(
                np.concatenate(
                    [np.arange(2, min(int(emax), 300) + 1), np.geomspace(2, max(emax, 2), 150).astype(int)]
                )
            )
            ints = ints[(ints >= 2) & (ints <= min(emax, 4096))].astype(float)
            fracs = np.unique(np.concatenate([np.geomspace(1.01, min(emax, 4096), 40), [min(emax, 4096)]]))
            if ints.size:
                exact = np.array([P.sgm_rdp_integer(q, s, int(a)) for a in ints])
                bound = 7 * q * q * ints / s**2
                n_int += ints.size
                viol += int(np.sum(exact > bound * (1 + 1e-9)))
                r = exact / bound
                i = int(np.argmax(r))
                if s >= 1 and q < 1 / (16 * s) and float(r[i]) > worst_source:
                    worst_source = float(r[i])
                if worst is None or r[i] > worst["ratio"]:
                    worst = {
                        "q": q,
                        "sigma": s,
                        "eta": float(ints[i]),
                        "exact_rdp": float(exact[i]),
                        "bound": float(bound[i]),
                        "ratio": float(r[i]),
                    }
            ub, src = P.sgm_rdp(q, s, fracs)
            sources.add(src)
            n_frac += fracs.size
            fbound = 7 * q * q * fracs / s**2
            for a, u, b in zip(fracs, ub, fbound, strict=True):
                # the upper bound cannot decide: compute the exact value (quadrature, slow), unless an
                # exact integer-order counterexample is already in hand
                if u > b * (1 + 1e-9) and not viol:
                    exact_a = P.sgm_rdp_quadrature(q, s, float(a))
                    n_quad += 1
                    if exact_a > b * (1 + 1e-9):
                        frac_over += 1
                        viol += 1
                        if worst is None or exact_a / b > worst["ratio"]:
                            worst = {
                                "q": q,
                                "sigma": s,
                                "eta": float(a),
                                "exact_rdp": exact_a,
                                "bound": float(b),
                                "ratio": exact_a / b,
                            }
    details = {
        "domain": "grid only: q in {1e-4..0.0999} x sigma grid, 1 < eta <= (sigma^2/2) log(1/q); the "
        "statement has no lower bound on sigma and small sigma needs q < 1e-4 to admit eta > 1",
        "q_grid": qs,
        "sigma_grid": sigmas,
        "integer_orders_checked_exactly": n_int,
        "fractional_orders_checked_with_upper_bound": n_frac,
        "fractional_orders_decided_by_quadrature (upper bound above the claim)": n_quad,
        "fractional_orders_violating_exactly": frac_over,
        "violations_at_integer_orders": viol,
        "rdp_sources": sorted(sources) + ["verification.properties.sgm_rdp_integer (integer orders)"],
        "worst_case": {k: g(v, 8) for k, v in (worst or {}).items()},
        "reading_source_conditions": (
            "non-deciding second reading with the cited Abadi et al. Lemma 3 conditions added "
            f"(sigma >= 1, q < 1/(16 sigma)): worst exact/bound at integer orders = {worst_source:.4g}"
        ),
    }
    if viol:
        w = worst
        return Outcome(
            Verdict.REFUTED,
            f"q={w['q']}, sigma={w['sigma']}, eta={w['eta']:.4g} is in the stated domain, but the exact RDP "
            f"{w['exact_rdp']:.5g} > 7 q^2 eta/sigma^2 = {w['bound']:.5g} (as stated; with the cited "
            f"source's sigma >= 1, q < 1/(16 sigma) it holds on the grid, worst ratio {worst_source:.3g})",
            "exact subsampled-Gaussian RDP vs the bound",
            details,
        )
    return Outcome(
        Verdict.CONFIRMED,
        f"bound holds at {n_int} integer orders (exact) and {n_frac} fractional orders (certified upper "
        "bound, "
        f"{n_quad} of them decided by exact quadrature) on the grid q >= 1e-4, sigma >= {min(sigmas)} "
        "(not the whole stated domain: see adversarial-search); worst exact/bound = "
        f"{worst['ratio']:.3f} (q={worst['q']}, sigma={worst['sigma']})",
        "exact subsampled-Gaussian RDP (Poisson, add/remove; closed form at integer orders, quadrature at "
        "fractional ones where the upper bound cannot decide) vs 7 q^2 eta / sigma^2",
        details,
    )


# --------------------------------------------------------------------------- Lemma 5: adversarial search


def lemma5_log_rdp_integer(q: float, sigma: float, eta: int) -> float:
    """log of the exact RDP of the q-subsampled Gaussian at integer order eta (add/remove, remove side).

    Works on S - 1 = sum_{k>=2} C(eta,k)(1-q)^(eta-k) q^k expm1(k(k-1)/(2 sigma^2)) (every term
    positive), so it stays accurate when the RDP is ~1e-16 or smaller (tiny q), where
    log(sum of terms) - the usual closed form - loses every digit.
    """
    from scipy import special

    a = int(eta)
    k = np.arange(2, a + 1, dtype=float)
    x = k * (k - 1) / (2 * sigma * sigma)
    logexpm1 = np.where(
        x > 1e-3, x + np.log1p(-np.exp(-np.minimum(x, 700))), np.log(np.expm1(np.minimum(x, 1e-3)))
    )
    lt = (
        special.gammaln(a + 1)
        - special.gammaln(k + 1)
        - special.gammaln(a - k + 1)
        + (a - k) * math.log1p(-q)
        + k * math.log(q)
        + logexpm1
    )
    big_l = float(special.logsumexp(lt))  # log(S - 1)
    log_rdp_times = (
        big_l + math.log1p(-math.exp(big_l) / 2) if big_l < -30 else math.log(np.logaddexp(0.0, big_l))
    )
    return log_rdp_times - math.log(a - 1)


def lemma5_exact_ratio(
    q: float, sigma: float, eta: float, dps: int = 50, log_base: float | None = None
) -> dict:
    """Exact e~(eta) / (7 q^2 eta / sigma^2) in mpmath (closed form at integer eta, quadrature otherwise).

    The pair of neighbouring inputs is one record whose clipped gradient is a unit vector u versus
    0: its minibatch sum is u with probability q = B/n and 0 otherwise, under Poisson sampling and
    under sampling B of n without replacement alike, so this is a lower bound on e~(eta) under
    every reading of S(n, B) and of adjacency.
    """
    import mpmath as mp

    mp.mp.dps = dps
    qq, ss = mp.mpf(q), mp.mpf(sigma)
    if float(eta).is_integer() and eta >= 2:
        a = int(eta)
        tot = mp.fsum(
            mp.binomial(a, k) * (1 - qq) ** (a - k) * qq**k * mp.expm1(mp.mpf(k * (k - 1)) / (2 * ss * ss))
            for k in range(2, a + 1)
        )
        rdp = mp.log1p(tot) / (a - 1)
        how = "closed form (mpmath)"
    else:
        rdp = mp.mpf(P.sgm_rdp_quadrature(q, sigma, eta, dps=dps))
        how = "quadrature (mpmath)"
    bound = 7 * qq**2 * mp.mpf(eta) / ss**2
    limit = ss**2 / 2 * (mp.log(1 / qq) if log_base is None else mp.log(1 / qq, log_base))
    return {
        "q": q,
        "sigma": sigma,
        "eta": eta,
        "eta_limit_(sigma^2/2)log(1/q)": float(limit),
        "in_domain": bool(qq < mp.mpf(1) / 10 and 1 < eta <= limit),
        "exact_rdp": float(rdp),
        "bound_7q^2eta/sigma^2": float(bound),
        "ratio": float(rdp / bound),
        "arithmetic": how,
    }


def _lemma5_ratio(p: dict) -> np.ndarray:
    out = np.empty(len(p["q"]))
    for i, (q, s, a) in enumerate(zip(p["q"], p["sigma"], p["eta"], strict=True)):
        lr = lemma5_log_rdp_integer(float(q), float(s), int(a)) - (
            math.log(7) + 2 * math.log(q) + math.log(a) - 2 * math.log(s)
        )
        out[i] = math.exp(min(lr, 700.0))
    return out


def lemma5_domain(source_conditions: bool = False, log_base: float | None = None):
    """Lemma 5's domain as the paper states it (q = B/n < 1/10, eta <= (sigma^2/2) log(n/B), no bound
    on sigma); with ``source_conditions`` also Abadi et al. (2016) Lemma 3's sigma >= 1, q < 1/(16 sigma)."""
    from verification.search import Constraint, Domain, Param

    lb = math.log(log_base) if log_base else 1.0
    cons = [
        Constraint(
            "1 < eta <= (sigma^2/2) log(1/q)" + (f" (log base {log_base:g})" if log_base else ""),
            lambda p: p["eta"] <= p["sigma"] ** 2 / 2 * np.log(1 / p["q"]) / lb,
        )
    ]
    if source_conditions:
        cons += [
            Constraint("sigma >= 1 (Abadi et al. Lemma 3)", lambda p: p["sigma"] >= 1),
            Constraint("q < 1/(16 sigma) (Abadi et al. Lemma 3)", lambda p: p["q"] < 1 / (16 * p["sigma"])),
        ]
    return Domain(
        params=(
            Param("q", "(0, 1/10): q = B/n < 1/10", 1e-60, 0.0999999),
            Param("sigma", "(0, inf): no bound stated", 1e-2, 1e3),
            Param("eta", "(1, (sigma^2/2) log(n/B)]", 2, 1e4, integer=True, note="integer orders (exact)"),
        ),
        constraints=tuple(cons),
        fixed={"sensitivity": "1 (clipped to norm 1, the proof of Lemma 5)"},
        source="Lemma 5 (App. A.3), eq. (11)"
        + ("; conditions of Abadi et al. 2016 Lemma 3" if source_conditions else ""),
    )


# deliberate probes of the regimes a grid forgets: small noise with a large dataset (tiny q)
_LEMMA5_PROBES = (
    {"q": 1e-9, "sigma": 0.45, "eta": 2},
    {"q": 1e-20, "sigma": 0.3, "eta": 2},
    {"q": 0.0999, "sigma": 1e3, "eta": 1e4},
    {"q": 1e-6, "sigma": 1.0, "eta": 6},
)


def _lemma5_search(source_conditions: bool, log_base: float | None = None):
    def check(ctx: Context) -> Outcome:
        from verification.search import adversarial_search

        dom = lemma5_domain(source_conditions, log_base)
        probes = [p for p in _LEMMA5_PROBES if dom.contains(p)]
        res = adversarial_search(
            dom,
            _lemma5_ratio,
            samples=256 if ctx.quick else 2048,
            maxiter=20 if ctx.quick else 80,
            seed=ctx.seed,
            extra_points=probes,
        )
        details = res.details()
        cmd = (
            'python -c "from verification.claims.d2p2 import lemma5_exact_ratio as r; '
            'print(r({q}, {s}, {e}))"'
        )
        if res.counterexample is not None:
            cx = res.counterexample
            exact = lemma5_exact_ratio(cx["q"], cx["sigma"], int(cx["eta"]), log_base=log_base)
            details["counterexample_exact"] = exact
            # the least extreme witnesses: n = 1e9 at an integer order, n = 1e5 at a fractional one
            plain = [
                lemma5_exact_ratio(1e-9, 0.45, 2, log_base=log_base),
                lemma5_exact_ratio(1e-5, 0.45, 1.1, log_base=log_base),
            ]
            details["plausible_counterexamples"] = plain
            witnesses = [w for w in [exact, *plain] if w["in_domain"] and w["ratio"] > 1 + 1e-9]
            if witnesses:
                w = plain[0] if plain[0] in witnesses else witnesses[0]
                lim, ex, bd = w["eta_limit_(sigma^2/2)log(1/q)"], w["exact_rdp"], w["bound_7q^2eta/sigma^2"]
                return Outcome(
                    Verdict.REFUTED,
                    f"q={w['q']:g} (n/B = {1 / w['q']:.3g}), sigma={w['sigma']:.4g}, eta={w['eta']} is in "
                    f"the domain (eta <= {lim:.4g}) but the exact RDP {ex:.6g} > 7q^2 eta/sigma^2 = {bd:.6g} "
                    f"(ratio {w['ratio']:.4g}, {w['arithmetic']}); search max ratio {res.max_ratio:.4g} at "
                    f"q={cx['q']:.3g}, sigma={cx['sigma']:.3g}, eta={cx['eta']:g}",
                    "adversarial search (log-uniform + corners + differential evolution) over the stated "
                    "domain; candidate re-computed in mpmath",
                    details,
                    reproduce=cmd.format(q=w["q"], s=w["sigma"], e=w["eta"]),
                )
            return Outcome(
                Verdict.INCONCLUSIVE,
                f"the float search found ratio {res.max_ratio:.4g} but exact arithmetic does not confirm it",
                "adversarial search; exact re-computation disagrees",
                details,
            )
        return Outcome(
            Verdict.CONFIRMED,
            "confirmed on the searched domain: " + res.summary(),
            "adversarial search (log-uniform + corners + differential evolution), exact integer-order RDP",
            details,
        )

    return check


# =========================================================================== Theorem 1


CLAIMS = [
    Claim(
        id="d2p2.lemma4",
        paper=PAPER,
        location="Lemma 4 (App. A.3)",
        statement=(
            "A mechanism is (eps, delta)-DP if and only if delta >= exp[(eta-1)(e(eta) - eps)] for some eta "
            "> 1."
        ),
        formula="(eps, delta)-DP  <=>  exists eta > 1: delta >= exp[(eta - 1)(e_M(eta) - eps)]",
        assumptions=("e_M(eta) = sup over neighbours of D_eta",),
        checks=(
            Check("if-direction", "property", _lemma4_sufficiency),
            Check("only-if-direction", "property", _lemma4_necessity),
        ),
    ),
    Claim(
        id="d2p2.lemma5",
        paper=PAPER,
        location="Lemma 5 (App. A.3)",
        statement=(
            "For the subsampled Gaussian with q = B/n < 1/10: e~(eta) <= 7 q^2 eta/sigma^2 for all eta <= "
            "(sigma^2/2) log(1/q)."
        ),
        formula="e~(eta) <= 7 q^2 eta / sigma^2,  eta <= (sigma^2/2) log(n/B)",
        assumptions=("q < 1/10", "sensitivity 1 (normalised gradients)"),
        checks=(
            Check(
                "exact-rdp",
                "property",
                _lemma5_check,
                deciding=False,
                reading="grid box q >= 1e-4, sigma >= 0.6 (the pre-search check; never reaches small sigma)",
            ),
            Check(
                "adversarial-search",
                "property",
                _lemma5_search(source_conditions=False),
                reading="as stated",
            ),
            Check(
                "adversarial-search-source-conditions",
                "property",
                _lemma5_search(source_conditions=True),
                deciding=False,
                reading="with the cited source's conditions",
            ),
            Check(
                "adversarial-search-log10",
                "property",
                _lemma5_search(source_conditions=False, log_base=10.0),
                deciding=False,
                reading="log read as log10",
            ),
        ),
        domain=lemma5_domain(),
        readings=(
            Reading(
                "log read as log10",
                "log is not subscripted; the proof's 1.75 q log(1/q) <= 0.42 at q = 1/10 holds for ln "
                "(0.40), so ln is the proof's reading and log10 only a possible one",
            ),
            Reading(
                "as stated",
                "the lemma's own conditions: q < 1/10 and the order limit; no bound on sigma",
                True,
            ),
            Reading(
                "with the cited source's conditions",
                "the proof cites Abadi et al. (2016) Lemma 3, which also requires sigma >= 1 and "
                "q < 1/(16 sigma)",
            ),
        ),
        notes=(
            "The statement puts no lower bound on sigma; the source it cites (Abadi et al. 2016, Lemma 3) "
            "requires sigma >= 1. With small sigma and a large dataset (tiny q) the order limit "
            "(sigma^2/2) log(n/B) still admits eta >= 2, and there the exact RDP exceeds the bound."
        ),
    ),
]
