"""Clip21-SGD2M paper: two invariants of Algorithm 3 that the privacy and the proofs rest on.

* ``clip21.message-bound`` -- App. F's premise (and docs/algorithms.md): what a client sends has
  norm at most tau before noise, whatever its local state. Corollary 1's per-round Gaussian mechanism
  needs exactly this; it is checked on the project's optimizer (message minus its own noise draw)
  under an adversarial search over gradient scales far above tau.
* ``clip21.eq16`` -- App. A, eq. (16): "the following relation between g and the g_i", proved by
  induction from the initialisation. The formula is lost (inconclusive); the restored equations imply
  g^t - mean_i g_i^t = (beta_hat/n) sum_{s<=t} sum_i omega_i^s, checked as an informative reading.
"""

from __future__ import annotations

import numpy as np

from verification import simulate
from verification.claim import Check, Claim, Context, Outcome, Verdict
from verification.claims._util import g
from verification.search import Domain, Param, adversarial_search

PAPER = "clip21"


def message_bound_domain() -> Domain:
    return Domain(
        params=(
            Param("tau", "tau > 0", 1e-6, 1e6),
            Param("gradient scale / tau", "any gradients (no bound assumed)", 1e-6, 1e12),
            Param("beta", "(0, 1]", 1e-3, 1.0),
            Param("beta_hat", "(0, 1]", 1e-3, 1.0),
        ),
        fixed={"problem": "4 heterogeneous quadratics in R^6 scaled to the gradient scale", "rounds": "30"},
        source="App. F; docs/algorithms.md",
    )


def message_norm_ratio(tau: float, scale: float, beta: float, beta_hat: float, steps: int = 8) -> float:
    """max over rounds and clients of ||message - own noise|| / tau for dptheory's optimizer."""
    import torch

    from dptheory import optim
    from dptheory.problems import get_problem

    prob = get_problem("stochastic-quadratic", d=4, clients=3, L=float(scale) * float(tau))
    opt = optim.FederatedClipping(
        prob.x0,
        prob.loss_fn,
        prob.client_data(),
        rule="clip21-2m",
        lr=0.1 / (float(scale) * float(tau)),
        tau=float(tau),
        beta=float(beta),
        beta_hat=float(beta_hat),
        noise_multiplier=1.0,
        seed=0,
        device="cpu",
    )
    worst = 0.0
    for _ in range(steps):
        x = opt.server.pre_round()
        std = opt.noise_std(opt.t)
        msgs = [c.message(x, std) for c in opt.clients]
        for c, m in zip(opt.clients, msgs, strict=True):
            worst = max(worst, float(torch.linalg.vector_norm(m - c.last_noise)) / float(tau))
        opt.server.aggregate(msgs)
        opt.t += 1
    return worst


def message_norm_ratio_readme(
    tau: float, scale: float, beta: float, beta_hat: float, steps: int = 30
) -> float:
    """The same ratio for the restored equations in numpy (heterogeneous quadratics, n = 4, d = 6)."""
    rng = np.random.default_rng(0)
    L = float(scale) * float(tau)
    mats = [L * np.diag(rng.uniform(0.5, 1.0, 6)) for _ in range(4)]
    cents = rng.normal(scale=5.0, size=(4, 6))
    x = np.zeros(6)
    v, gi, gs, worst = np.zeros((4, 6)), np.zeros((4, 6)), np.zeros(6), 0.0
    for _ in range(steps):
        x = x - (0.1 / L) * gs
        v = (1 - beta) * v + beta * np.stack([a @ (x - b) for a, b in zip(mats, cents, strict=True)])
        c = simulate.clip_vec(v - gi, tau)
        worst = max(worst, float(np.linalg.norm(c, axis=1).max()) / float(tau))
        gi = gi + beta_hat * c
        gs = gs + beta_hat * (c + rng.normal(scale=float(tau), size=(4, 6))).mean(axis=0)
    return worst


def _message_torch(ctx: Context) -> Outcome:
    probes = [(1e-6, 1e12, 1e-3, 1e-3), (1e6, 1e-6, 1.0, 1.0), (1.0, 1e9, 0.5, 0.01)]
    if not ctx.quick:
        probes += [(1e-3, 1e6, 1.0, 1e-3), (1e3, 1e3, 1e-3, 1.0), (1e-6, 1.0, 0.1, 0.5)]
    rows = [
        {"tau": t, "gradient/tau": s, "beta": b, "beta_hat": bh, "ratio": message_norm_ratio(t, s, b, bh)}
        for t, s, b, bh in probes
    ]
    worst = max(r["ratio"] for r in rows)
    return Outcome(
        Verdict.CONFIRMED if worst <= 1 + 1e-9 else Verdict.REFUTED,
        f"dptheory.optim's messages minus their own noise stay within tau on {len(rows)} extreme settings "
        f"(max ||c||/tau = {worst:.12g})",
        "torch FederatedClipping, 8 rounds, message minus the client's own noise draw",
        {"rows": rows},
    )


