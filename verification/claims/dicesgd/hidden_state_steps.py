"""DiceSGD App. A: the statements about the hidden error state e_t -- eq. (9) (the clipping factor
of e_t), Lemma A.6 / eq. (21) (one step of Delta e), and the "clipping is non-expansive with factor
alpha_e^t" step of the proof of Theorem 3.7 (first term of eq. 20)."""

from __future__ import annotations

import math

import numpy as np

from verification.claim import Check, Claim, Context, Outcome, Verdict
from verification.claims._util import g
from verification.claims.dicesgd._common import PAPER
from verification.claims.dicesgd._search import log_mix_rdp, search_check
from verification.search import Constraint, Domain, Param, Reading

# =========================================================================== eq. (9)


def eq9_domain(max_t: int = 2000) -> Domain:
    return Domain(
        params=(
            Param("t", "t >= 1 (e_0 = 0)", 1, max_t, integer=True),
            Param("G'/C2", "G' = max{0, G + sigma - C1} >= 0, any", 1e-4, 1e4),
            Param("B", "any batch size", 1, 16, integer=True),
            Param("d", "any dimension", 1, 8, integer=True),
            Param("align", "how aligned the residuals are (1: all along one direction)", 0.0, 1.0, log=False),
            Param("spread", "residual norms drawn in [(1 - spread) G', G']", 0.0, 1.0, log=False),
            Param("draw", "which random residual sequence (seed)", 0, 1e6, log=False, integer=True),
        ),
        fixed={
            "C2": "1 (the ratio is invariant under a common scale of e, G' and C2)",
            "residuals": "each per-sample residual g_i - clip(g_i, C1) has norm max(0, ||g_i|| - C1) <= G' "
            "(Assumptions 3.4-3.5); e_{s+1} = e_s - clip(e_s, C2) + (1/B) sum_i r_i (eq. 8)",
        },
        source="eq. (9), App. A before A.1",
    )


_EQ9_B, _EQ9_D, _EQ9_LEN = 16, 8, 4099


def _eq9_base() -> np.ndarray:
    """A fixed table of Gaussian directions; point ``draw = k`` reads it from row k (cyclically), so a
    point's trajectory does not depend on which other points are evaluated with it."""
    if not hasattr(_eq9_base, "table"):
        _eq9_base.table = np.random.default_rng(20231123).standard_normal((_EQ9_LEN, _EQ9_B, _EQ9_D))
    return _eq9_base.table


def _eq9_norms(p) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """||e_t|| after t steps of eq. (8) for each point (vectorised over points), with G' and t.

    Points are processed longest run first, so step s updates only the prefix of points with
    t > s (a view, no copy); the others keep their final state.  Each point's arithmetic is the
    same as when all points step together (rows never mix), so its value is unchanged.
    """
    base = _eq9_base()
    t_all = p["t"].astype(int)
    order = np.argsort(-t_all, kind="stable")
    t = t_all[order]
    gp, al, sp = p["G'/C2"][order, None], p["align"][order, None, None], p["spread"][order, None]
    n = t.size
    bmask = np.arange(_EQ9_B)[None, :] < p["B"][order].astype(int)[:, None]  # (n, B)
    dmask = (np.arange(_EQ9_D)[None, :] < p["d"][order].astype(int)[:, None]).astype(float)  # (n, D)
    bcount = bmask.sum(axis=1)[:, None]
    u0 = np.zeros((1, 1, _EQ9_D))
    u0[..., 0] = 1.0
    offs = p["draw"][order].astype(np.int64) % _EQ9_LEN
    e = np.zeros((n, _EQ9_D))
    live = n  # points [0, live) have t > s
    for s in range(int(t.max()) if n else 0):
        while live and t[live - 1] <= s:
            live -= 1
        k = live
        raw = base[(offs[:k] + s) % _EQ9_LEN]  # (k, B, D)
        dirs = (al[:k] * u0 + (1 - al[:k]) * raw) * dmask[:k, None, :]
        dirs /= np.maximum(np.linalg.norm(dirs, axis=2, keepdims=True), 1e-300)
        frac = base[(offs[:k] + s + 7) % _EQ9_LEN][:, :, 0]  # a second stream for the norms
        norms = gp[:k] * (1 - sp[:k] * (0.5 + 0.5 * np.tanh(frac)))  # in [(1 - spread) G', G']
        r = (np.where(bmask[:k], norms, 0.0)[:, :, None] * dirs).sum(axis=1) / bcount[:k]
        ek = e[:k]
        ne = np.linalg.norm(ek, axis=1, keepdims=True)
        e[:k] = ek - ek * np.minimum(1.0, 1.0 / np.maximum(ne, 1e-300)) + r
    inverse = np.empty_like(order)
    inverse[order] = np.arange(n)
    return np.linalg.norm(e, axis=1)[inverse], p["G'/C2"], t_all.astype(float)


