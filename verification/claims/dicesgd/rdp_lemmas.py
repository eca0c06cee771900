"""DiceSGD App. A.2-A.3 RDP tools: Lemma A.5 (RDP -> DP), Lemma A.8, Corollary A.9, and the
"Step II" conditional-composition claim of the proof of Theorem 3.7."""

from __future__ import annotations

import math

import numpy as np

from verification.claim import Check, Claim, Context, Outcome, Verdict
from verification.claims._util import g
from verification.claims.dicesgd._common import PAPER
from verification.claims.dicesgd._search import gaussian_log_delta, log_mix_rdp, search_check
from verification.search import Constraint, Domain, Param, Reading

# =========================================================================== Lemma A.5


def lemma_a5_domain() -> Domain:
    return Domain(
        params=(
            Param(
                "mechanism",
                "any mechanism with (alpha, eps)-RDP",
                0,
                2,
                log=False,
                integer=True,
                note="0: Gaussian (noise s), 1: Laplace (scale s), 2: randomized response (eps0 = 1/s)",
            ),
            Param("s", "noise scale: any > 0", 1e-3, 1e3),
            Param("alpha-1", "alpha > 1 (Definition A.4)", 1e-6, 1e4),
            Param("delta", "delta in (0, 1)", 1e-30, 0.999),
        ),
        fixed={
            "sensitivity": "1 (each mechanism's scale s is relative to its sensitivity)",
            "why these mechanisms": "their RDP curves and exact delta(eps) are both closed forms, so the "
            "converted epsilon is compared with the exact privacy profile, not with another bound",
        },
        source="Lemma A.5 (Mironov 2017, Prop. 3)",
    )


def _a5_rdp_and_logdelta(mech, s, alpha, eps_of):
    """Per point: RDP at alpha, then log of the exact delta at eps = RDP + log(1/delta)/(alpha-1)."""
    with np.errstate(all="ignore"):
        # Gaussian: alpha / (2 s^2); exact delta (Balle-Wang) with mu = 1/s
        rdp_g = alpha / (2 * s * s)
        # Laplace, scale s (Mironov 2017, Table II):
        # (1/(alpha-1)) log(alpha/(2alpha-1) e^{(alpha-1)/s} + (alpha-1)/(2alpha-1) e^{-alpha/s})
        l1 = np.log(alpha / (2 * alpha - 1)) + (alpha - 1) / s
        l2 = np.log((alpha - 1) / (2 * alpha - 1)) - alpha / s
        rdp_l = np.logaddexp(l1, l2) / (alpha - 1)
        # randomized response with eps0 = 1/s: p = e^eps0/(1+e^eps0)
        e0 = 1.0 / s
        lp, lq = -np.logaddexp(0, -e0), -np.logaddexp(0, e0)
        rdp_r = np.logaddexp(alpha * lp + (1 - alpha) * lq, alpha * lq + (1 - alpha) * lp) / (alpha - 1)
        rdp = np.where(mech == 0, rdp_g, np.where(mech == 1, rdp_l, rdp_r))
        eps = eps_of(rdp)
        ld_g = gaussian_log_delta(eps, 1.0 / s)
        # Laplace with eps0 = 1/s: delta(eps) = 1 - exp((eps - eps0)/2) for eps < eps0, else 0
        ld_l = np.where(eps < e0, np.log(-np.expm1(np.minimum((eps - e0) / 2, 0.0))), -np.inf)
        # randomized response: delta(eps) = p - e^eps (1 - p)
        ld_r = np.where(eps < e0, lp + np.log(-np.expm1(np.minimum(eps + lq - lp, 0.0))), -np.inf)
        ld = np.where(mech == 0, ld_g, np.where(mech == 1, ld_l, ld_r))
    return rdp, eps, ld


def _a5_ratio(p):
    mech, s, am1, delta = (p[k] for k in ("mechanism", "s", "alpha-1", "delta"))
    alpha = 1.0 + am1
    _, _, ld = _a5_rdp_and_logdelta(mech, s, alpha, lambda r: r + np.log(1 / delta) / am1)
    return np.exp(ld - np.log(delta))


