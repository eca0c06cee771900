"""DiceSGD §2.2 / §3.1 fixed points of DPSGD-GC and DiceSGD, and the App. B.1 example."""

from __future__ import annotations

import numpy as np

from verification import properties as P
from verification import simulate
from verification.claim import Check, Claim, Context, Outcome, Plot, Verdict
from verification.claims._util import g
from verification.claims.dicesgd._common import PAPER

# =========================================================================== §2.2 and §3.1 fixed points


def b1_grads(c: float):
    """App. B.1's instance at clipping threshold ``c``: ``(C', xi, grads)`` with ``grads(x)`` the per-sample
    gradients clipped at ``C'`` (one row per point of ``x``); shared with the Theorem 3.6 checks."""
    cp, xi = P.b1_instance(c)

    def grads(x: np.ndarray) -> np.ndarray:
        return np.clip(x[:, None] - xi[None, :], -cp, cp)

    return cp, xi, grads


def _fixed_point_gc(ctx: Context) -> Outcome:
    cs = [0.3, 0.5, 1.0, 2.0, 5.0] if ctx.quick else [0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 3.3, 5.0, 10.0]
    rows = []
    for c in cs:
        cp, xi, grads = b1_grads(c)
        xt = P.b1_clipped_fixed_point(c)
        grad_f = float(np.mean(P.b1_grad(xt, xi, cp)))
        residual = float(np.mean(np.clip(P.b1_grad(xt, xi, cp), -c, c)))
        traj = simulate.dpsgd_gc_1d(
            grads, len(xi), x0=0.0, eta=0.5, steps=400, c=c, sigma1=0.0, seeds=1, seed=ctx.seed
        )
        rows.append(
            {
                "C": c,
                "x_tilde": g(xt),
                "grad_f_at_x_tilde": g(grad_f),
                "clipped_mean_residual": g(residual, 3),
                "noise_free_dpsgd_gc_from_x_star_ends_at": g(traj[0, -1]),
            }
        )
    biased = [r for r in rows if abs(r["grad_f_at_x_tilde"]) > 1e-6]
    converged = all(abs(r["noise_free_dpsgd_gc_from_x_star_ends_at"] - r["x_tilde"]) < 1e-6 for r in rows)
    details = {
        "instance": "DiceSGD App. B.1 (C' = ceil(C)+1; C' samples at -1, one at C'), full batch, no noise",
        "cases": rows,
        "tolerance": 1e-6,
        "steps": 400,
        "stepsize": 0.5,
    }
    if biased and converged:
        return Outcome(
            Verdict.CONFIRMED,
            f"on {len(biased)}/{len(rows)} instances the root of (1/N)sum clip(grad_i, C) = 0 has grad f "
            "!= 0 "
            f"(e.g. C={biased[0]['C']}: x~={biased[0]['x_tilde']}, grad f={biased[0]['grad_f_at_x_tilde']}); "
            "noise-free DPSGD-GC started at x* drifts to it",
            "exact root finding of the clipped fixed-point equation + noise-free DPSGD-GC run",
            details,
        )
    return Outcome(
        Verdict.INCONCLUSIVE,
        "no tested instance separates the clipped fixed point from a stationary point"
        if not biased
        else "the simulated DPSGD-GC did not settle at the computed fixed point",
        "exact root finding of the clipped fixed-point equation + noise-free DPSGD-GC run",
        details,
    )


def ef_fixed_point_residuals(grads_at_opt: np.ndarray, c1: float, c2: float) -> tuple[float, float]:
    """Residuals of DiceSGD's two fixed-point equations at the paper's construction.

    grads_at_opt: (N, d) per-sample gradients at a stationary point (their mean is 0).
    e = -(1/N) sum clip(g_i, C1); residual 1 = ||E v|| with E v = mean clip + clip(e, C2);
    residual 2 = ||E[e_next] - e|| = ||mean g - E v||.
    """
    clipped = np.array([P.clip(gi, c1) for gi in grads_at_opt]).mean(axis=0)
    e = -clipped
    ev = clipped + P.clip(e, c2)
    r1 = float(np.linalg.norm(ev))
    r2 = float(np.linalg.norm(grads_at_opt.mean(axis=0) - ev))
    return r1, r2


