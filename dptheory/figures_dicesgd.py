"""DiceSGD figures: certified/audit gap over a grid, and bias against certified noise.

* :func:`certified_vs_audit_grid` (also used by ``benchmarks/dicesgd_grid.py``): at the DiceSGD
  defaults (N = 50000, B = 1000, 3 epochs, C1 = 1), for each (G/C1, C2/C1) the certified z for
  (eps, delta) = (2, 1e-5) from :func:`dptheory.api.calibrate` (flat clipping, ``grad_bound=G``),
  the regime that gave it and P(E^c), then the audit's eps_lower at that z (the 1-D lattice
  instance of ``accounting/audit/dicesgd.py``, Monte Carlo, confidence 0.99) and the ratio
  eps_certified / eps_lower (the certified eps at the calibrated z is the target, 2).
* :func:`gap_heatmap_figure`: that ratio as a heat-map.
* :func:`tradeoff_figure`: stationary-point bias against the *certified*
  noise std for (eps, delta) = (2, 1e-5) at the DiceSGD defaults, for DPSGD-GC over C and
  DiceSGD over (C1, C2, R) (residual clip R, C2 from ``c2="auto"``) and over (C1, C2) with a known
  gradient bound G. Noise is compared as the std of the Gaussian added to the *sum* of the clipped
  gradients, ``sigma1 B = z C1`` (DiceSGD) and ``z C`` (DP-SGD): the same physical quantity for both,
  since both divide by the same B. DPSGD-GC's bias is the distance of the exact root of
  ``sum_i clip(g_i(x), C)`` from x*; DiceSGD's is *measured*: ``||x_T - x*||`` after a noise-free,
  full-batch run (so the figure does not assume where DiceSGD converges).

matplotlib is imported lazily (``import dptheory`` stays free of it).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

EPS, DELTA = 2.0, 1e-5
GRID_G = (1.25, 1.5, 2.0, 3.0, 11.0)
GRID_C2 = (0.5, 1.0, 2.0)
QUICK_GRID_G = (1.5, 3.0)
QUICK_GRID_C2 = (1.0, 2.0)


def certified_vs_audit_grid(
    g_over_c1=GRID_G,
    c2_over_c1=GRID_C2,
    *,
    samples: int = 100_000,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """One row per (G/C1, C2/C1): certified z, regime, P(E^c), audit eps_lower at z, ratio.

    ``eps_lower`` is the largest of three lower bounds at the certified z: the 1-D lattice audit
    (``eps_lower_lattice``, Monte Carlo, confidence 0.99), the stored-residual audit
    (``eps_lower_storage``, deterministic; 0 where the others cannot saturate the state) and the
    orthogonal storage audit (``eps_lower_orthogonal``, Monte Carlo, confidence 0.99; 0 where the
    others cannot refill more than C2 per step); the two Monte Carlo bounds hold together with
    probability >= 0.98. ``audit`` names the one used and ``ratio_lattice`` is the ratio with the
    lattice audit alone.
    """
    from accounting.algorithms.registry import get_algorithm
    from accounting.audit import run_audit
    from dptheory import api

    dice = get_algorithm("dicesgd")
    rows = []
    for g in g_over_c1:
        for c2 in c2_over_c1:
            if progress:
                progress(f"grid: G/C1 = {g:g}, C2/C1 = {c2:g}")
            rep = api.calibrate(defaults="paper", eps=EPS, delta=DELTA, algo="dicesgd", grad_bound=g, c2=c2)
            params = api.build_params(
                algo="dicesgd", delta=DELTA, noise_multiplier=rep.noise_multiplier, grad_bound=g, c2=c2
            )
            p, _, _ = dice.resolve(params)
            aud = run_audit(p, samples=samples, confidence=0.99, seed=seed)
            d = rep.details or {}
            lattice = float(aud.epsilon_lower)
            stored = p.grad_bound is not None and p.grad_bound > p.c1
            storage = _storage_lower(p) if stored else 0.0
            ortho = _orthogonal_lower(p, samples, seed) if stored else 0.0
            lower = max(lattice, storage, ortho)
            eps_c = float(rep.epsilon)
            rows.append(
                dict(
                    g_over_c1=g,
                    c2_over_c1=c2,
                    z=float(rep.noise_multiplier),
                    regime=d.get("regime"),
                    p_fail=d.get("p_fail"),
                    eps_certified=eps_c,
                    eps_lower=lower,
                    ratio=eps_c / lower if lower > 0 else math.inf,
                    # which audit gave eps_lower, and each one's number
                    audit=max((lattice, "lattice"), (storage, "storage"), (ortho, "orthogonal"))[1],
                    eps_lower_lattice=lattice,
                    eps_lower_storage=storage,
                    eps_lower_orthogonal=ortho,
                    ratio_lattice=eps_c / lattice if lattice > 0 else math.inf,
                )
            )
    return rows


def _instance(p) -> dict:
    """The resolved parameters both storage audits take, as plain numbers."""
    return dict(
        sample_rate=float(p.sample_rate),
        noise_multiplier=float(p.noise_multiplier),
        steps=int(p.steps),
        delta=float(p.delta),
        c1=float(p.c1),
        c2=float(p.c2),
        batch_size=float(p.batch_size),
        grad_bound=float(p.grad_bound),
        dataset_size=int(p.dataset_size),
    )


def _storage_lower(p) -> float:
    """The stored-residual audit (:mod:`accounting.audit.dicesgd_storage`) at the resolved parameters."""
    from accounting.audit.dicesgd_storage import dicesgd_storage_epsilon_lower

    eps, _ = dicesgd_storage_epsilon_lower(
        **_instance(p),
    )
    return eps


def _orthogonal_lower(p, samples: int, seed: int) -> float:
    """The orthogonal storage audit (:mod:`accounting.audit.dicesgd_orthogonal`), confidence 0.99,
    certifying on ``40 samples`` fresh draws (more draws let it certify a deeper threshold)."""
    from accounting.audit.dicesgd_orthogonal import dicesgd_orthogonal_epsilon_lower

    eps, _ = dicesgd_orthogonal_epsilon_lower(
        **_instance(p),
        samples=max(10_000, 40 * int(samples)),
        pilot_samples=max(2_000, min(20_000, int(samples) // 5)),
        confidence=0.99,
        seed=seed,
    )
    return eps


def gap_heatmap_figure(
    path: str, *, quick: bool = False, progress: Callable[[str], None] | None = None
) -> dict:
    """Heat-map of certified/audit eps over G/C1 x C2/C1 (quick: 2 x 2 cells, 5000 samples)."""
    from dptheory.figures import pyplot
    from dptheory.runner import save_figure_atomic

    gs, c2s = (QUICK_GRID_G, QUICK_GRID_C2) if quick else (GRID_G, GRID_C2)
    samples = 5_000 if quick else 100_000
    rows = certified_vs_audit_grid(gs, c2s, samples=samples, progress=progress)
    ratio = np.array([[r["ratio"] for r in rows if r["c2_over_c1"] == c2] for c2 in c2s])
    plt = pyplot()
    from matplotlib.colors import LogNorm

    fig, ax = plt.subplots(figsize=(7.5, 3.2 + 0.5 * len(c2s)))
    finite = ratio[np.isfinite(ratio)]
    vmax = max(10.0, float(finite.max()) if finite.size else 10.0)
    im = ax.imshow(ratio, cmap="RdYlGn_r", norm=LogNorm(vmin=1.0, vmax=vmax), aspect="auto", origin="lower")
    for i, c2 in enumerate(c2s):
        for j, g in enumerate(gs):
            r = next(x for x in rows if x["g_over_c1"] == g and x["c2_over_c1"] == c2)
            ax.text(
                j,
                i,
                f"{r['ratio']:.3g}\n{r['regime']}\nz = {r['z']:.4g}",
                ha="center",
                va="center",
                fontsize=7.5,
            )
    ax.set_xticks(range(len(gs)), [f"{g:g}" for g in gs])
    ax.set_yticks(range(len(c2s)), [f"{c:g}" for c in c2s])
    ax.set_xlabel("G / C1  (per-example gradient bound; residual rho = G - C1)")
    ax.set_ylabel("C2 / C1")
    fig.colorbar(im, ax=ax, label="certified eps / audit eps_lower at the certified z")
    ax.set_title(
        f"DiceSGD: certified (eps = {EPS:g}) over audited eps, N = 50000, B = 1000, 3 epochs\n"
        f"audit: max(1-D lattice, {samples} trajectories per neighbour, 99% confidence; stored residuals)",
        fontsize=9,
    )
    fig.tight_layout()
    save_figure_atomic(fig, path, dpi=120)
    plt.close(fig)
    return {"rows": rows, "samples": samples}


# -- bias against certified noise ----------------------------------------------------------------

#: DiceSGD (C1, R) pairs with the residual clip, the same on every problem (their certified z does
#: not depend on the problem, so each is calibrated once).
DICE_RESIDUAL = ((0.25, 0.25), (0.5, 0.5), (1.0, 0.5), (0.25, 1.0))

#: per problem: options, DP-SGD thresholds C, DiceSGD C1 values with only the instance's gradient
#: bound G known (C2 = C1 and C2 = max(C1, 1.25 (G - C1))), lr and steps of the noise-free runs.
TRADEOFF_PROBLEMS = {
    "dicesgd-b1": dict(
        options={"c": 1.0},
        cs=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5),
        dice_g=(0.5, 1.0),
        lr=0.5,
        steps=400,
    ),
    "logreg-nonconvex": dict(
        options={},
        cs=(0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.25),
        dice_g=(0.25, 0.5),
        lr=1.0,
        steps=300,
    ),
}


def _bias(algo: str, problem: str, opts: dict, lr: float, steps: int, **kw) -> float:
    """||x_T - x*|| after a noise-free, full-batch run: the algorithm's stationary-point bias."""
    from dptheory.runner import run

    r = run(algo, problem, problem_options=opts, lr=lr, steps=steps, sample_rate=1.0, device="cpu", **kw)
    return float(r.summary()["dist_to_opt"]["mean"])


