"""D2P2-SGD Theorem 1 (privacy) and the noise schedule of the text vs Table 3."""

from __future__ import annotations

import math

from verification.claim import Check, Claim, Context, Outcome, Plot, Verdict
from verification.claims._util import audit_refutes_or_silent, g
from verification.claims.d2p2._common import PAPER, eps_schedule
from verification.claims.d2p2.thm1_alg1 import ANALYTIC_LOWER as THM1_ALG1_LOWER
from verification.claims.d2p2.thm1_alg1 import thm1_alg1_witness
from verification.search import Reading

_PROOF_MODEL = "proof-model: y_k released"
_FINAL_ONLY = "only x_K released, A_k secret"

#: constant pairs the deciding check evaluates (the family covers every pair analytically;
#: 314 is A.9.2's smallest C1, 28 about the C2 of eq. 13 solved with equality)
_THM1_CONSTANTS = ((314.0, 1.0), (314.0, 28.0), (1.0, 1e-3), (1e-6, 1e-6), (1e3, 1e3))
_THM1_CONSTANTS_FULL = _THM1_CONSTANTS + ((1e6, 1e6), (1e-9, 1e2), (3.0, 1e-8))


#: the regime of the refutation: an open region of the stated domain (eps <= C1 B^2 K/n^2 with K free
#: admits every eps), not a degenerate edge, so the verdict carries no ``edge``
THM1_REGIME = (
    "fails for eps above about kappa B^2 C2 ln(1/delta): the witness family proves it at eps = (8 B r + 12) "
    "B r ~ 16 B^2 C2 ln(1/delta), r = sqrt(2 C2 ln(1/delta)); the same test's idealised threshold "
    "(K -> inf, not a rigorous bound) is 4-30x lower, kappa ~ 0.7-4 (delta = 1e-5: 8.0 vs 242 at "
    "B = C2 = 1, 4.2e3 vs 1.9e4 at B = 10, C2 = 1)"
)

#: the release model the deciding check needs (the paper releases y_k, never says A_k is public)
THM1_RELEASE = (
    "A_k public is an added assumption (the paper releases y_k but never says A_k is public); if the "
    "iterates x_k are released, a linear test on the iterates works without it (argued, not implemented "
    "here); only the x_K-only "
    "reading (A_k secret) remains open"
)