def _ef_strategy(c2_ge_c1: bool):
    from hypothesis import strategies as st

    @st.composite
    def draw(dr):
        d = dr(st.integers(1, 3))
        n = dr(st.integers(2, 6))
        raw = np.array(
            [
                [dr(st.floats(-20, 20, allow_nan=False, allow_infinity=False)) for _ in range(d)]
                for _ in range(n)
            ]
        )
        grads_ = raw - raw.mean(axis=0)  # gradient of the average loss vanishes at x*
        c1 = dr(st.floats(0.01, 10.0))
        c2 = c1 * dr(st.floats(1.0, 5.0)) if c2_ge_c1 else c1 * dr(st.floats(0.01, 0.99))
        return grads_, c1, c2

    return draw()


def _fixed_point_ef(ctx: Context) -> Outcome:
    n_ex = 60 if ctx.quick else 400
    tol = 1e-9

    def bad(p):
        r1, r2 = ef_fixed_point_residuals(*p)
        return max(r1, r2) > tol

    found = P.search_counterexample(_ef_strategy(True), bad, max_examples=n_ex, seed=ctx.seed)
    details = {
        "domain": "d in {1,2,3}, N in 2..6 per-sample gradients at x* (mean zero, entries |.|<=20), "
        "C1 in [0.01, 10], C2/C1 in [1, 5]",
        "construction": "x = x*, e = -(1/N) sum clip(grad_i(x*), C1) (the paper's §3.1 choice)",
        "hypothesis_examples": n_ex,
        "seed": ctx.seed,
        "tolerance": tol,
    }
    if found is not None:
        grads_, c1, c2 = found
        r1, r2 = ef_fixed_point_residuals(grads_, c1, c2)
        details["counterexample"] = {"grads": grads_.tolist(), "C1": c1, "C2": c2, "residuals": [r1, r2]}
        return Outcome(
            Verdict.REFUTED,
            f"the paper's construction is not a fixed point for C1={c1:.4g}, C2={c2:.4g}: residuals "
            f"{r1:.3g}, {r2:.3g}",
            "hypothesis search over per-sample gradient sets at a stationary point",
            details,
        )
    return Outcome(
        Verdict.CONFIRMED,
        f"(x*, e) solves both fixed-point equations to {tol:g} in {n_ex} hypothesis cases with C2 >= C1",
        "hypothesis search over per-sample gradient sets at a stationary point",
        details,
    )


def fixed_point_ef_domain():
    from verification.search import Domain, Param

    return Domain(
        params=(
            Param("d", "any dimension", 1, 200, integer=True),
            Param("N", "any number of samples >= 2", 2, 200, integer=True),
            Param("C1", "C1 > 0", 1e-6, 1e6),
            Param("C2/C1", "[1, inf): C2 >= C1", 1.0, 1e6),
            Param("gradient scale", "per-sample gradients at x*: any, mean zero", 1e-6, 1e6),
            Param("tail", "log-normal spread of per-sample norms (heavy tails)", 1e-3, 10.0),
            Param("draw", "which random gradient set (seed)", 0, 1e6, log=False, integer=True),
        ),
        source="§3.1 (fixed-point analysis of Alg. 2)",
    )