def _a5_replay(pt):
    import mpmath as mp

    mp.mp.dps = 50
    mech, s, am1, delta = (pt[k] for k in ("mechanism", "s", "alpha-1", "delta"))
    rdp, eps, _ = _a5_rdp_and_logdelta(
        np.array([mech]), np.array([s]), np.array([1 + am1]), lambda r: r + math.log(1 / delta) / am1
    )
    e, mu = mp.mpf(float(eps[0])), 1 / mp.mpf(s)
    if int(mech) == 0:
        exact = mp.ncdf(-e / mu + mu / 2) - mp.e**e * mp.ncdf(-e / mu - mu / 2)
    elif int(mech) == 1:
        exact = max(mp.mpf(0), 1 - mp.e ** ((e - mu) / 2))
    else:
        pp = mp.e**mu / (1 + mp.e**mu)
        exact = max(mp.mpf(0), pp - mp.e**e * (1 - pp))
    return bool(exact > delta), {
        "eps": g(float(eps[0])),
        "delta_exact_50_digits": float(exact),
        "delta": delta,
    }


def lemma_a5_proof_margin(offset: str = "log(1/delta)/(alpha - 1)"):
    """Mironov (2017), Prop. 3's proof, for the epsilon offset ``offset`` (sympy text in alpha, delta).

    Prop. 10 there (probability preservation, Hoelder): for any event S, with P = P[M(D) in S],
    Q = P[M(D') in S] and D_alpha(M(D) || M(D')) <= eps, P <= (e^eps Q)^((alpha-1)/alpha).  Then
    P <= max(e^(eps + c) Q, delta) for every Q in [0, 1] iff, in logs (y = log(e^eps Q), a = alpha - 1,
    L = log(1/delta)), max(y + c, -L) >= a y/(a + 1) for every real y.  The left side is a max of an
    increasing and a decreasing line; the margin is smallest where they cross (y = -L - c), where it
    is (a c - L)/(a + 1).  Returns that margin, simplified: >= 0 for all a, L > 0 proves the lemma for
    *every* mechanism, and = 0 says the offset cannot be lowered by this argument.
    """
    import sympy as sp

    a, L = sp.symbols("a L", positive=True)
    alpha, delta = sp.symbols("alpha delta", positive=True)
    c = sp.sympify(offset, locals={"alpha": alpha, "delta": delta}).subs({alpha: a + 1, delta: sp.exp(-L)})
    c = sp.simplify(sp.expand_log(c, force=True))
    y = sp.Symbol("y", real=True)
    lhs = a * y / (a + 1)
    up, down = y + c - lhs, -L - lhs  # the two margins: slopes 1/(a+1) > 0 and -a/(a+1) < 0
    if not (sp.diff(up, y).is_positive and sp.diff(down, y).is_negative):
        raise AssertionError("the case split's margins are not monotone as the proof needs")
    y_cross = -L - c  # where y + c = -L: the max of the two margins is smallest here
    margin = sp.simplify(up.subs(y, y_cross))
    return margin, (a, L)


def _a5_proof(ctx: Context) -> Outcome:
    import sympy as sp

    margin, (a, L) = lemma_a5_proof_margin()
    lowered, _ = lemma_a5_proof_margin("log(1/delta)/alpha")  # a control: a smaller offset must fail
    ok = sp.simplify(margin) == 0 or bool(margin.is_nonnegative)
    control_fails = bool(sp.simplify(lowered).is_negative)
    return Outcome(
        Verdict.CONFIRMED if ok and control_fails else Verdict.REFUTED if not ok else Verdict.INCONCLUSIVE,
        (
            "Lemma A.5 is Mironov (2017), Prop. 3 verbatim (same epsilon offset log(1/delta)/(alpha-1), "
            "same domain alpha > 1, delta in (0, 1)); its proof holds for every mechanism: from "
            "probability preservation P <= (e^eps Q)^((alpha-1)/alpha) (Mironov's Prop. 10), the "
            f"case split leaves margin {sp.sstr(margin)} >= 0 for all alpha > 1, delta in (0, 1) "
            f"(tight; the control offset log(1/delta)/alpha leaves {sp.sstr(lowered)} < 0)"
            if ok
            else f"the case split leaves a negative margin {sp.sstr(margin)}"
        ),
        "Mironov 2017 (Renyi DP, CSF), Prop. 3 and its proof via Prop. 10, re-derived in sympy",
        {
            "margin_(a c - L)/(a+1)": sp.sstr(margin),
            "control_offset_log(1/delta)/alpha": sp.sstr(lowered),
            "variables": "a = alpha - 1 > 0, L = log(1/delta) > 0",
            "cited_step": "Prop. 10 (probability preservation, Hoelder): for any event S, "
            "P[M(D) in S] <= (e^eps P[M(D') in S])^((alpha-1)/alpha)",
        },
        reproduce=(
            'python -c "from verification.claims.dicesgd.rdp_lemmas import lemma_a5_proof_margin as f; '
            'print(f())"'
        ),
    )


