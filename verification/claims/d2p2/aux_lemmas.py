"""D2P2-SGD's auxiliary lemmas: Lemma 1 (Johnson-Lindenstrauss), Lemma 2 (the Gaussian map and the
'probability at least 1 - 1/n' that follows it), Lemma 3 (RDP composition), Lemma 6 (convexity)."""

from __future__ import annotations

import math

import numpy as np

from verification.claim import Check, Claim, Context, Outcome, Verdict
from verification.claims._util import g
from verification.claims.d2p2._common import PAPER
from verification.search import Domain, Param, Reading, adversarial_search

# --------------------------------------------------------------------------- Lemmas 1 and 2


def jl_dim(m: int, zeta: float) -> int:
    """The smallest integer p > 8 ln(m) / zeta^2 (Lemma 1)."""
    return int(math.floor(8 * math.log(m) / zeta**2)) + 1


def jl_trial(m: int, zeta: float, rng: np.random.Generator, *, normalise: bool = False) -> float:
    """Largest |ratio - 1| / zeta over the pairs of the simplex {e_1..e_m} under h(u) = A^T u/sqrt(p)
    with A ~ N(0, 1)^(m x p) (Lemma 2's map); <= 1 means this draw is a JL map for the set.

    ``normalise`` rescales each row of A to norm sqrt(p): still a linear map (the e_i are a basis,
    so any images define one), with ||h(e_i)|| = 1 exactly -- a better witness near zeta = 1.
    """
    p = jl_dim(m, zeta)
    a = rng.standard_normal((m, p))  # row i = A^T e_i
    if normalise:
        a *= math.sqrt(p) / np.linalg.norm(a, axis=1, keepdims=True)
    gram = a @ a.T
    dg = np.diag(gram)
    iu = np.triu_indices(m, 1)
    ratio = (dg[:, None] + dg[None, :] - 2 * gram)[iu] / (2 * p)  # ||e_i - e_j||^2 = 2
    return float(np.max(np.abs(ratio - 1)) / zeta)


def jl_failure_rate(m: int, zeta: float, trials: int, seed: int = 0, confidence: float = 0.99) -> dict:
    """Monte-Carlo failure probability of Lemma 2's Gaussian map at Lemma 1's p on the simplex of m
    points, with a one-sided Clopper-Pearson lower bound."""
    from scipy import stats

    rng = np.random.default_rng([seed, m])
    fails = sum(jl_trial(m, zeta, rng) > 1 for _ in range(trials))
    lower = float(stats.beta.ppf(1 - confidence, fails, trials - fails + 1)) if fails else 0.0
    return {
        "m": m,
        "zeta": zeta,
        "p": jl_dim(m, zeta),
        "trials": trials,
        "failures": int(fails),
        "failure_rate": fails / trials,
        "failure_lower_bound": lower,
        "confidence": confidence,
        "claimed_failure_at_most_1/n (n = m)": 1 / m,
    }


def _jl_ratio(pts: dict) -> np.ndarray:
    out = np.empty(len(pts["m"]))
    for i, (m, z) in enumerate(zip(pts["m"], pts["zeta"], strict=True)):
        rng = np.random.default_rng([int(m), int(z * 1e6)])
        draws = [jl_trial(int(m), float(z), rng, normalise=k % 2 == 1) for k in range(8)]
        out[i] = min(draws)  # best of 8 draws, 4 plain Gaussian and 4 row-normalised
    return out