def _fixed_point_ef_ratio(p):
    out = np.empty(len(p["d"]))
    for i in range(out.size):
        rng = np.random.default_rng(int(p["draw"][i]))
        n, d = int(p["N"][i]), int(p["d"][i])
        raw = rng.standard_normal((n, d)) * np.exp(p["tail"][i] * rng.standard_normal((n, 1)))
        grads_ = p["gradient scale"][i] * (raw - raw.mean(axis=0))
        c1 = p["C1"][i]
        c2 = c1 * p["C2/C1"][i]
        clipped = grads_ * np.minimum(
            1.0, c1 / np.maximum(np.linalg.norm(grads_, axis=1, keepdims=True), 1e-300)
        )
        e = -clipped.mean(axis=0)
        # the construction solves E v = mean clip + clip(e, C2) = 0 iff clip(e, C2) = e iff ||e|| <= C2
        out[i] = float(np.linalg.norm(e)) / c2
    return out


def _fixed_point_ef_search(ctx: Context) -> Outcome:
    from verification.search import adversarial_search

    res = adversarial_search(
        fixed_point_ef_domain(),
        _fixed_point_ef_ratio,
        samples=128 if ctx.quick else 2048,
        maxiter=5 if ctx.quick else 40,
        popsize=5 if ctx.quick else 10,
        seed=ctx.seed,
        tol=1e-12,
    )
    details = res.details()
    details["ratio"] = "||e|| / C2 with e = -(1/N) sum clip(g_i, C1): the construction works iff <= 1"
    verdict = Verdict.REFUTED if res.counterexample is not None else Verdict.CONFIRMED
    return Outcome(
        verdict,
        ("counterexample: " if res.counterexample is not None else "confirmed on the searched domain: ")
        + res.summary(),
        "adversarial search over per-sample gradient sets at x* (dimension, N, scales, tails, draws)",
        details,
    )


def _fixed_point_ef_control(ctx: Context) -> Outcome:
    """Negative control: with C2 < C1 the same construction must fail somewhere (the check can fail)."""

    def bad(p):
        r1, r2 = ef_fixed_point_residuals(*p)
        return max(r1, r2) > 1e-9

    found = P.search_counterexample(_ef_strategy(False), bad, max_examples=200, seed=ctx.seed)
    if found is None:
        return Outcome(
            Verdict.INCONCLUSIVE,
            "no failure of the construction found with C2 < C1 (the condition may be unnecessary)",
            "hypothesis search with C2 < C1",
            {"examples": 200},
        )
    grads_, c1, c2 = found
    r1, r2 = ef_fixed_point_residuals(grads_, c1, c2)
    return Outcome(
        Verdict.CONFIRMED,
        f"with C2 < C1 the construction fails (C1={c1:.3g}, C2={c2:.3g}, residual {max(r1, r2):.3g}): "
        "the condition C2 >= C1 is what makes it work",
        "hypothesis search with C2 < C1 (negative control)",
        {"counterexample": {"grads": grads_.tolist(), "C1": c1, "C2": c2, "residuals": [r1, r2]}},
    )


def _fixed_point_ef_run(ctx: Context) -> Outcome:
    """Informative: does noise-free full-batch DiceSGD actually reach x* = 0 on App. B.1?"""
    rows = []
    for c in [0.5, 1.0, 2.0]:
        cp, xi, grads = b1_grads(c)
        out = simulate.dicesgd_1d(
            grads,
            len(xi),
            x0=3.0,
            eta=0.1,
            steps=3000,
            c1=c,
            c2=c,
            sigma1=0.0,
            batch=len(xi),
            seeds=1,
            seed=ctx.seed,
        )
        rows.append(
            {
                "C1=C2": c,
                "x_T": g(out["x"][0, -1]),
                "x_star": 0.0,
                "x_tilde_dpsgd_gc": g(P.b1_clipped_fixed_point(c)),
            }
        )
    ok = all(abs(r["x_T"]) < 1e-4 for r in rows)
    return Outcome(
        Verdict.CONFIRMED if ok else Verdict.INCONCLUSIVE,
        "noise-free full-batch DiceSGD converges to x*=0 on App. B.1 for C1=C2 in {0.5,1,2}"
        if ok
        else "noise-free DiceSGD did not reach x* within 3000 steps on every instance",
        "numpy reference of Alg. 2 (full batch, sigma1=0, eta=0.1, 3000 steps)",
        {"cases": rows, "tolerance": 1e-4},
    )