# =========================================================================== Lemma A.8


def lemma_a8_domain() -> Domain:
    return Domain(
        params=(
            Param("|a-c|", "a, c in R^d", 1e-8, 1e8),
            Param("|c-b|", "c, b in R^d", 1e-8, 1e8),
            Param("angle", "angle between a - c and c - b, [0, pi]", 0.0, math.pi, log=False),
            Param("beta", "beta > 0", 1e-8, 1e8),
        ),
        fixed={
            "alpha, sigma": "cancel: by Lemma A.7 (confirmed) every term is alpha ||.||^2/(2 sigma^2)",
            "d": "2: only |a-c|, |c-b| and their angle matter (the plane they span)",
        },
        source="Lemma A.8",
    )


def _a8_ratio(p):
    u, w, th, be = p["|a-c|"], p["|c-b|"], p["angle"], p["beta"]
    lhs = u * u + w * w + 2 * u * w * np.cos(th)  # ||(a-c) + (c-b)||^2
    return lhs / ((1 + be) * u * u + (1 + 1 / be) * w * w)


def mixture_a8_domain() -> Domain:
    return Domain(
        params=(
            Param("m", "mean of the first component, in units of sigma", 1e-4, 1e3),
            Param("v", "jump of the second component, in units of sigma (signed)", -1e3, 1e3, log=False),
            Param("p", "mixture weight (0, 1]", 1e-6, 1.0),
            Param("beta", "beta > 0", 1e-4, 1e4),
            Param("alpha", "integer order >= 2", 2, 64, integer=True),
        ),
        source="proof of Thm 3.7, eq. (22) step (b): Lemma A.8 applied to a Gaussian mixture",
    )


def _mix_rdp_mp(alpha: int, p, a, b):
    """``D_alpha((1-p) N(a,1) + p N(b,1) || N(0,1))`` by the binomial expansion in 50-digit arithmetic."""
    import mpmath as mp

    mp.mp.dps = 50
    p, a, b = mp.mpf(p), mp.mpf(a), mp.mpf(b)
    tot = mp.mpf(0)
    for k in range(alpha + 1):
        s = (alpha - k) * a + k * b
        tot += (
            mp.binomial(alpha, k)
            * (1 - p) ** (alpha - k)
            * p**k
            * mp.e ** (s * s / 2 - ((alpha - k) * a * a + k * b * b) / 2)
        )
    return mp.log(tot) / (alpha - 1)


def _a8_mixture_replay(pt):
    m, v, q, be, al = pt["m"], pt["v"], pt["p"], pt["beta"], int(pt["alpha"])
    lhs = _mix_rdp_mp(al, q, m, m + v)
    rhs = (1 + be) * al * m * m / 2 + (1 + 1 / be) * _mix_rdp_mp(al, q, 0, v)
    return bool(lhs > rhs), {
        "lhs_50_digits": float(lhs),
        "rhs_50_digits": float(rhs),
        "ratio": float(lhs / rhs),
    }


#: found by the full search (rounded here; still violated at 50 digits: LHS 254.360 > RHS 254.180), so
#: the informative mixture reading reports it in ``--quick`` too
LEMMA_A8_MIXTURE_WITNESS = {"m": 0.142, "v": 13.3, "p": 1.49e-5, "beta": 92.3, "alpha": 3}


def _a8_mixture_ratio(p):
    m, v, q, be, al = p["m"], p["v"], p["p"], p["beta"], p["alpha"]
    lhs = log_mix_rdp(al, q, m, m + v)  # D(mix || N(0))
    rhs = (1 + be) * al * m * m / 2 + (1 + 1 / be) * log_mix_rdp(al, q, np.zeros_like(m), v)
    with np.errstate(all="ignore"):
        return np.where(np.isfinite(lhs) & np.isfinite(rhs), lhs / rhs, np.nan)


# =========================================================================== Corollary A.9