def _lemma1_witness(ctx: Context) -> Outcome:
    dom = Domain(
        params=(
            Param("zeta", "(0, 1)", 0.3, 0.99),
            Param("m", "m >= 2 points (simplex: the JL-hardest equidistant set)", 2, 300, integer=True),
        ),
        fixed={
            "d": "m (the simplex e_1..e_m)",
            "h": "Gaussian A^T u/sqrt(p), plain or with row norms sqrt(p), best of 8 draws",
        },
        source="Lemma 1 (Larsen & Nelson 2017)",
    )
    probes = ({"zeta": 0.9, "m": 60}, {"zeta": 0.5, "m": 250}, {"zeta": 0.99, "m": 300})
    res = adversarial_search(
        dom,
        _jl_ratio,
        samples=0 if ctx.quick else 48,
        maxiter=0 if ctx.quick else 4,
        popsize=5,
        seed=ctx.seed,
        extra_points=probes,
    )
    details = res.details()
    details["rule"] = "ratio = best over draws of max |distortion - 1| / zeta; <= 1 is a verified witness"
    if res.max_ratio <= 1:
        return Outcome(
            Verdict.CONFIRMED,
            "a Gaussian map (plain or row-normalised) with p = floor(8 ln m/zeta^2) + 1 meeting the "
            "distortion was found for every "
            f"tested (m, zeta) on the simplex; worst best-draw ratio {res.max_ratio:.3g} "
            f"({res.evaluations} sets; zeta in [{details['decades_spanned']['zeta']['min']}, "
            f"{details['decades_spanned']['zeta']['max']}], "
            f"m up to {details['decades_spanned']['m']['max']})",
            "witness search: Gaussian draws on equidistant point sets",
            details,
        )
    return Outcome(
        Verdict.INCONCLUSIVE,
        f"no witness among the draws at {res.argmax} (ratio {res.max_ratio:.3g}); not a counterexample",
        "witness search",
        details,
    )


def jl_union_bound_region(m: int, zeta_lo: float) -> dict:
    """Exact certificate of Lemma 1 for EVERY set of m points (any d), by the probabilistic method.

    For a fixed difference u - v, ||h(u) - h(v)||^2 / ||u - v||^2 ~ chi2_p / p under Lemma 2's
    Gaussian map, whatever the pair; if C(m, 2) P(|chi2_p/p - 1| > zeta) < 1 some draw preserves
    all pairs, so a linear h exists. Padding h with zero coordinates keeps its distortion, so the
    smallest admissible p (jl_dim) suffices for every larger p. On the zeta-interval
    (sqrt(8 ln m/P), sqrt(8 ln m/(P-1))] the smallest p is P, and the pair failure probability
    decreases in zeta at fixed P, so its value at the left end bounds the whole interval: finitely
    many scipy chi2 tails (inflated by 1e-9 relative for rounding) certify [zeta_lo, zeta_max(m)].
    """
    from scipy.stats import chi2

    L = 8 * math.log(m)
    P = np.arange(math.floor(L) + 1, math.floor(L / zeta_lo**2) + 2, dtype=float)
    z_left = np.sqrt(L / P)
    z_right = np.minimum(np.sqrt(L / np.maximum(P - 1, 1e-300)), 1.0)
    pair_fail = chi2.sf(P * (1 + z_left), P) + chi2.cdf(P * (1 - z_left), P)
    expected = m * (m - 1) / 2 * pair_fail * (1 + 1e-9) + 1e-300
    ok = expected < 1
    # certified zeta: a run of P from the largest (zeta_lo) down to the first failure
    first_bad = int(np.argmax(~ok[::-1])) if not ok.all() else len(ok)
    run = slice(len(ok) - first_bad, len(ok))
    zmax = float(z_right[run][0]) if first_bad else None
    return {
        "m": m,
        "zeta_lo": zeta_lo,
        "certified_zeta_max": zmax,
        "all_zeta_in_[lo,1)": bool(ok.all()),
        "intervals_checked": int(len(P)),
        "max_expected_failing_pairs_in_region": float(expected[run].max()) if first_bad else None,
    }


def jl_expected_failing_pairs(m: int, zeta: float) -> float:
    """C(m, 2) P(|chi2_p/p - 1| > zeta) at Lemma 1's smallest p (< 1 proves the lemma there)."""
    from scipy.stats import chi2

    p = jl_dim(m, zeta)
    return m * (m - 1) / 2 * float(chi2.sf(p * (1 + zeta), p) + chi2.cdf(p * (1 - zeta), p))