def _eq9_case2_ratio(p):
    ne, gp, t = _eq9_norms(p)
    bound = 1.0 + t * (gp - 1.0)  # t G' - (t - 1) C2 with C2 = 1
    return np.where(ne > 1.0, ne / bound, np.nan)  # alpha = C2/||e|| >= C2/bound iff ||e|| <= bound


def _eq9_proof_ratio(p):
    ne, gp, t = _eq9_norms(p)
    return np.maximum(ne, 1.0) / (1.0 + t * np.maximum(gp - 1.0, 0.0))  # (1/alpha) / (1/bound)


def _eq9_displayed(ctx: Context) -> Outcome:
    """The display read for every t: alpha_e^t >= C2 / (C2 + t (G' - C2)) even when ||e_t|| <= C2."""
    rows = []
    for gp in (0.0, 0.25, 0.5, 0.9, 0.99):
        for t in (1, 2, 3):
            den = 1.0 + t * (gp - 1.0)
            rhs = 1.0 / den if den > 0 else -math.inf
            # with G' < C2 the state never leaves the C2-ball, so alpha_e^t = 1 (residual norm <= G')
            rows.append({"G/C2": gp, "t": t, "alpha_e^t": 1.0, "rhs": g(rhs), "violated": bool(rhs > 1.0)})
    bad = [r for r in rows if r["violated"]]
    return Outcome(
        Verdict.REFUTED if bad else Verdict.CONFIRMED,
        f"read for every t, the display fails when G' < C2: e.g. G'/C2 = {bad[0]['G/C2']}, t = "
        f"{bad[0]['t']}: "
        f"alpha_e^t = 1 < {bad[0]['rhs']} (the state never leaves the ball, and the right side exceeds 1); "
        "the proof itself uses max{0, G' - C2}"
        if bad
        else "no violation",
        "closed form: with G' <= C2, ||e_t|| <= G' <= C2 for all t, so alpha_e^t = 1",
        {"rows": rows},
    )


# =========================================================================== Lemma A.6 / eq. (21)


def lemma_a6_domain() -> Domain:
    return Domain(
        params=(
            Param("|e|/C2", "e_t: any input of A_2", 1e-3, 1e4),
            Param("e'/e", "e'_t on the same line (signed ratio), any", -1.0, 1.0, log=False),
            Param("r'/G'", "residual of xi' at x_t, |r'| <= G' (signed)", -1.0, 1.0, log=False),
            Param("G'/C2", "G' >= 0, any", 1e-4, 1e4),
            Param("p", "p = B/N in (0, 1]", 1e-6, 1.0),
            Param("B", "any batch size", 1, 1e4, integer=True),
            Param("sigma/C2", "noise std sigma1 > 0", 1e-3, 1e4),
            Param("alpha", "integer order >= 2 (an RDP statement must hold at each)", 2, 128, integer=True),
        ),
        constraints=(
            Constraint(
                "reachable states: with G' <= C2 the state never leaves the G'-ball (eq. 9), so |e|, |e'| "
                "<= G'",
                lambda p: (
                    (p["G'/C2"] > 1.0)
                    | (np.maximum(p["|e|/C2"], np.abs(p["|e|/C2"] * p["e'/e"])) <= p["G'/C2"])
                ),
            ),
        ),
        fixed={
            "C2": "1 (scale-free), d = 1",
            "others": (
                "the examples common to D and D' have zero residual at x_t, so e_{t+1} = e_t - clip(e_t, "
                "C2) "
                "under D and e'_{t+1} = e'_t - clip(e'_t, C2) + b r'/B, b ~ Bern(p), under D'"
            ),
            "LHS": "D_alpha(N_sigma(e'_{t+1}) || N_sigma(e_{t+1})), the proof's first line",
            "RHS": (
                "the largest over alpha_e^t in {factor of e_t, factor of e'_t} and both signs of the 2G'/B "
                "jump (the most generous reading of the flattened vector '2G'/B')"
            ),
        },
        source="Lemma A.6 / eq. (21), proof in App. A.3.1",
    )