def _runner_gc(ctx: Context) -> Outcome:
    """The project's DPSGD-GC (torch, via dptheory.runner) on App. B.1 from x* = 0, no noise, full batch."""
    from dptheory import runner

    rows = []
    for c in (1.0,) if ctx.quick else (0.3, 0.5, 1.0, 2.0):
        res = runner.run(
            "dpsgd",
            "dicesgd-b1",
            steps=200 if ctx.quick else 400,
            lr=0.5,
            c1=c,
            noise_multiplier=0.0,
            seeds=1,
            seed=ctx.seed,
            progress=False,
            problem_options={"x0": 0.0},
        )
        x = float(np.asarray(res.runs[0].x).ravel()[0])
        rows.append(
            {"C": c, "runner_final_x": g(x), "exact_x_tilde": g(P.b1_clipped_fixed_point(c)), "x_star": 0.0}
        )
    ok = all(abs(r["runner_final_x"] - r["exact_x_tilde"]) < 1e-6 for r in rows)
    return Outcome(
        Verdict.CONFIRMED if ok else Verdict.INCONCLUSIVE,
        "the project's DPSGD-GC started at x* = 0 settles at the exact clipped fixed point: "
        + ", ".join(f"{r['runner_final_x']} (C={r['C']})" for r in rows)
        if ok
        else "the project's DPSGD-GC does not settle at the computed fixed point",
        "dptheory.runner.run('dpsgd', 'dicesgd-b1', lr=0.5, 400 steps, noise 0, full batch)",
        {"cases": rows, "tolerance": 1e-6},
        reproduce="dptheory run --algo dpsgd --problem dicesgd-b1 --c1 1 --steps 400 --lr 0.5 --json",
    )


def _runner_ef(ctx: Context) -> Outcome:
    """The project's DiceSGD (torch) on App. B.1, C1 = C2, no noise, full batch: does it reach x* = 0?"""
    from dptheory import runner

    res = runner.run(
        "dicesgd",
        "dicesgd-b1",
        steps=3000,
        lr=0.1,
        c1=1.0,
        c2=1.0,
        noise_multiplier=0.0,
        seeds=1,
        seed=ctx.seed,
        progress=False,
        problem_options={"x0": 3.0},
    )
    x = float(np.asarray(res.runs[0].x).ravel()[0])
    ok = abs(x) < 1e-4
    return Outcome(
        Verdict.CONFIRMED if ok else Verdict.INCONCLUSIVE,
        f"the project's DiceSGD (C1 = C2 = 1, no noise) ends at x = {g(x)} (x* = 0; DPSGD-GC's fixed point "
        "is "
        f"{g(P.b1_clipped_fixed_point(1.0))})",
        "dptheory.runner.run('dicesgd', 'dicesgd-b1', lr=0.1, 3000 steps, noise 0, full batch)",
        {"runner_final_x": g(x), "tolerance": 1e-4},
        reproduce=(
            "dptheory run --algo dicesgd --problem dicesgd-b1 --c1 1 --c2 1 --steps 3000 --lr 0.1 --json"
        ),
    )


# =========================================================================== App. B.1