def _lemma1_union_bound(ctx: Context) -> Outcome:
    if ctx.quick:
        ms, zlo = (2, 10, 30, 100, 1000, 10**6), 0.1
    else:
        ms, zlo = (*range(2, 65), 100, 300, 1000, 10**4, 10**5, 10**6, 10**7, 10**9), 0.02
    rows = [jl_union_bound_region(m, zlo) for m in ms]
    rows = [{k: g(v) if isinstance(v, float) else v for k, v in r.items()} for r in rows]
    full_set = {r["m"] for r in rows if r["all_zeta_in_[lo,1)"]}
    prefix = 1
    while prefix + 1 in full_set:
        prefix += 1
    full_txt = (
        f"every integer m <= {prefix}"
        if prefix > 2
        else "m in {" + ", ".join(map(str, sorted(full_set))) + "}"
    )
    outside = {"m": 10**6, "zeta": 0.5, "expected_failing_pairs": g(jl_expected_failing_pairs(10**6, 0.5))}
    part = ", ".join(
        f"m = {r['m']}: zeta <= {r['certified_zeta_max']}" for r in rows if r["m"] in (100, 10**6)
    )
    return Outcome(
        Verdict.INCONCLUSIVE,
        f"proved (probabilistic method, exact chi-square tails) for every set of m points and every "
        f"zeta in [{zlo}, zeta_max(m)]: all zeta < 1 for {full_txt}, {part}; outside "
        f"(e.g. zeta = 0.5, m = 10^6: {outside['expected_failing_pairs']} expected failing pairs) "
        "nothing here proves or refutes it (Dasgupta-Gupta needs 8/(1 - 2 zeta/3) ln m, not 8 ln m)",
        "union bound over pairs with scipy chi2 tails at Lemma 1's p; one bound per interval of zeta "
        "where p is constant",
        {"per_m": rows, "uncertified_example": outside, "zeta_lo": zlo},
    )


_READ_M = "Lemma 1's p, n = m (the projected points)"
_READ_N = "Lemma 1's p, n = the dataset size"
_READ_JL = "p from the cited JL theorem (larger constant), n = m"


def jl_dim_cited(m: int, zeta: float) -> int:
    """p = ceil(12 ln m / (zeta^2 (1 - 2 zeta/3))): the Dasgupta-Gupta dimension with the exponent
    raised so that the union bound gives failure <= 1/m.

    Proof: P(chi2_p >= (1 + z) p) <= exp(p/2 (ln(1 + z) - z)) <= exp(-p (z^2/2 - z^3/3)/2) and
    P(chi2_p <= (1 - z) p) <= exp(p/2 (ln(1 - z) + z)) <= exp(-p z^2/4) (Chernoff), so one pair fails
    with probability <= 2 exp(-p (z^2/2 - z^3/3)/2) <= 2 m^-3 and the C(m, 2) < m^2/2 pairs together
    with probability <= 1/m."""
    return math.ceil(12 * math.log(m) / (zeta**2 * (1 - 2 * zeta / 3)))


def _jl_cited_check(ctx: Context) -> Outcome:
    """Third reading: the remark is true at the cited theorem's dimension (proved in jl_dim_cited);
    the exact union bound (scipy chi2 tails) is evaluated on a grid as a cross-check of the proof."""
    from scipy.stats import chi2

    ms = (2, 20, 1000, 10**6) if ctx.quick else (2, 3, 20, 100, 1000, 10**4, 10**6, 10**9)
    zetas = (0.05, 0.5, 0.99) if ctx.quick else (0.01, 0.05, 0.2, 0.5, 0.8, 0.99)
    rows = []
    for m in ms:
        for z in zetas:
            p = jl_dim_cited(m, z)
            fail = m * (m - 1) / 2 * float(chi2.sf(p * (1 + z), p) + chi2.cdf(p * (1 - z), p)) * (1 + 1e-9)
            rows.append(
                {"m": m, "zeta": z, "p": p, "union_bound": g(fail), "1/m": g(1 / m), "ok": fail <= 1 / m}
            )
    ok = all(r["ok"] for r in rows)
    return Outcome(
        Verdict.CONFIRMED if ok else Verdict.INCONCLUSIVE,
        "at p = ceil(12 ln m/(zeta^2 (1 - 2 zeta/3))) the Gaussian map fails with probability <= 1/m for "
        "every m and zeta (Chernoff + union bound, proof in jl_dim_cited); the exact union bound agrees on "
        f"{len(rows)} grid points"
        if ok
        else "the exact union bound exceeds 1/m somewhere: the proof is wrong",
        "analytic Chernoff bound, cross-checked with scipy chi2 tails",
        {"grid": rows, "p_formula": "ceil(12 ln m / (zeta^2 (1 - 2 zeta/3)))"},
    )