def _clip_res(x):
    return x - np.clip(x, -1.0, 1.0)


def _a6_sides(p):
    e = p["|e|/C2"]
    ep = e * p["e'/e"]
    gp, q, b, s, al = p["G'/C2"], p["p"], p["B"], p["sigma/C2"], p["alpha"]
    rp = p["r'/G'"] * gp
    # LHS: mixture under D' centred at c(e') (+ r'/B), against the point mass c(e) (all over sigma)
    m0 = (_clip_res(ep) - _clip_res(e)) / s
    lhs = log_mix_rdp(al, q, m0, m0 + rp / b / s)
    rhs = np.full_like(lhs, -np.inf)
    for a_e in (
        np.minimum(1.0, 1.0 / np.maximum(np.abs(e), 1e-300)),
        np.minimum(1.0, 1.0 / np.maximum(np.abs(ep), 1e-300)),
    ):
        base = (1 - a_e) * (e - ep) / s
        for sign in (1.0, -1.0):
            rhs = np.maximum(rhs, log_mix_rdp(al, q, base, base + sign * 2 * gp / b / s))
    return lhs, rhs


def _a6_ratio(p):
    lhs, rhs = _a6_sides(p)
    # both sides are log E[L^alpha]/(alpha - 1) with E[L^alpha] = 1 + tiny: below 1e-9 the float sums
    # have too few correct digits to compare, so such points count as undefined (never as violations)
    trusted = np.isfinite(lhs) & np.isfinite(rhs) & (rhs > 1e-9)
    with np.errstate(all="ignore"):
        return np.where(trusted, lhs / rhs, np.nan)


#: e_t = 10 C2, e'_t = 5 C2, xi''s residual 0: c(e) - c(e') = 5 but (1 - alpha_e^t) Delta e = 4.5
LEMMA_A6_WITNESS = {
    "|e|/C2": 10.0,
    "e'/e": 0.5,
    "r'/G'": 0.0,
    "G'/C2": 10.0,
    "p": 0.01,
    "B": 10,
    "sigma/C2": 10.0,
    "alpha": 2,
}


def lemma_a6_replay(point: dict) -> dict:
    """Exact LHS and RHS of eq. (21) at one point (closed-form mixture RDP)."""
    pts = {k: np.array([float(v)]) for k, v in point.items()}
    lhs, rhs = _a6_sides(pts)
    return {"lhs": float(lhs[0]), "rhs": float(rhs[0]), "ratio": float(lhs[0] / rhs[0])}


# =========================================================================== proof of Thm 3.7: clip factor


def clip_factor_domain() -> Domain:
    return Domain(
        params=(
            Param("|e|/C2", "e_t in R^d", 1e-4, 1e4),
            Param("|e'|/C2", "e'_t in R^d", 1e-4, 1e4),
            Param("angle", "angle between e_t and e'_t, [0, pi]", 0.0, math.pi, log=False),
        ),
        fixed={"C2": "1 (scale-free); the plane of 0, e, e' covers every dimension"},
        source="proof of Theorem 3.7, bound on the first term of eq. (20)",
    )


def _clip_factor_parts(p):
    r1, r2, th = p["|e|/C2"], p["|e'|/C2"], p["angle"]
    e = np.stack([r1, np.zeros_like(r1)], axis=1)
    ep = np.stack([r2 * np.cos(th), r2 * np.sin(th)], axis=1)

    def clip(v):
        n = np.linalg.norm(v, axis=1, keepdims=True)
        return v * np.minimum(1.0, 1.0 / np.maximum(n, 1e-300))

    lhs = np.linalg.norm(clip(e) - clip(ep), axis=1)
    dist = np.linalg.norm(e - ep, axis=1)
    return lhs, dist, np.minimum(1.0, 1.0 / r1), np.minimum(1.0, 1.0 / r2)