def _thm1_counterexample_family(ctx: Context) -> Outcome:
    """Deciding: the closed-form witness family of thm1_alg1 (Algorithm 1 as written) at several
    batch sizes B, constant pairs (C1, C2) and deltas."""
    pairs = _THM1_CONSTANTS if ctx.quick else _THM1_CONSTANTS_FULL
    deltas = (1e-5,) if ctx.quick else (1e-5, 1e-10, 0.05)
    batches = (1, 10, 100) if ctx.quick else (1, 10, 100, 1000)
    rows = []

    def add(c1: float, c2: float, delta: float, b: int, shift: float = 1.0) -> None:
        w = thm1_alg1_witness(c1, c2, delta, b, shift=shift)
        extra = "" if shift == 1.0 else f", shift={shift!r}"
        w["reproduce"] = (
            'python -c "from verification.claims.d2p2.thm1_alg1 import thm1_alg1_witness as w; '
            f'print(w({c1!r}, {c2!r}, {delta!r}, {b}{extra}))"'
        )
        rows.append({k: g(v) if isinstance(v, float) else v for k, v in w.items()})

    for b in batches:
        for c1, c2 in pairs:
            for delta in deltas:
                add(c1, c2, delta, b)
    # Alg. 1's normalisation g/(||g|| + gamma) never reaches norm 1: a gradient of norm 1e6 gamma
    for c1, c2 in pairs[:2]:
        add(c1, c2, 1e-5, 10, shift=1 / (1 + 1e-6))
    bad = [r for r in rows if r["violates"] and r["eps<=C1_q^2_K"]]
    r = next(x for x in rows if x["B"] == 10)
    details = {
        "witnesses": rows,
        "batch_sizes": list(batches),
        "family": "r = sqrt(2 C2 ln(1/delta)), mu* = 8 B r + 12, eps = mu* B r, "
        "K = ceil(max(100 eps^2/(C2 q^2 ln(1/delta)), eps/(C1 q^2), 1e6)), "
        "sigma^2 = C2 q^2 K^2 ln(1/delta)/eps^2 (the theorem's minimum), q = B/n = 1/20",
        "assumptions": [
            "Algorithm 1 as written: noise N(0, sigma^2/k I_p) on (1/sqrt(p)) A_k^T of the AVERAGE (1/B) sum "
            "of normalised per-sample gradients",
            "A_k fresh each step, entries N(0, sigma_A^2) with sigma_A = 1, released with y_k (public); "
            "p = 1",
            "every y_k released (the proof's post-processing step needs it); only x_K released is the "
            "other reading, undecided",
            "linear losses: one sample with gradient M e_1, all others 0; normalised norm c = M/(M + gamma) "
            "(c = 1 and c = 1/(1 + 1e-6) evaluated)",
            "Poisson inclusion with rate q (add/remove), or fixed batches of size B (replace-one)",
        ],
        "analytic_bound_every_B_C1_C2": f"delta(eps) >= (0.9 - e^-10)((1 - e^-9) Phi(2) - e^-12/2) = "
        f"{THM1_ALG1_LOWER:.6f} (derivation: verification/claims/d2p2/thm1_alg1.py docstring)",
        "test": "T = sum_k (k/sigma^2) a_k^T y_k > t sqrt(V_A), a_k = A_k^T e_1/sqrt(p); inclusion pattern "
        "bounded with Hoeffding, the draw of A with Laurent-Massart and Markov (no Monte Carlo)",
        "regime": THM1_REGIME,
        "release_model": THM1_RELEASE,
    }
    if len(bad) == len(rows):
        return Outcome(
            Verdict.REFUTED,
            f"Algorithm 1 as written (noise on the average, public A_k, sigma_A = 1) fails for every "
            f"B in {list(batches)} and every tested (C1, C2) (analytically for every B >= 1 and all "
            f"constants): e.g. B = {r['B']}, C1 = {r['C1']}, C2 = {r['C2']}, delta = {r['delta']}, q = 0.05, "
            f"K = {r['K']}, eps = {r['eps']} <= C1 q^2 K, sigma at the theorem's minimum: delta(eps) >= "
            f"{r['delta_eps_lower']} > delta. Regime: an open region of the domain (eps <= C1 B^2 K/n^2 "
            "with K free admits any eps), not an edge; the family shows it at eps ~ 16 B^2 C2 ln(1/delta), "
            "the same test's idealised threshold is 4-30x lower. A_k public is an added assumption; "
            "released iterates x_k would give a linear test without it",
            "rigorous hockey-stick lower bound of a linear test on the released (A_k, y_k) (Gaussian tails "
            "from scipy, Hoeffding for the sampling pattern, Laurent-Massart and Markov for A_k)",
            details,
            reproduce=r["reproduce"],
        )
    return Outcome(
        Verdict.INCONCLUSIVE,
        f"the witness family fails to violate at {len(rows) - len(bad)} of {len(rows)} points",
        "rigorous hockey-stick lower bound of a linear test on the released (A_k, y_k)",
        details,
    )


def _thm1_final_only(ctx: Context) -> Outcome:
    """The reading in which only x_K is released and A_k stays secret: no lower bound applies."""
    return Outcome(
        Verdict.INCONCLUSIVE,
        "no tool here bounds the privacy of the last iterate with secret projections from below or "
        "above; the y_k-sequence counterexample does not transfer (x_K is a lossy function of it)",
        "none (reading registered, not decided)",
        {"reason": "hidden-state analysis of D2P2-SGD with secret A_k is open in this project"},
    )


def _thm1_cases(ctx: Context):
    if ctx.quick:
        return [(0.01, 100, 1.0, 1e-5), (0.05, 200, 2.0, 1e-5)]
    return [
        (0.01, 100, 1.0, 1e-5),
        (0.01, 400, 1.0, 1e-5),
        (0.05, 200, 2.0, 1e-5),
        (0.001, 1000, 0.5, 1e-6),
        (0.05, 400, 8.0, 1e-5),
    ]