def _lemma2_probability(reading: str):
    def check(ctx: Context) -> Outcome:
        m, zeta = (20, 0.5) if ctx.quick else (50, 0.5)
        r = jl_failure_rate(m, zeta, 600 if ctx.quick else 3000, seed=ctx.seed)
        claimed = 1 / m if reading == _READ_M else 1 / 60_000  # FashionMNIST's n
        details = {
            **{k: g(v) if isinstance(v, float) else v for k, v in r.items()},
            "claimed_failure": claimed,
        }
        cmd = (
            'python -c "from verification.claims.d2p2.aux_lemmas import jl_failure_rate as f; '
            f'print(f({m}, {zeta}, {r["trials"]}, seed={ctx.seed}))"'
        )
        if r["failure_lower_bound"] > claimed:
            return Outcome(
                Verdict.REFUTED,
                f"simplex of m = {m} points, zeta = {zeta}, p = {r['p']} (Lemma 1's): the Gaussian map fails "
                f"in {r['failures']}/{r['trials']} draws; failure >= {r['failure_lower_bound']:.3g} (99% "
                f"Clopper-Pearson) > 1/n = {claimed:.3g} ({reading})",
                "Monte Carlo of Lemma 2's map on an equidistant set",
                details,
                reproduce=cmd,
            )
        return Outcome(
            Verdict.INCONCLUSIVE,
            f"failure lower bound {r['failure_lower_bound']:.3g} <= {claimed:.3g}",
            "Monte Carlo",
            details,
            reproduce=cmd,
        )

    return check


def _lemma2_index(ctx: Context) -> Outcome:
    return Outcome(
        Verdict.INCONCLUSIVE,
        "r_i = (1/sqrt(p)) sum_j A_ij o_j indexes A (d x p) by (i <= p, j <= d): it is (A^T)_ij; read as "
        "r = A^T o/sqrt(p), the definition itself",
        "reading of the rendered formula",
        {
            "stated": "r_i = (1/sqrt p) sum_j A_ij o_j",
            "consistent_reading": "r_i = (1/sqrt p) sum_j A_ji o_j",
        },
    )


# --------------------------------------------------------------------------- Lemma 3 (RDP composition)