def _b1_formula(ctx: Context) -> Outcome:
    cs = (
        [0.1, 0.5, 1.0, 2.0, 3.3, 10.0]
        if ctx.quick
        else [0.05, 0.1, 0.25, 0.5, 0.9, 1.0, 1.5, 2.0, 3.3, 5.0, 10.0, 50.0]
    )
    rows = []
    for c in cs:
        cp, _ = P.b1_instance(c)
        xt = P.b1_clipped_fixed_point(c)
        rows.append(
            {
                "C": c,
                "C_prime": cp,
                "x_tilde_exact": g(xt),
                "paper_formula": g(cp / (cp + c)),
                "closed_form_C/C'-1": g(c / cp - 1),
            }
        )
    bad = [r for r in rows if abs(r["x_tilde_exact"] - r["paper_formula"]) > 1e-6]
    plots = (
        Plot(
            name="b1_fixed_point",
            title="App. B.1: clipped-SGD stationary point vs the paper's formula",
            xlabel="clipping threshold C",
            ylabel="x~*",
            series=(
                {
                    "label": "exact root of mean clip(grad_i, C) = 0",
                    "x": [r["C"] for r in rows],
                    "y": [r["x_tilde_exact"] for r in rows],
                },
                {
                    "label": "paper: C'/(C'+C)",
                    "x": [r["C"] for r in rows],
                    "y": [r["paper_formula"] for r in rows],
                    "style": "--",
                },
            ),
            hlines=({"label": "x* = 0", "y": 0.0},),
            logx=True,
        ),
    )
    details = {
        "cases": rows,
        "tolerance": 1e-6,
        "root_finding": "bisection on the nondecreasing mean clipped gradient",
    }
    if bad:
        r = bad[0]
        return Outcome(
            Verdict.REFUTED,
            f"C={r['C']}: the exact stationary point of clipped SGD is {r['x_tilde_exact']} "
            f"(= C/C' - 1), not C'/(C'+C) = {r['paper_formula']} ({len(bad)}/{len(rows)} cases differ)",
            "exact root of (1/N) sum clip(grad f(x; xi_i), C) = 0 vs the stated formula",
            details,
            plots,
        )
    return Outcome(
        Verdict.CONFIRMED,
        f"formula matches the exact root on {len(rows)} thresholds",
        "exact root",
        details,
        plots,
    )


def _b1_optimum(ctx: Context) -> Outcome:
    cs = [0.1, 0.5, 1.0, 2.0, 3.3, 10.0]
    rows = [{"C": c, "x_star": g(P.b1_optimum(c))} for c in cs]
    bad = [r for r in rows if abs(r["x_star"]) > 1e-9]
    return Outcome(
        Verdict.REFUTED if bad else Verdict.CONFIRMED,
        "x* = 0 is the stationary point of f on every instance"
        if not bad
        else f"x* != 0 for C={bad[0]['C']}",
        "exact root of the unclipped mean gradient",
        {"cases": rows, "tolerance": 1e-9},
    )


def _b1_magnitude(ctx: Context) -> Outcome:
    """Alternative reading: only the size of the bias, |x~*| >= 1/2, is asserted."""
    cs = [0.1, 0.5, 1.0, 2.0, 3.3, 10.0, 50.0]
    rows = [{"C": c, "abs_x_tilde": g(abs(P.b1_clipped_fixed_point(c)))} for c in cs]
    bad = [r for r in rows if r["abs_x_tilde"] < 0.5 - 1e-9]
    if bad:
        r = bad[0]
        return Outcome(
            Verdict.REFUTED,
            f"even the size of the bias is below 1/2 for C={r['C']}: |x~*| = {r['abs_x_tilde']} "
            f"({len(bad)}/{len(rows)} thresholds); the bias |x~*| = 1 - C/C' shrinks like 1/C'",
            "exact root, |x~*| vs 1/2",
            {"cases": rows},
        )
    return Outcome(
        Verdict.CONFIRMED, f"|x~*| >= 1/2 on {len(rows)} thresholds", "exact root", {"cases": rows}
    )