def _thm1_proof_prescription(ctx: Context) -> Outcome:
    """Eq. 13 solved with equality (our reconstruction, not a constant the paper states):
    7 K^2 q^2 eta/sigma^2 = eps/2 with exp(-(eta-1) eps/2) = delta."""
    rows = []
    for q, K, eps, delta in _thm1_cases(ctx):
        eta = 1 + 2 * math.log(1 / delta) / eps
        sigma = math.sqrt(14 * K * K * q * q * eta / eps)
        in_domain = eta <= 0.5 * sigma**2 * math.log(1 / q)
        cert, src = eps_schedule(q, sigma, K, delta, "inv-k")
        rows.append(
            {
                "q": q,
                "K": K,
                "eps": eps,
                "delta": delta,
                "eq13_eta": g(eta),
                "eq13_sigma": g(sigma),
                "implied_C2=sigma^2 n^2 eps^2/(B^2 K^2 ln(1/delta))": g(
                    sigma**2 * eps**2 / (q * q * K * K * math.log(1 / delta))
                ),
                "eta_inside_lemma5_domain": in_domain,
                "certified_eps_at_eq13_sigma": g(cert),
            }
        )
    sound = all(r["certified_eps_at_eq13_sigma"] <= r["eps"] for r in rows)
    return Outcome(
        Verdict.CONFIRMED if sound else Verdict.INCONCLUSIVE,
        "with sigma solving eq. 13 with equality (our reconstruction, C2 ~ "
        f"{rows[0]['implied_C2=sigma^2 n^2 eps^2/(B^2 K^2 ln(1/delta))']}; the paper names no C2) and the "
        f"text's schedule sigma^2/k the certified eps is <= target in all {len(rows)} cases "
        f"(e.g. {rows[0]['certified_eps_at_eq13_sigma']} <= {rows[0]['eps']})"
        if sound
        else "certified eps exceeds the target at the reconstructed noise in some case "
        "(upper bound only: not a counterexample)",
        "certified RDP accountant for the schedule sigma_k = sigma/sqrt(k) at sigma solving eq. 13",
        {"cases": rows, "accountant": src},
    )


def _thm1_with_projection(ctx: Context) -> Outcome:
    """Theorem 1 is stated for D2P2-SGD, whose noise is added after a fresh projection A_k: the
    certified accountant with that projection (chi-square bound, docs/algorithms.md) at the
    noise solving eq. 13 with equality, over projection dimensions from small to the paper's 0.7 d."""
    from accounting.algorithms.base import PrivacyParams
    from accounting.algorithms.registry import get_algorithm

    algo = get_algorithm("d2p2sgd")
    d = 37354  # the paper's CNN (docs/algorithms.md)
    dims = (10,) if ctx.quick else (10, 100, 1000, int(0.7 * d))
    rows = []
    for q, K, eps, delta in _thm1_cases(ctx)[: 1 if ctx.quick else 2]:
        eta = 1 + 2 * math.log(1 / delta) / eps
        sigma = math.sqrt(14 * K * K * q * q * eta / eps)
        n = 100_000
        for pdim in dims:
            rep = algo.epsilon(
                PrivacyParams(
                    algo="d2p2sgd",
                    noise_multiplier=sigma,
                    delta=delta,
                    sample_rate=q,
                    steps=K,
                    dataset_size=n,
                    batch_size=q * n,
                    schedule="inv-k",
                    projection="fresh",
                    projection_dim=pdim,
                    model_dim=d,
                ),
                "certified",
                "rdp",
            )
            rows.append(
                {
                    "q": q,
                    "K": K,
                    "eps": eps,
                    "delta": delta,
                    "p": pdim,
                    "d": d,
                    "eq13_sigma": g(sigma),
                    "certified_eps": g(rep.epsilon),
                }
            )
    over = [r for r in rows if not r["certified_eps"] <= r["eps"]]
    details = {
        "cases": rows,
        "projection": "fresh Gaussian A_k per step (Alg. 1), certified sensitivity factor from a "
        "chi-square tail bound with its failure probability charged to delta",
    }
    method = "certified accountant of D2P2-SGD with its projection, at the noise solving eq. 13"
    if not over:
        return Outcome(
            Verdict.CONFIRMED,
            f"with the projection accounted for, the certified eps is <= target for every p in {dims} "
            f"({len(rows)} cases)",
            method,
            details,
        )
    ok_dims = sorted({r["p"] for r in rows} - {r["p"] for r in over})
    r = over[0]
    return Outcome(
        Verdict.INCONCLUSIVE,
        f"with the projection accounted for, the certified eps exceeds the target at p = {r['p']} "
        f"({r['certified_eps']} > {r['eps']}; an upper bound, not a counterexample); it is within "
        f"the target for p in {ok_dims}",
        method,
        details,
    )