def tradeoff_points(
    problem: str, *, quick: bool = False, progress: Callable[[str], None] | None = None, cache=None
) -> dict:
    """Bias and certified noise (sum scale, ``z C``) of each configuration on ``problem``.

    The certified z is calibrated at the DiceSGD defaults (N = 50000, B = 1000, 3 epochs) for
    (eps, delta) = (2, 1e-5); it depends on (C1, C2, R, G) only, so ``cache`` (a dict) can be
    shared between problems.
    """
    from dptheory import api
    from dptheory.problems import get_problem

    spec = TRADEOFF_PROBLEMS[problem]
    cache = {} if cache is None else cache
    opts, lr, steps = spec["options"], spec["lr"], spec["steps"]
    g_bound = float(get_problem(problem, **opts).constants["G"])
    cs = spec["cs"][::3] if quick else spec["cs"]
    dice_r = DICE_RESIDUAL[:2] if quick else DICE_RESIDUAL
    dice_g = spec["dice_g"][:1] if quick else spec["dice_g"]
    steps = steps // 4 if quick else steps

    def certified(**kw) -> tuple[float, str]:
        key = tuple(sorted(kw.items()))
        if key not in cache:
            rep = api.calibrate(defaults="paper", eps=EPS, delta=DELTA, **kw)
            cache[key] = (float(rep.noise_multiplier), (rep.details or {}).get("regime", "dp-sgd"))
        return cache[key]

    z_dp, _ = certified(algo="dpsgd")
    out: dict = {"G": g_bound, "z_dpsgd": z_dp, "dpsgd": [], "dicesgd_r": [], "dicesgd_g": []}
    prob = get_problem(problem, **opts)
    for c in cs:
        if progress:
            progress(f"trade-off {problem}: DPSGD-GC C = {c:g}")
        # DPSGD-GC's stationary point is the exact root of sum_i clip(g_i(x), C) (root finding; the
        # bias figure checks it against runs), which is cheaper and more accurate than a long run.
        fp = prob.clipped_fixed_point("dpsgd", c1=c)
        bias = float(np.linalg.norm(np.asarray(fp.point) - prob.x_star))
        out["dpsgd"].append(dict(C=c, bias=bias, noise=z_dp * c))
    for c1, r in dice_r:
        if progress:
            progress(f"trade-off {problem}: DiceSGD C1 = {c1:g}, R = {r:g}")
        z, regime = certified(algo="dicesgd", c1=c1, c2="auto", residual_clip=r)
        p = api.build_params(algo="dicesgd", delta=DELTA, noise_multiplier=z, c1=c1, residual_clip=r)
        from accounting.algorithms.dicesgd import auto_c2_flush
        from accounting.algorithms.registry import get_algorithm

        c2 = auto_c2_flush(get_algorithm("dicesgd").resolve(p)[0])["c2"]
        b = _bias("dicesgd", problem, opts, lr, steps, c1=c1, c2=c2, residual_clip=r)
        out["dicesgd_r"].append(dict(C1=c1, R=r, C2=c2, bias=b, noise=z * c1, z=z, regime=regime))
    for c1 in dice_g:
        for c2 in (c1, max(c1, 1.25 * (g_bound - c1))):
            if progress:
                progress(f"trade-off {problem}: DiceSGD C1 = {c1:g}, C2 = {c2:.3g}, G = {g_bound:.3g}")
            z, regime = certified(algo="dicesgd", c1=c1, c2=c2, grad_bound=g_bound)
            b = _bias("dicesgd", problem, opts, lr, steps, c1=c1, c2=c2)
            out["dicesgd_g"].append(dict(C1=c1, C2=c2, bias=b, noise=z * c1, z=z, regime=regime))
    return out