def cor_a9_domain() -> Domain:
    return Domain(
        params=(
            Param("|a|", "a in R (its sign is irrelevant: checked at +a and -a)", 1e-3, 1e3),
            Param("sigma", "sigma > 0", 1e-2, 1e2),
            Param("alpha-1", "alpha > 1", 1e-3, 1e3),
        ),
        constraints=(
            Constraint(
                "alpha a^2 / sigma^2 in [1e-4, 1e6] (where 2001-point log-space quadrature is accurate "
                "to ~1e-9; the identity is scale-free, so this covers its content)",
                lambda p: (lambda r: (r >= 1e-4) & (r <= 1e6))(
                    (1 + p["alpha-1"]) * p["|a|"] ** 2 / p["sigma"] ** 2
                ),
            ),
        ),
        source="Corollary A.9",
    )


def _renyi_quad(a, s, alpha):
    """``D_alpha(N(a, s^2) || N(0, s^2))`` by log-space trapezoid quadrature (no closed form used).

    The log-integrand ``alpha log p + (1 - alpha) log q`` is a concave quadratic peaking at
    ``x = alpha a``; the grid spans 40 s either side of it.
    """
    n = 2001
    x = (alpha * a)[:, None] + s[:, None] * np.linspace(-40, 40, n)[None, :]
    lp = -((x - a[:, None]) ** 2) / (2 * s[:, None] ** 2)
    lq = -(x**2) / (2 * s[:, None] ** 2)
    f = alpha[:, None] * lp + (1 - alpha[:, None]) * lq
    mx = f.max(axis=1, keepdims=True)
    w = np.ones(n)
    w[[0, -1]] = 0.5
    dx = 80 * s / (n - 1)
    log_int = (
        mx[:, 0] + np.log(np.sum(w * np.exp(f - mx), axis=1)) + np.log(dx) - np.log(np.sqrt(2 * np.pi) * s)
    )
    return log_int / (alpha - 1)


def _a9_ratio(p):
    a, s, al = p["|a|"], p["sigma"], 1 + p["alpha-1"]
    one = np.ones_like(a)
    rhs = a * a * _renyi_quad(one, s, al)
    r1 = _renyi_quad(a, s, al) / rhs
    r2 = _renyi_quad(-a, s, al) / rhs
    return np.maximum(np.maximum(r1, 1 / r1), np.maximum(r2, 1 / r2))  # equality: 1 either way


def _a9_replay(pt):
    """Both sides at the worst point by 40-digit mpmath quadrature."""
    import mpmath as mp

    mp.mp.dps = 40
    a, s, al = mp.mpf(pt["|a|"]), mp.mpf(pt["sigma"]), 1 + mp.mpf(pt["alpha-1"])

    def d(mean):
        f = lambda x: mp.npdf(x, mean, s) ** al * mp.npdf(x, 0, s) ** (1 - al)  # noqa: E731
        c = al * mean
        return mp.log(mp.quad(f, [-mp.inf, c - 40 * s, c, c + 40 * s, mp.inf])) / (al - 1)

    rhs = a * a * d(mp.mpf(1))
    r = max(abs(d(a) / rhs - 1), abs(d(-a) / rhs - 1))
    return bool(r > mp.mpf("1e-6")), {"relative_gap_40_digits": float(r)}


def _a9_symbolic(ctx: Context) -> Outcome:
    import sympy as sp

    x, a = sp.symbols("x a", real=True)
    s, al = sp.symbols("sigma alpha", positive=True)

    def d(mean):
        expo = -(al * (x - mean) ** 2 + (1 - al) * x**2) / (2 * s**2)
        integral = sp.integrate(sp.exp(sp.expand(expo)), (x, -sp.oo, sp.oo), conds="none")
        return sp.simplify(sp.log(sp.simplify(integral / sp.sqrt(2 * sp.pi * s**2))) / (al - 1))

    lhs = d(a)
    one = sp.simplify(lhs.subs(a, 1))
    diff = sp.simplify(sp.expand_log(lhs - a**2 * one, force=True))
    return Outcome(
        Verdict.CONFIRMED if diff == 0 else Verdict.REFUTED,
        f"sympy: D(N(a)||N(0)) - a^2 D(N(1)||N(0)) simplifies to {sp.sstr(diff)}",
        "symbolic integration of both sides over the real line",
        {"lhs": sp.sstr(lhs), "a^2 * D(N(1)||N(0))": sp.sstr(a**2 * one), "difference": sp.sstr(diff)},
    )