def _renyi(lp: np.ndarray, lq: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """D_eta(P || Q) along the last axis from log-probabilities (eta = 1: KL)."""
    from scipy.special import logsumexp

    e = eta[..., None]
    kl = np.sum(np.exp(lp) * (lp - lq), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        re = logsumexp(e * lp + (1 - e) * lq, axis=-1) / (eta - 1)
    return np.where(np.abs(eta - 1) < 1e-12, kl, re)


def lemma3_ratio(eta: np.ndarray, conc: np.ndarray, seed: int = 0) -> np.ndarray:
    """D_eta(joint) / (D_eta(M1) + max_y D_eta(M2 | y)) for random adaptive pairs of 3-outcome
    mechanisms (Dirichlet(conc): small conc gives near-degenerate, high-divergence distributions).

    Everything is in log space (a Dirichlet draw as normalised log-Gamma variables, the joint as
    a sum of logs), so no probability is rounded to 0 on one side only.
    """
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)
    n = eta.size

    def draw(shape):
        a = np.broadcast_to(conc.reshape((n,) + (1,) * (len(shape) - 1)), shape)
        # log Gamma(a) variables: log(U^(1/a) G(a+1)) avoids underflow for tiny a
        lg = np.log(rng.gamma(a + 1.0)) + np.log(rng.random(shape)) / a
        return lg - logsumexp(lg, axis=-1, keepdims=True)

    lp1, lq1 = draw((n, 3)), draw((n, 3))
    lp2, lq2 = draw((n, 3, 3)), draw((n, 3, 3))  # second mechanism given the first output y
    jp = (lp1[:, :, None] + lp2).reshape(n, 9)
    jq = (lq1[:, :, None] + lq2).reshape(n, 9)
    d_joint = _renyi(jp, jq, eta)
    d1 = _renyi(lp1, lq1, eta)
    d2 = np.max(_renyi(lp2, lq2, np.repeat(eta[:, None], 3, axis=1)), axis=1)
    return d_joint / (d1 + d2)


def _lemma3_check(ctx: Context) -> Outcome:
    dom = Domain(
        params=(
            Param("eta", "eta >= 1 ('for any fixed eta >= 1')", 1.0, 1e3),
            Param("conc", "Dirichlet concentration of the random mechanisms", 1e-2, 1e2),
        ),
        fixed={"mechanisms": "adaptive pairs of 3-outcome mechanisms, the second chosen by the first output"},
        source="Lemma 3 (eq. 5)",
    )

    def ratio(pts: dict) -> np.ndarray:
        reps = 16
        eta = np.repeat(pts["eta"], reps)
        conc = np.repeat(pts["conc"], reps)
        r = lemma3_ratio(eta, conc, seed=int(1e6 * float(pts["eta"].sum())) % (2**31))
        return np.nanmax(r.reshape(-1, reps), axis=1)

    res = adversarial_search(
        dom, ratio, samples=256 if ctx.quick else 2048, maxiter=5 if ctx.quick else 40, seed=ctx.seed
    )
    details = res.details()
    if res.counterexample is not None:
        return Outcome(
            Verdict.REFUTED, "composition bound violated: " + res.summary(), "exact Renyi", details
        )
    return Outcome(
        Verdict.CONFIRMED,
        "no counterexample among random adaptive pairs of 3-outcome mechanisms (16 per point; a family, "
        "not every mechanism: the lemma rests on Mironov 2017, Prop. 1): " + res.summary(),
        "supporting search: exact Renyi divergences of random adaptive compositions vs the sum bound "
        "(the derivation is in the claim's notes)",
        details,
    )


# --------------------------------------------------------------------------- Lemma 6 (convexity)


def _convex_family(kind: int, x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f(x), grad f(x)) of a separable convex family (0: softplus, 2: Huber); x has shape (n, 3)."""
    if kind == 0:  # softplus sum
        z = x * w
        return np.logaddexp(0, z).sum(-1), w / (1 + np.exp(-z))
    if kind == 2:  # Huber sum
        a = np.abs(x)
        f = np.where(a <= w, 0.5 * x * x, w * (a - 0.5 * w)).sum(-1)
        return f, np.where(a <= w, x, w * np.sign(x))
    raise ValueError(kind)


def lemma6_ratio(kind: int, scale: float, wscale: float, n: int = 256, seed: int = 0) -> float:
    """max over random (x, y) of (f(y) + <grad f(y), x - y>) / f(x); > 1 violates Lemma 6."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, scale, (n, 3))
    y = rng.normal(0, scale, (n, 3))
    w = np.abs(rng.normal(0, wscale, (n, 3))) + 1e-12
    if kind == 1:  # quadratic with a random PSD matrix (f > 0 away from 0)
        m = rng.normal(0, wscale, (n, 3, 3))
        h = m @ np.transpose(m, (0, 2, 1)) + 1e-9 * np.eye(3)
        fx = 0.5 * np.einsum("ni,nij,nj->n", x, h, x) + 1.0
        fy = 0.5 * np.einsum("ni,nij,nj->n", y, h, y) + 1.0
        gy = np.einsum("nij,nj->ni", h, y)
    else:
        fx, _ = _convex_family(kind, x, w)
        fy, gy = _convex_family(kind, y, w)
    lhs = fy + np.sum(gy * (x - y), axis=-1)
    return float(np.max(lhs / fx))


def _lemma6_check(ctx: Context) -> Outcome:
    dom = Domain(
        params=(
            Param("kind", "0 softplus, 1 PSD quadratic, 2 Huber", 0, 2, log=False, integer=True),
            Param("scale", "|x|, |y| scale", 1e-3, 1e3),
            Param("wscale", "curvature / threshold scale", 1e-3, 1e3),
        ),
        fixed={"dimension": "3"},
        source="Lemma 6 (eq. 14)",
    )

    def ratio(pts: dict) -> np.ndarray:
        return np.array(
            [
                lemma6_ratio(int(k), float(s), float(w), seed=i)
                for i, (k, s, w) in enumerate(zip(pts["kind"], pts["scale"], pts["wscale"], strict=True))
            ]
        )

    res = adversarial_search(
        dom, ratio, samples=64 if ctx.quick else 512, maxiter=0 if ctx.quick else 20, seed=ctx.seed, tol=1e-9
    )
    details = res.details()
    if res.counterexample is not None:
        return Outcome(
            Verdict.REFUTED, "first-order condition violated: " + res.summary(), "numeric", details
        )
    return Outcome(
        Verdict.CONFIRMED,
        "no counterexample on softplus, PSD-quadratic and Huber sums (256 random pairs per point; three "
        "families, not every convex f: the lemma rests on the first-order condition of convexity): "
        + res.summary(),
        "supporting search: first-order lower bound vs f(x) on three convex families (the derivation is "
        "in the claim's notes)",
        details,
    )


CLAIMS = [
    Claim(
        id="d2p2.lemma1",
        paper=PAPER,
        location="Lemma 1 (§2, Larsen & Nelson 2017)",
        statement=(
            "For any 0 < zeta < 1, m points in R^d and integer p > 8 ln(m)/zeta^2 there is a linear "
            "h: R^d -> "
            "R^p with (1 - zeta)||u - v||^2 <= ||h(u) - h(v)||^2 <= (1 + zeta)||u - v||^2 on the set."
        ),
        formula="p > 8 ln m / zeta^2  =>  exists linear h with distortion within 1 +- zeta",
        assumptions=("cited from Larsen & Nelson (2017)",),
        checks=(
            Check("union-bound-certificate", "property", _lemma1_union_bound, can_refute=False),
            Check("gaussian-witness", "property", _lemma1_witness, deciding=False, can_refute=False),
        ),
        notes=(
            "For all m, zeta and sets S there exists h. Proved exactly where C(m,2) P(|chi2_p/p - 1| > "
            "zeta) < 1 (the region is stated in the evidence); outside it the witness search on "
            "simplices (m <= 300) only shows particular sets, so the verdict is inconclusive. The "
            "cited theorems we know (Dasgupta-Gupta: p >= 8 ln m/(zeta^2 (1 - 2 zeta/3))) carry a "
            "larger constant than 8."
        ),
    ),
    Claim(
        id="d2p2.jl-probability-remark",
        paper=PAPER,
        location="Lemma 2 remark (the sentence after Lemma 2, §2)",
        statement=(
            "Combining Lemmas 1 and 2 (h(o) = A^T o/sqrt(p), A_ij ~ N(0, 1), d x p), with probability at "
            "least 1 - 1/n the projection preserves the (pairwise) geometry (Johnson et al. 1984)."
        ),
        formula="P(h is a (1 +- zeta) JL map on the points) >= 1 - 1/n at p > 8 ln m/zeta^2",
        assumptions=("A_ij ~ N(0, 1)", "p as in Lemma 1"),
        checks=(
            Check("failure-probability-n=m", "property", _lemma2_probability(_READ_M), reading=_READ_M),
            Check(
                "failure-probability-n=dataset",
                "property",
                _lemma2_probability(_READ_N),
                deciding=False,
                reading=_READ_N,
            ),
            Check(
                "cited-jl-dimension",
                "property",
                _jl_cited_check,
                deciding=False,
                reading=_READ_JL,
                can_refute=False,
            ),
            Check("index-of-A", "symbolic", _lemma2_index, deciding=False, can_refute=False),
        ),
        readings=(
            Reading(
                _READ_M,
                "the sentence says 'combining Lemma 1 and Lemma 2', so p is Lemma 1's (any integer above "
                "8 ln m/zeta^2, the smallest included); JL statements give 1 - 1/m for m points",
                True,
            ),
            Reading(_READ_N, "n is the dataset size everywhere else in the paper"),
            Reading(
                _READ_JL,
                "the probability is cited from the JL literature, whose dimension carries a larger "
                "constant; this changes the p the sentence names",
            ),
        ),
        notes=(
            "Lemma 2 itself is a definition (the map h); what is tested is the probability remark after it. "
            "Headline: Lemma 1's p with n = m (refuted; n = dataset size is refuted too). Under the cited "
            "theorem's larger dimension the remark is true (proved), but the sentence combines Lemma 1's "
            "p, not that one."
        ),
    ),
    Claim(
        id="d2p2.lemma3",
        basis="definition",
        paper=PAPER,
        location="Lemma 3 (App. A.3, eq. 5; Abadi et al. 2016 Thm 2.1)",
        statement=(
            "For an adaptive composition M = M_K o ... o M_1 and any fixed eta >= 1: "
            "e_M(eta) <= sum_k e_Mk(eta)."
        ),
        formula="e_M(eta) <= sum_k e_{M_k}(eta)",
        assumptions=(
            "e is the sup over neighbours of the Renyi divergence (Definition 2)",
            "for an adaptive M_k the sup also runs over the earlier outputs it receives (Abadi et al.'s aux)",
        ),
        checks=(Check("random-adaptive-pairs", "property", _lemma3_check),),
        notes=(
            "Basis: definition / algebra, a standard theorem: adaptive RDP composition (Mironov 2017, "
            "Prop. 1; Abadi et al. 2016, Thm 2.1 (composability), whose log moment lambda D_{lambda+1} is "
            "(eta - 1) e(eta) at eta = lambda + 1). One step; induction on K gives the sum. Let P1, Q1 be "
            "M_1's output laws on neighbours D, D' and P2(.|y), Q2(.|y) M_2's given M_1's output y. For eta "
            "> 1: exp((eta-1) D_eta(P12 || Q12)) = int p1(y)^eta q1(y)^(1-eta) [int p2(z|y)^eta "
            "q2(z|y)^(1-eta) dz] dy = int p1^eta q1^(1-eta) exp((eta-1) D_eta(P2(.|y) || Q2(.|y))) dy <= "
            "exp((eta-1) e_M2(eta)) exp((eta-1) D_eta(P1 || Q1)), because the weight p1^eta q1^(1-eta) is >= "
            "0, eta - 1 > 0, and e_M2 bounds the inner divergence for every y. At eta = 1 the KL chain rule "
            "gives D(P12 || Q12) = D(P1 || Q1) + E_{y ~ P1} D(P2(.|y) || Q2(.|y)), at most the same sum. "
            "The sup over (D, D') of a sum is at most the sum of the sups. The search (random adaptive "
            "pairs of 3-outcome mechanisms, eta in [1, 1e3]) covers a family, not every mechanism: it "
            "supports the theorem and is not counted as a confirmation by search."
        ),
    ),
    Claim(
        id="d2p2.lemma6",
        basis="definition",
        paper=PAPER,
        location="Lemma 6 (App. A.4, eq. 14; Garrigos & Gower 2023)",
        statement="For convex differentiable f: f(x) >= f(y) + <grad f(y), x - y>.",
        formula="f(x) >= f(y) + <grad f(y), x - y>",
        assumptions=("f convex, differentiable",),
        checks=(Check("convex-families", "property", _lemma6_check),),
        notes=(
            "Basis: definition / algebra, the first-order condition of convexity (Boyd & Vandenberghe "
            "2004, Sec. 3.1.3, eq. 3.2). For t in (0, 1], convexity gives f(y + t(x - y)) <= (1 - t) f(y) "
            "+ t f(x), i.e. (f(y + t(x - y)) - f(y))/t <= f(x) - f(y); as t -> 0+ the left side tends to "
            "<grad f(y), x - y> because f is differentiable at y, which is (14). The search (softplus, "
            "PSD-quadratic and Huber sums in R^3) covers three families, not every convex f: it supports "
            "the lemma and is not counted as a confirmation by search."
        ),
    ),
]