def tradeoff_figure(path: str, *, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Stationary-point bias against certified noise at eps = 2: DPSGD-GC vs DiceSGD."""
    problems = ("dicesgd-b1",) if quick else tuple(TRADEOFF_PROBLEMS)
    cache: dict = {}
    data = {name: tradeoff_points(name, quick=quick, progress=progress, cache=cache) for name in problems}
    draw_tradeoff(data, path)
    return data


def draw_tradeoff(data: dict, path: str) -> None:
    """Draw :func:`tradeoff_points`' output (one panel per problem) into ``path``."""
    from dptheory.figures import pyplot
    from dptheory.runner import save_figure_atomic

    plt = pyplot()
    n = len(data)
    fig, axes = plt.subplots(1, n, figsize=(7.2 * n, 5.6), squeeze=False)
    for ax, (name, d) in zip(axes[0], data.items(), strict=True):
        dp = d["dpsgd"]
        ax.plot(
            [x["noise"] for x in dp],
            [x["bias"] for x in dp],
            "o-",
            color="tab:blue",
            mfc="none",
            ms=10,
            label=f"DPSGD-GC over C (z = {d['z_dpsgd']:.4g}; labels: C)",
        )
        last = None
        for x in dp:
            if last is None or abs(x["bias"] - last) > 0.02 * max(1e-12, dp[0]["bias"]):
                ax.annotate(
                    f"{x['C']:g}",
                    (x["noise"], x["bias"]),
                    fontsize=7,
                    xytext=(-4, 7),
                    textcoords="offset points",
                )
            last = x["bias"]
        dr = d["dicesgd_r"]
        ax.plot(
            [x["noise"] for x in dr],
            [x["bias"] for x in dr],
            "s",
            color="tab:green",
            ms=5,
            label="DiceSGD + residual clip R, C2 auto (labels: C1+R)",
        )
        top = max(x["bias"] for x in dp)
        for x in dr:
            if x["bias"] < 1e-3 * top:  # on the flat zero-bias part: labels would pile up
                continue
            ax.annotate(
                f"{x['C1']:g}+{x['R']:g}",
                (x["noise"], x["bias"]),
                fontsize=7,
                color="tab:green",
                xytext=(5, -9),
                textcoords="offset points",
            )
        lines = []
        for x in d["dicesgd_g"]:
            flush = x["regime"] == "flush"
            ax.plot(
                x["noise"], x["bias"], "^" if flush else "v", color="tab:purple" if flush else "tab:red", ms=8
            )
            lines.append(
                f"C1={x['C1']:g}, C2={x['C2']:.3g}: z C1 = {x['noise']:.3g}, "
                f"bias {x['bias']:.2g} ({x['regime']})"
            )
        ax.plot([], [], "^", color="tab:purple", label=f"DiceSGD, no R, G = {d['G']:.3g} known: flush regime")
        ax.plot([], [], "v", color="tab:red", label=f"DiceSGD, no R, G = {d['G']:.3g} known: E fails")
        ax.text(
            0.36,
            0.66,
            "DiceSGD without R, G known:\n" + "\n".join(lines),
            transform=ax.transAxes,
            fontsize=6.5,
            va="top",
            bbox=dict(boxstyle="round", fc="white", ec="0.7"),
        )
        ax.set_xscale("log")
        ax.set_ylim(bottom=-0.12 * max(x["bias"] for x in dp))
        ax.set_xlabel("certified noise std on the sum of clipped gradients (z C), eps = 2, delta = 1e-5")
        ax.set_ylabel("stationary-point bias ||x - x*|| (no noise, full batch)")
        ax.set_title(f"{name} (G = {d['G']:.3g}); privacy at N = 50000, B = 1000, 3 epochs", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(
        "Bias vs certified noise: DiceSGD's points lie on DPSGD-GC's curve\n"
        "(at C = C1 + rho) or far to its right",
        fontsize=11,
    )
    fig.tight_layout()
    save_figure_atomic(fig, path, dpi=120)
    plt.close(fig)