def _clip_factor_ratio(p):
    lhs, dist, a_e, _ = _clip_factor_parts(p)
    with np.errstate(all="ignore"):
        return np.where(dist > 1e-12, lhs / (a_e * dist), np.nan)


def _clip_factor_max_ratio(p):
    lhs, dist, a_e, a_ep = _clip_factor_parts(p)
    with np.errstate(all="ignore"):
        return np.where(dist > 1e-12, lhs / (np.maximum(a_e, a_ep) * dist), np.nan)


def _clip_factor_replay(pt):
    import mpmath as mp

    mp.mp.dps = 50
    r1, r2, th = (mp.mpf(pt[k]) for k in ("|e|/C2", "|e'|/C2", "angle"))
    e, ep = mp.matrix([r1, 0]), mp.matrix([r2 * mp.cos(th), r2 * mp.sin(th)])

    def clip(v):
        return v * min(mp.mpf(1), 1 / mp.norm(v))

    lhs, rhs = mp.norm(clip(e) - clip(ep)), min(mp.mpf(1), 1 / r1) * mp.norm(e - ep)
    return bool(lhs > rhs), {"lhs_50_digits": float(lhs), "rhs_50_digits": float(rhs)}


# =========================================================================== registry

_A6_CMD = (
    'python -c "from verification.claims.dicesgd.hidden_state_steps import LEMMA_A6_WITNESS as w, '
    'lemma_a6_replay as r; print(r(w))"'
)