def _thm1_audit(ctx: Context) -> Outcome:
    """accounting.audit's exact lower bound at the noise solving eq. 13 with equality (schedule
    sigma^2/k, no projection)."""
    from accounting.algorithms.base import PrivacyParams
    from accounting.audit import run_audit

    rows = []
    for q, K, eps, delta in _thm1_cases(ctx)[: 1 if ctx.quick else None]:
        eta = 1 + 2 * math.log(1 / delta) / eps
        sigma = math.sqrt(14 * K * K * q * q * eta / eps)
        n = 100_000
        res = run_audit(
            PrivacyParams(
                algo="d2psgd",
                noise_multiplier=sigma,
                delta=delta,
                sample_rate=q,
                steps=K,
                dataset_size=n,
                batch_size=q * n,
                schedule="inv-k",
            ),
            samples=1,
            confidence=0.99,
            seed=ctx.seed,
        )
        rows.append(
            {
                "q": q,
                "K": K,
                "eps": eps,
                "delta": delta,
                "eq13_sigma": g(sigma),
                "epsilon_lower": g(res.epsilon_lower),
                "method": res.method,
                "reproduce": f"dptheory audit --algo d2psgd --noise-multiplier {g(sigma, 10)} "
                f"--delta {delta} --sample-rate {q} --steps {K} --dataset-size {n} "
                f"--batch-size {g(q * n)} --schedule inv-k",
            }
        )
    return audit_refutes_or_silent(
        rows,
        what="the noise solving eq. 13",
        method="accounting.audit.run_audit (exact privacy-loss distribution, rounded down)",
    )


def _thm1_implied_constants(ctx: Context) -> Outcome:
    from accounting import calibration as cal

    rows = []
    for q, K, eps, delta in _thm1_cases(ctx)[: 1 if ctx.quick else None]:

        def f(b, q=q, K=K, delta=delta):
            return eps_schedule(q, b, K, delta, "inv-k")[0]

        sigma = cal.calibrate_decreasing(f, eps, option="--noise-multiplier", lower=1e-2, upper=1e4).value
        c2 = sigma**2 * eps**2 / (q * q * K * K * math.log(1 / delta))
        c1_needed = eps / (q * q * K)  # the theorem's condition eps <= C1 B^2 K / n^2
        rows.append(
            {
                "q": q,
                "K": K,
                "eps": eps,
                "delta": delta,
                "certified_min_sigma": g(sigma),
                "implied_C2": g(c2),
                "C1_needed_for_eps<=C1 q^2 K": g(c1_needed),
            }
        )
    c2s = [r["implied_C2"] for r in rows]
    return Outcome(
        Verdict.CONFIRMED,
        f"constants implied by the certified accountant: C2 in [{min(c2s)}, {max(c2s)}] over {len(rows)} "
        "cases "
        "(eq. 13 solved with equality gives C2 ~ 28 (1 + eps/(2 ln(1/delta))); the paper names no C2)",
        "calibrate the smallest base sigma with certified eps <= target (schedule sigma^2/k), solve for C2",
        {
            "cases": rows,
            "calibration": "accounting.calibration.calibrate_decreasing",
        },
    )