# =========================================================================== Step II


def step2_domain() -> Domain:
    return Domain(
        params=(
            Param("m1", "first release: N(m1, 1) vs N(0, 1), any m1", 1e-3, 1e2),
            Param("M2", "bound on the adaptive second mean |m2(h)| <= M2", 1e-3, 1e2),
            Param("c", "threshold of the adaptive rule m2(h) = M2 1[h > c]", -50.0, 50.0, log=False),
            Param("alpha-1", "alpha > 1", 1e-3, 1e3),
        ),
        fixed={
            "mechanism": "H_1 = Y1 ~ N(m1, 1) under D, N(0, 1) under D'; Y2 | Y1 = h ~ N(m2(h), 1) under D, "
            "N(0, 1) under D' (a history-dependent second step, the adaptivity Step II must handle)",
            "joint divergence": (
                "exp((alpha-1) D) = int p^alpha q^(1-alpha) exp((alpha-1) alpha m2(h)^2/2) dh, "
                "a Gaussian-tilted expectation in closed form for the threshold rule"
            ),
        },
        source="proof of Theorem 3.7, Step II",
    )


def _step2_parts(p):
    from scipy.special import log_ndtr

    m1, M2, c, am1 = p["m1"], p["M2"], p["c"], p["alpha-1"]
    al = 1 + am1
    eps1 = al * m1 * m1 / 2
    # tilted law of Y1 is N(alpha m1, 1); the second step contributes e^{(alpha-1) alpha M2^2/2} on {h > c}
    lt = log_ndtr(al * m1 - c)  # log P_tilted(h > c)
    gain = am1 * al * M2 * M2 / 2
    # log(1 + P (e^gain - 1)) without cancellation: log1p/expm1 for moderate gains, log space beyond
    with np.errstate(over="ignore", invalid="ignore"):
        small = np.log1p(np.exp(lt) * np.expm1(np.minimum(gain, 50.0)))
        big = np.logaddexp(np.log1p(-np.exp(np.minimum(lt, -1e-300))), lt + gain)
        joint = eps1 + np.where(gain < 50.0, small, big) / am1
    sup2 = al * M2 * M2 / 2
    avg2 = np.exp(log_ndtr(m1 - c)) * al * M2 * M2 / 2  # E_{h ~ D}[alpha m2(h)^2 / 2]
    return joint, eps1, sup2, avg2


def _step2_ratio(p):
    joint, eps1, sup2, _ = _step2_parts(p)
    return joint / (eps1 + sup2)


def _step2_avg_ratio(p):
    joint, eps1, _, avg2 = _step2_parts(p)
    return joint / (eps1 + avg2)


# =========================================================================== registry