CLAIMS = [
    Claim(
        id="dicesgd.eq9",
        basis="search",
        paper=PAPER,
        location="eq. (9), App. A",
        statement=(
            "When ||e_t|| > C2: alpha_e^t = C2/||e_t|| >= C2/(t G' - (t-1) C2) = C2/(C2 + t (G' - C2)), "
            "G' = max{0, G + sigma - C1}."
        ),
        formula="alpha_e^t >= C2 / (C2 + t (G' - C2))",
        assumptions=("Assumptions 3.4, 3.5", "e_0 = 0"),
        domain=eq9_domain(),
        readings=(
            Reading("case 2: ||e_t|| > C2", "the derivation's case 2, where the display is written", True),
            Reading(
                "as the proof uses it: max{0, G' - C2}, every t",
                "eq. (23) steps (b)-(c) substitute (9) with max{0, G' - C2} at every tau",
            ),
            Reading("as displayed, every t", "the display alone, without its case"),
        ),
        checks=(
            Check(
                "adversarial-search-case-2",
                "empirical",
                search_check(
                    eq9_domain,
                    _eq9_case2_ratio,
                    quick_domain_fn=lambda: eq9_domain(200),
                    method=(
                        "adversarial search over error-state trajectories (eq. 8) with residuals of norm <= "
                        "G'"
                    ),
                    ratio_text=(
                        "||e_t|| / (C2 + t (G' - C2)) where ||e_t|| > C2 (1 = tight: aligned residuals of "
                        "norm G')"
                    ),
                    quick=(48, 3, 4),
                    full=(512, 20, 6),
                    extra_points=[
                        {"t": t, "G'/C2": 3.0, "B": 1, "d": 1, "align": 1.0, "spread": 0.0, "draw": 0}
                        for t in (1, 7, 50)
                    ],
                ),
                reading="case 2: ||e_t|| > C2",
            ),
            Check(
                "adversarial-search-as-used",
                "empirical",
                search_check(
                    eq9_domain,
                    _eq9_proof_ratio,
                    quick_domain_fn=lambda: eq9_domain(200),
                    method="same search, bound with max{0, G' - C2} for every t",
                    ratio_text="max(||e_t||, C2) / (C2 + t max{0, G' - C2})",
                    quick=(48, 3, 4),
                    full=(512, 20, 6),
                ),
                reading="as the proof uses it: max{0, G' - C2}, every t",
            ),
            Check(
                "displayed-every-t",
                "symbolic",
                _eq9_displayed,
                deciding=False,
                reading="as displayed, every t",
            ),
        ),
    ),
    Claim(
        id="dicesgd.lemma-a6",
        paper=PAPER,
        location="Lemma A.6 / eq. (21), proof App. A.3.1",
        statement=(
            "D_alpha(N_sigma(Delta e_{t+1}) || mu_0) <= D_alpha((1-p) N_sigma((1-alpha_e^t) Delta e_t) + "
            "p N_sigma((1-alpha_e^t) Delta e_t + 2G'/B) || mu_0)."
        ),
        formula="D(N(De_{t+1})||mu0) <= D((1-p) N((1-a_e) De_t) + p N((1-a_e) De_t + 2G'/B) || mu0)",
        assumptions=("x_t, e_t, e'_t the inputs of A_2", "p = B/N", "G' = max{0, G + sigma - C1}"),
        domain=lemma_a6_domain(),
        checks=(
            Check(
                "adversarial-search",
                "privacy",
                search_check(
                    lemma_a6_domain,
                    _a6_ratio,
                    method=(
                        "adversarial search; exact integer-order RDP of both Gaussian mixtures (closed form)"
                    ),
                    ratio_text=(
                        "LHS / RHS (RHS maximised over the readings of alpha_e^t and of the 2G'/B jump)"
                    ),
                    quick=(256, 5, 5),
                    extra_points=[LEMMA_A6_WITNESS],
                ),
            ),
        ),
        notes=(
            "The proof's step (c) writes e_t - clip(e_t, C2) - (e'_t - clip(e'_t, C2)) = (1 - "
            "alpha_e^t)(e_t - e'_t), "
            "which holds only when both states share one clipping factor. The witness: C2 = 1, e_t = 10, "
            "e'_t = 5 "
            "(both outside the ball): the residual maps differ by 5, not 0.9 x 5 = 4.5. Replay: " + _A6_CMD
        ),
    ),
    Claim(
        id="dicesgd.thm3.7-clip-factor",
        paper=PAPER,
        location="proof of Theorem 3.7, first term of eq. (20)",
        statement=(
            "Clipping is non-expansive with factor alpha_e^t: D_alpha(N_sigma(clip(e_t, C2) - clip(e'_t, "
            "C2)) || mu_0) "
            "<= (alpha_e^t)^2 D_alpha(N_sigma(e_t - e'_t) || mu_0), i.e. ||clip(e_t) - clip(e'_t)|| <= "
            "alpha_e^t ||e_t - e'_t||."
        ),
        formula=(
            "||clip(e_t, C2) - clip(e'_t, C2)|| <= alpha_e^t ||e_t - e'_t||,  alpha_e^t = min{1, C2/||e_t||}"
        ),
        assumptions=("alpha_e^t as in (9)",),
        domain=clip_factor_domain(),
        readings=(
            Reading(
                "alpha_e^t of e_t", "(9) and the recursion (22)-(23) use the factor of the run on D", True
            ),
            Reading(
                "the larger of the two factors", "the most generous reading (not what the recursion uses)"
            ),
        ),
        checks=(
            Check(
                "adversarial-search",
                "property",
                search_check(
                    clip_factor_domain,
                    _clip_factor_ratio,
                    method="adversarial search over (||e||, ||e'||, angle); worst point replayed in mpmath",
                    ratio_text="||clip(e) - clip(e')|| / (alpha_e ||e - e'||)",
                    quick=(256, 6, 8),
                    replay=_clip_factor_replay,
                ),
                reading="alpha_e^t of e_t",
            ),
            Check(
                "larger-factor",
                "property",
                search_check(
                    clip_factor_domain,
                    _clip_factor_max_ratio,
                    method="same search with max(alpha_e, alpha_e')",
                    ratio_text="||clip(e) - clip(e')|| / (max(alpha_e, alpha_e') ||e - e'||)",
                    quick=(256, 6, 8),
                ),
                deciding=False,
                reading="the larger of the two factors",
            ),
        ),
    ),
]