def _message_search(ctx: Context) -> Outcome:
    def ratio(p):
        keys = ("tau", "gradient scale / tau", "beta", "beta_hat")
        return np.array([message_norm_ratio_readme(*(p[k][i] for k in keys)) for i in range(len(p["tau"]))])

    res = adversarial_search(
        message_bound_domain(),
        ratio,
        samples=64 if ctx.quick else 1024,
        maxiter=2 if ctx.quick else 30,
        popsize=5,
        seed=ctx.seed,
        tol=1e-9,
    )
    details = res.details()
    details["ratio"] = "max ||c_i^t|| / tau over 30 rounds and 4 clients (restored equations, numpy)"
    if res.counterexample is not None:
        return Outcome(
            Verdict.REFUTED,
            f"a message exceeds tau by {res.max_ratio:.6g}x at {res.counterexample}",
            "adversarial search on the restored equations",
            details,
        )
    return Outcome(
        Verdict.CONFIRMED,
        "confirmed on the searched domain: " + res.summary(),
        "adversarial search on the restored equations (numpy, DP noise on)",
        details,
    )


def eq16_gap(n: int, d: int, beta: float, beta_hat: float, tau: float, steps: int, seed: int = 0) -> float:
    """max_t ||(g^t - mean_i g_i^t) - (beta_hat/n) sum_{s<=t} sum_i omega_i^s|| / (1e-9 (1 + ||g^t||))."""
    rng = np.random.default_rng(seed)
    mats = [np.diag(rng.uniform(0.5, 2.0, d)) for _ in range(n)]
    cents = rng.normal(scale=5.0, size=(n, d))
    x = rng.normal(size=d)
    v, gi, gs, acc = np.zeros((n, d)), np.zeros((n, d)), np.zeros(d), np.zeros(d)
    worst = 0.0
    for _ in range(steps):
        x = x - 0.1 * gs
        v = (1 - beta) * v + beta * np.stack([a @ (x - b) for a, b in zip(mats, cents, strict=True)])
        c = simulate.clip_vec(v - gi, tau)
        omega = rng.normal(size=(n, d))
        gi = gi + beta_hat * c
        gs = gs + beta_hat * (c + omega).mean(axis=0)
        acc = acc + beta_hat * omega.sum(axis=0) / n
        gap = gs - gi.mean(axis=0) - acc
        worst = max(worst, float(np.linalg.norm(gap)) / (1e-9 * (1 + float(np.linalg.norm(gs)))))
    return worst


def _eq16_lost(ctx: Context) -> Outcome:
    return Outcome(
        Verdict.INCONCLUSIVE,
        "App. A, eq. (16): the relation between g and the g_i is lost in the rendering; only its proof's "
        "words survive (true at t = 0 by the initialisation, then by induction)",
        "(none: lost text)",
        {
            "surviving_text": "we define an average of as an average of as and an average of as . Thus, we "
            "have the following relation between and (16) Indeed, it is true at iteration by the "
            "initialization.",
            "reason": "statement lost in the rendering",
        },
    )


def _eq16_readme(ctx: Context) -> Outcome:
    rows = [
        {
            "n": n,
            "d": d,
            "beta": b,
            "beta_hat": bh,
            "tau": t,
            "ratio": g(eq16_gap(n, d, b, bh, t, 50, ctx.seed)),
        }
        for n, d, b, bh, t in ((1, 1, 1.0, 1.0, 0.1), (5, 3, 0.3, 0.7, 1.0), (20, 10, 0.05, 0.01, 1e-3))
    ]
    worst = max(r["ratio"] for r in rows)
    return Outcome(
        Verdict.CONFIRMED if worst <= 1 else Verdict.REFUTED,
        f"the restored equations keep g^t = mean_i g_i^t + (beta_hat/n) sum of all noise so far (worst "
        f"deviation {worst:.3g}x the 1e-9 allowance over {len(rows)} settings, 50 rounds each)",
        "numpy run of the restored equations with DP noise",
        {"rows": rows},
    )


CLAIMS = [
    Claim(
        id="clip21.message-bound",
        basis="definition",
        notes=(
            "Basis: definition. ||clip_tau(x)|| = min{1, tau/||x||} ||x|| = min{||x||, tau} <= tau for every "
            "x, so the bound holds by the definition of clip_tau whatever the state; the checks confirm that "
            "the code clips, they could not refute the formula."
        ),
        paper=PAPER,
        location="App. F (proof of Cor. 1: each step is a Gaussian mechanism); docs/algorithms.md",
        statement="What each client sends has norm at most tau before noise, whatever its data and local "
        "state.",
        formula="||c_i^t|| = ||clip_tau(v_i^t - g_i^{t-1})|| <= tau for every t, i",
        assumptions=("no bound on the gradients",),
        domain=message_bound_domain(),
        checks=(
            Check("adversarial-search", "privacy", _message_search),
            Check("project-optimizer", "privacy", _message_torch),
        ),
    ),
    Claim(
        id="clip21.eq16",
        paper=PAPER,
        location="App. A, eq. (16)",
        statement="A relation (16) between the server state g and the clients' states g_i, kept by "
        "induction.",
        formula="(lost in the rendering)",
        assumptions=(),
        checks=(
            Check("statement-lost", "empirical", _eq16_lost),
            Check(
                "readme-invariant",
                "property",
                _eq16_readme,
                deciding=False,
                reading="restored equations: g^t - mean g_i^t = (beta_hat/n) sum of the noise so far",
            ),
        ),
    ),
]