def _schedule_check(ctx: Context) -> Outcome:
    rows = []
    cases = (
        [(0.05, 200, 3.0, 1e-5)]
        if ctx.quick
        else [
            (0.01, 1000, 2.0, 1e-5),
            (0.05, 400, 3.0, 1e-5),
            (0.004, 2400, 1.0, 1e-5),
            (0.02, 2000, 3.0, 1e-5),
        ]
    )
    src = ""
    for q, K, base, delta in cases:
        e_k, src = eps_schedule(q, base, K, delta, "inv-k")
        e_sk, _ = eps_schedule(q, base, K, delta, "inv-sqrt-k")
        e_c, _ = eps_schedule(q, base, K, delta, "constant")
        rows.append(
            {
                "q": q,
                "K": K,
                "base_sigma": base,
                "delta": delta,
                "eps_text_sigma^2/k": g(e_k),
                "eps_table3_sigma^2/sqrt(k)": g(e_sk),
                "eps_constant": g(e_c),
                "ratio_text/table3": g(e_k / e_sk),
            }
        )
    covered = all(r["eps_table3_sigma^2/sqrt(k)"] <= r["eps_text_sigma^2/k"] * (1 + 1e-9) for r in rows)
    r0 = rows[0]
    plots = (
        Plot(
            name="d2p2_schedules",
            title="D2P2: certified epsilon for the same base sigma under each schedule",
            xlabel="case",
            ylabel="epsilon",
            series=(
                {
                    "label": "sigma^2/k (text, proof)",
                    "x": list(range(len(rows))),
                    "y": [r["eps_text_sigma^2/k"] for r in rows],
                    "style": "o",
                },
                {
                    "label": "sigma^2/sqrt(k) (Table 3, experiments)",
                    "x": list(range(len(rows))),
                    "y": [r["eps_table3_sigma^2/sqrt(k)"] for r in rows],
                    "style": "s",
                },
                {
                    "label": "constant",
                    "x": list(range(len(rows))),
                    "y": [r["eps_constant"] for r in rows],
                    "style": "^",
                },
            ),
            logy=True,
        ),
    )
    return Outcome(
        Verdict.CONFIRMED if covered else Verdict.REFUTED,
        "what is shown: at the same base sigma the certified accountant gives Table 3's sigma^2/sqrt(k) "
        f"no larger eps than the text's sigma^2/k in all {len(rows)} cases (q={r0['q']}, K={r0['K']}, "
        f"sigma={r0['base_sigma']}: {r0['eps_table3_sigma^2/sqrt(k)']} vs {r0['eps_text_sigma^2/k']}); "
        "in general sigma^2/sqrt(k) >= sigma^2/k at every k >= 1 and the subsampled Gaussian is monotone "
        "in its noise, so a guarantee for sigma^2/k also covers Table 3's schedule (conservatively)"
        if covered
        else "Table 3's schedule is less private than the proved one in some case",
        "certified RDP accountant for both schedules at the same base sigma",
        {
            "cases": rows,
            "accountant": src,
            "question": "does Thm 1 (proved for sigma^2/k) cover the schedule of Table 3?",
        },
        plots,
    )