CLAIMS = [
    Claim(
        id="dicesgd.fixed-point-gc",
        basis="definition",
        notes=(
            "Basis: definition / algebra (an existential statement proved by a witness). At a fixed point of "
            "the expected update, E[x] = E[x] - (eta/N) sum_i clip(grad f(x; xi_i), C) gives (1/N) sum_i "
            "clip(.) = 0; the witnesses are instances where that root, computed to 1e-12 by bisection, has "
            "grad f != 0."
        ),
        paper=PAPER,
        location="§2.2 (fixed-point analysis)",
        statement=(
            "DPSGD-GC's fixed point solves (1/N) sum_i clip(grad f(x; xi_i), C) = 0, which in general does "
            "not imply grad f(x) = 0."
        ),
        formula=(
            "E[x] = E[x] - (eta/N) sum_i clip(grad f(x; xi_i), C)  =>  (1/N) sum_i clip(.) = 0  (not => "
            "grad f(x) = 0)"
        ),
        assumptions=("expectation over minibatch and noise",),
        existential=True,
        checks=(
            Check("clipped-fixed-point", "empirical", _fixed_point_gc, can_refute=False),
            Check("project-runner", "empirical", _runner_gc, deciding=False),
        ),
    ),
    Claim(
        id="dicesgd.fixed-point-ef",
        basis="definition",
        notes=(
            "Basis: definition / algebra. At x with grad f(x) = 0 take e = -(1/N) sum clip(g_i, C1). Then "
            "||e|| <= (1/N) sum ||clip(g_i, C1)|| <= C1 <= C2, so clip(e, C2) = e and the update v = (1/N) "
            "sum clip(g_i, C1) + clip(e, C2) = 0; x stays put, and e' = e + (1/N) sum g_i - v = e + grad "
            "f(x) = e. The construction check and the adversarial search (ratio ||e||/C2 <= C1/C2 <= 1) "
            "replay this; the negative control C2 < C1 shows the construction can fail outside the "
            "hypothesis."
        ),
        paper=PAPER,
        location="§3.1 (fixed-point analysis of Alg. 2)",
        statement=(
            "When C2 >= C1, DiceSGD has a fixed point (x, e) with grad f(x) = 0, namely e = -(1/N) sum "
            "clip(grad f(x; xi_i), C1)."
        ),
        formula="(1/N) sum clip(g_i, C1) = -clip(e, C2)  and  grad f(x) = 0  solvable when C2 >= C1",
        assumptions=("C2 >= C1",),
        domain=fixed_point_ef_domain(),
        checks=(
            Check("construction", "property", _fixed_point_ef),
            Check("adversarial-search", "property", _fixed_point_ef_search),
            Check("negative-control-C2<C1", "property", _fixed_point_ef_control, deciding=False),
            Check(
                "noise-free-run",
                "empirical",
                _fixed_point_ef_run,
                deciding=False,
                reading="stronger than the claim: convergence",
            ),
            Check(
                "project-runner", "empirical", _runner_ef, deciding=False, reading="stronger than the claim"
            ),
        ),
    ),
    Claim(
        id="dicesgd.example-b1",
        paper=PAPER,
        location="App. B.1",
        statement=(
            "On the Huber-like instance with C' = ceil(C)+1, C' samples at -1 and one at C', the stationary "
            "point of "
            "clipped SGD is x~* = C'/(C'+C) >= 1/2 while x* = 0."
        ),
        formula="x~* = C'/(C'+C) >= 1/2,  x* = 0",
        assumptions=("any fixed C > 0",),
        checks=(
            Check(
                "stated-formula",
                "property",
                _b1_formula,
                reading="x~* is the signed root, equal to C'/(C'+C)",
            ),
            Check("x-star", "property", _b1_optimum),
            Check(
                "bias-size>=1/2",
                "property",
                _b1_magnitude,
                deciding=False,
                reading="only |x~*| >= 1/2 is asserted",
            ),
        ),
        notes=(
            "The per-sample gradient of the rendered loss is clip(x - xi, -C', C'); the clipped stationary "
            "point is the "
            "root of the nondecreasing mean clipped gradient, found by bisection."
        ),
    ),
]