CLAIMS = [
    Claim(
        id="dicesgd.lemma-a5",
        basis="definition",
        paper=PAPER,
        location="Lemma A.5 (Mironov 2017, Prop. 3)",
        statement=(
            "A mechanism with (alpha, eps)-RDP is (eps + log(1/delta)/(alpha-1), delta)-DP for all delta in "
            "(0, 1)."
        ),
        formula="(alpha, eps)-RDP  =>  (eps + log(1/delta)/(alpha - 1), delta)-DP",
        assumptions=("alpha > 1", "0 < delta < 1"),
        domain=lemma_a5_domain(),
        notes=(
            "Deciding: the lemma is Mironov (2017), Prop. 3, whose proof (re-derived symbolically here) "
            "holds for every mechanism with (alpha, eps)-RDP. Supporting, not deciding: an adversarial "
            "search over three families with closed-form RDP and exact privacy profiles (Gaussian, "
            "Laplace, randomized response; scale 1e-3 to 1e3, alpha - 1 from 1e-6 to 1e4, delta from "
            "1e-30 to 0.999); it cannot cover every RDP mechanism."
        ),
        checks=(
            Check("mironov-prop3-proof", "symbolic", _a5_proof),
            Check(
                "adversarial-search-exact-profiles",
                "property",
                search_check(
                    lemma_a5_domain,
                    _a5_ratio,
                    method="supporting, not deciding: adversarial search over three families only "
                    "(Gaussian, Laplace, randomized response; not every RDP mechanism): exact delta at the "
                    "converted epsilon vs delta",
                    ratio_text="exact delta(eps + log(1/delta)/(alpha-1)) / delta (> 1 refutes)",
                    quick=(256, 6, 6),
                    replay=_a5_replay,
                    extra_points=[
                        {"mechanism": m, "s": s, "alpha-1": a, "delta": d}
                        for m in (0, 1, 2)
                        for s in (1e-3, 1.0, 1e3)
                        for a in (1e-6, 1.0, 1e4)
                        for d in (1e-30, 0.999)
                    ],
                ),
                deciding=False,
            ),
        ),
    ),
    Claim(
        id="dicesgd.lemma-a8",
        basis="definition",
        notes=(
            "Basis: definition / algebra. By Lemma A.7 each divergence is alpha ||.||^2/(2 sigma^2), so "
            "with x = a - c, y = c - b the lemma is ||x + y||^2 <= (1+beta)||x||^2 + (1+1/beta)||y||^2, "
            "which is Young's inequality: (1+beta)||x||^2 + (1+1/beta)||y||^2 - ||x+y||^2 = ||sqrt(beta) x "
            "- y/sqrt(beta)||^2 >= 0, with equality at y = beta x. The adversarial search (max ratio 1, "
            "tight) supports it and cannot fail. Informative: applied to a Gaussian mixture, as eq. (22)(b) "
            "does, it fails; that lies outside the statement."
        ),
        paper=PAPER,
        location="Lemma A.8",
        statement=(
            "For Gaussians with a common variance and beta > 0: D_alpha(N(a)||N(b)) <= (1+beta) "
            "D_alpha(N(a)||N(c)) "
            "+ (1+1/beta) D_alpha(N(c)||N(b))."
        ),
        formula="D(N_a||N_b) <= (1+beta) D(N_a||N_c) + (1+1/beta) D(N_c||N_b)",
        assumptions=("same variance sigma^2", "beta > 0"),
        depends_on=("dicesgd.lemma-a7",),
        domain=lemma_a8_domain(),
        readings=(
            Reading("as stated: three Gaussians", "the lemma's own hypothesis", True),
            Reading(
                "as the proof applies it: a Gaussian mixture (eq. 22 step b)",
                "eq. (22)(b) applies it with a = the mixture (1-p) N(m) + p N(m+v); outside the statement",
            ),
        ),
        checks=(
            Check(
                "adversarial-search",
                "property",
                search_check(
                    lemma_a8_domain,
                    _a8_ratio,
                    method=(
                        "adversarial search over |a-c|, |c-b|, their angle and beta (closed form by Lemma "
                        "A.7)"
                    ),
                    ratio_text=(
                        "||a-b||^2 / ((1+beta)||a-c||^2 + (1+1/beta)||c-b||^2) (equality at c-b = beta(a-c))"
                    ),
                    quick=(256, 6, 8),
                    extra_points=[
                        {"|a-c|": 1.0, "|c-b|": b, "angle": 0.0, "beta": b} for b in (1e-8, 1.0, 1e8)
                    ],
                ),
                reading="as stated: three Gaussians",
            ),
            Check(
                "applied-to-a-mixture",
                "property",
                search_check(
                    mixture_a8_domain,
                    _a8_mixture_ratio,
                    method=(
                        "exact integer-order RDP of Gaussian mixtures (binomial expansion), adversarial "
                        "search"
                    ),
                    ratio_text="D(mix||N0) / ((1+beta) D(N_m||N0) + (1+1/beta) D(mix||N_m))",
                    quick=(256, 6, 6),
                    replay=_a8_mixture_replay,
                    extra_points=[LEMMA_A8_MIXTURE_WITNESS],
                ),
                deciding=False,
                reading="as the proof applies it: a Gaussian mixture (eq. 22 step b)",
            ),
        ),
    ),
    Claim(
        id="dicesgd.cor-a9",
        basis="definition",
        notes=(
            "Basis: definition / algebra, an identity: by Lemma A.7's closed form D_alpha(N(a, s^2) || N(0, "
            "s^2)) = alpha a^2/(2 s^2), and a^2 D_alpha(N(1, s^2) || N(0, s^2)) = a^2 alpha/(2 s^2): both "
            "sides are alpha a^2/(2 sigma^2) (lemma-a7, the same closed form, is kinded 'definition' too). "
            "The sympy integral re-derives it; the quadrature search (ratio 1 up to quadrature error) "
            "supports it and cannot fail."
        ),
        paper=PAPER,
        location="Corollary A.9",
        statement="D_alpha(N(a, sigma^2) || N(0, sigma^2)) = a^2 D_alpha(N(1, sigma^2) || N(0, sigma^2)).",
        formula="D(N(a,s^2)||N(0,s^2)) = a^2 D(N(1,s^2)||N(0,s^2))",
        assumptions=("a scalar (the proof uses it to move a scalar factor out)", "alpha > 1"),
        depends_on=("dicesgd.lemma-a7",),
        domain=cor_a9_domain(),
        checks=(
            Check("sympy-integral", "symbolic", _a9_symbolic),
            Check(
                "quadrature-search",
                "property",
                search_check(
                    cor_a9_domain,
                    _a9_ratio,
                    method="adversarial search; both sides by log-space quadrature (no closed form)",
                    ratio_text="max(r, 1/r) with r = LHS / RHS at +a and -a (1 = equality)",
                    quick=(128, 4, 5),
                    tol=1e-6,
                    replay=_a9_replay,
                ),
            ),
        ),
    ),
    Claim(
        id="dicesgd.step2-composition",
        basis="definition",
        paper=PAPER,
        location="proof of Theorem 3.7, Step II (eq. 18)",
        statement=(
            "If H_t is (alpha, eps)-RDP and A_1^t conditioned on H_t is (alpha, eps')-RDP, then H_{t+1} = "
            "(H_t, "
            "A_1^t | H_t) is (alpha, eps + eps')-RDP."
        ),
        formula="exp((a-1) D(H_{t+1})) = int H^a H'^(1-a) int X^a X'^(1-a) <= e^{(a-1) eps} e^{(a-1) eps'}",
        assumptions=("the conditional bound holds for the history the integral runs over",),
        domain=step2_domain(),
        readings=(
            Reading(
                "for every history",
                "step (a) bounds the inner integral for each fixed H_t before integrating (adaptive "
                "composition)",
                True,
            ),
            Reading(
                "averaged over histories",
                "'conditioned on H_t' could also mean the expected conditional divergence",
            ),
        ),
        checks=(
            Check(
                "adaptive-two-step-search",
                "property",
                search_check(
                    step2_domain,
                    _step2_ratio,
                    method=(
                        "supporting: adversarial search over history-dependent two-step Gaussian mechanisms "
                        "(closed form), a family, not every mechanism; the claim rests on the derivation in "
                        "its notes (Mironov 2017, Prop. 1)"
                    ),
                    ratio_text="D_alpha(joint) / (eps + sup_h eps'(h))",
                    quick=(256, 6, 8),
                ),
                reading="for every history",
            ),
            Check(
                "averaged-conditional-bound",
                "property",
                search_check(
                    step2_domain,
                    _step2_avg_ratio,
                    method="same family; eps' = E_{h ~ D}[conditional divergence]",
                    ratio_text="D_alpha(joint) / (eps + E_h eps'(h))",
                    quick=(256, 6, 8),
                ),
                deciding=False,
                reading="averaged over histories",
            ),
        ),
        notes=(
            "Basis: definition / algebra. Step II is the adaptive composition theorem (Mironov 2017, Prop. "
            "1) and holds when eps' bounds the conditional divergence for every history. The paper's eq. "
            "(18) is the derivation: the inner integral int X^a X'^(1-a) dx is exp((a-1) D_a(X(.|H) || "
            "X'(.|H))) <= exp((a-1) eps') for every history H, so pulling it out of the outer integral "
            "(whose weight H^a H'^(1-a) is >= 0, a - 1 > 0) leaves int H^a H'^(1-a) dH = exp((a-1) "
            "D_a(H_t || H'_t)) <= exp((a-1) eps). The search over history-dependent two-step Gaussian "
            "mechanisms covers a family, not every mechanism: it supports the headline reading and is not "
            "counted as a confirmation by search; under the averaged reading the same family refutes it "
            "(informative). Whether Step III's bound is such a bound is a separate question: given H_t the "
            "next release is a mixture over the hidden e_t (see dicesgd.lemma-a6 and "
            "dicesgd.thm3.7-clip-factor)."
        ),
    ),
]