CLAIMS = [
    Claim(
        id="d2p2.thm1",
        paper=PAPER,
        location="Theorem 1 (proof App. A.3)",
        statement=(
            "There exist C1, C2 such that for eps <= C1 B^2 K/n^2, D2P2-SGD with sigma_{eps,k}^2 = "
            "sigma^2/k is "
            "(eps, delta)-DP if sigma^2 >= C2 B^2 K^2 ln(1/delta)/(n^2 eps^2)."
        ),
        formula="sigma^2 >= C2 B^2 K^2 ln(1/delta) / (n^2 eps^2)  =>  (eps, delta)-DP",
        assumptions=(
            "Assumption 2",
            "sigma_{eps,k}^2 = sigma^2/k",
            "fresh Gaussian projection A_k per step (entries N(0, sigma_A^2); the witness takes sigma_A = 1, "
            "p = 1, A_k public: an added assumption, the paper never says so)",
            "noise on (1/sqrt(p)) A_k^T of the average (1/B) sum of normalised gradients (Alg. 1, line 6)",
        ),
        depends_on=("d2p2.lemma4", "d2p2.lemma5"),
        checks=(
            Check("counterexample-family", "privacy", _thm1_counterexample_family, reading=_PROOF_MODEL),
            Check(
                "final-iterate-only",
                "privacy",
                _thm1_final_only,
                deciding=False,
                reading=_FINAL_ONLY,
                can_refute=False,
            ),
            Check("eq13-reconstruction", "privacy", _thm1_proof_prescription, can_refute=False),
            Check("with-projection", "privacy", _thm1_with_projection, can_refute=False),
            Check("implied-constants", "privacy", _thm1_implied_constants, deciding=False),
            Check("audit-at-proof-noise", "privacy", _thm1_audit, deciding=False),
        ),
        readings=(
            Reading(
                _PROOF_MODEL,
                "the proof (App. A.3) releases the sequence y_k = (1/sqrt(p)) A_k^T g_k + "
                "N(0, sigma^2/k I_p) and treats everything else as post-processing; g_k is Alg. 1's "
                "average over the batch, A_k public",
                True,
            ),
            Reading(_FINAL_ONLY, "Alg. 1 returns only x_K; A_k could be kept secret (no proof covers it)"),
        ),
        notes=(
            "Headline (the proof's model, Algorithm 1 as written): refuted for every B >= 1 and every (C1, "
            "C2), for eps above about kappa B^2 C2 ln(1/delta). This is not a degenerate edge: eps <= C1 "
            "B^2 K/n^2 with K free admits every eps, so large eps is an open region of the stated domain (a "
            "plain refutation). The test T = sum_k (k/sigma^2) a_k^T y_k (a_k = A_k^T e_1/sqrt(p), A_k "
            "public) is, up to the sampling pattern and the draw of A_k, a Gaussian mechanism with mu = "
            "eps/(B sqrt(2 C2 ln(1/delta))) whatever K: noise on the average makes mu B times smaller than "
            "noise on the sum (the earlier witness, valid for B = 1 only), so the witness family shows the "
            "failure at eps ~ 16 B^2 C2 ln(1/delta); the same test's idealised threshold (K -> inf, not "
            "rigorous) is 4-30x lower, kappa ~ 0.7-4 (delta = 1e-5: 8.0 vs 242 at B = C2 = 1, 4.2e3 vs "
            "1.9e4 at B = 10, C2 = 1). Release model: A_k public is our added assumption (the paper "
            "releases y_k, never says A_k is public); if the iterates x_k are released, a linear test on "
            "the iterates works without it (argued, not implemented here). Reading 'only x_K released, A_k "
            "secret': undecided. Informative: eq. (13) solved with equality (our reconstruction; the paper "
            "names no explicit C2), the same noise with the projection accounted for, the constants the "
            "certified accountant implies, and an exact audit at small K. Whether projection is "
            "post-processing at all is its own claim (d2p2.projection-postprocessing)."
        ),
    ),
    Claim(
        id="d2p2.noise-schedule",
        basis="implementation",
        notes=(
            "Basis: implementation check. The question (does the accounting for sigma^2/k cover Table 3's "
            "sigma^2/sqrt(k)?) is the tool's own, answered with the project's accountant; the schedule "
            "sigma^2/sqrt(k) >= sigma^2/k for k >= 1 makes the monotonicity it shows certain, and the "
            "guarantee it compares against is Theorem 1's, which d2p2.thm1 refutes."
        ),
        paper=PAPER,
        location="§3.1, Alg. 1, Thm 1 proof vs Table 3",
        statement=(
            "The text and proof decay the noise variance as sigma^2/k; Table 3 (and the experiments) use "
            "sigma^2/sqrt(k). "
            "Question checked: does the guarantee proved for sigma^2/k cover the schedule actually used?"
        ),
        formula="sigma_{eps,k}^2 = sigma^2/k (text)  vs  sigma^2/sqrt(k) (Table 3)",
        assumptions=("same base sigma", "Poisson rate q"),
        checks=(Check("schedules", "privacy", _schedule_check),),
    ),
]
