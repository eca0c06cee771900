"""``dptheory figures``: regenerate the README's pictures from the code, into ``figures/``.

* ``dicesgd_b1_bias.png``: stationary-point bias |x_T - x*| against the clipping threshold C on
  ``dicesgd-b1`` for DPSGD-GC and DiceSGD (C1 = C2 = C), next to the exact root of the clipped
  fixed-point equation and the value the paper states in App. B.1; right: trajectories at C = 1
  with and without noise.
* ``clip21_methods.png``: Clip-GD, Clip21-GD and Clip21-SGD2M on ``clip21-example1`` (full
  gradients) and on ``stochastic-quadratic`` (one local sample per client and round).
* ``epsilon_schedules.png``: epsilon against steps for the constant, inv-k and inv-sqrt-k noise
  schedules, from :func:`dptheory.api.epsilon` (D2P-SGD: no projection, so certified = claimed).
* ``dicesgd_gap_heatmap.png`` and ``dicesgd_tradeoff.png``: DiceSGD's certified/audit epsilon
  over G/C1 x C2/C1, and stationary-point bias against certified noise at eps = 2 for DPSGD-GC
  and DiceSGD (:mod:`dptheory.figures_dicesgd`).

Every PNG is written atomically (temporary file + rename). ``quick=True`` uses fewer points
and steps (for smoke tests); the committed figures use the defaults.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

FIGURES = (
    "dicesgd_b1_bias.png",
    "clip21_methods.png",
    "epsilon_schedules.png",
    "dicesgd_gap_heatmap.png",
    "dicesgd_tradeoff.png",
)
EPS_CAP = 1e3


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend, imported on first use.

    Shared by the figure modules so that importing them never loads matplotlib or opens a display.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bias_figure(path: str, *, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Panel (a): clipping bias on the DiceSGD App. B.1 instance.

    Left: |x_T - x*| after ``steps`` noise-free full-batch steps for each C, over the exact root of
    the clipped fixed-point equation (root finding) and the paper's stated x~ = C'/(C'+C).
    Right: trajectories at C = 1 without noise and with noise multiplier 0.5.
    """
    from dptheory.problems import get_problem
    from dptheory.runner import run, save_figure_atomic

    cs = (
        [0.25, 0.5, 1.0, 2.0, 4.0]
        if quick
        else [0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
    )
    steps = 60 if quick else 300
    out: dict = {"C": cs, "dpsgd": [], "dicesgd": [], "exact_root": [], "paper_claimed": []}
    for c in cs:
        if progress:
            progress(f"bias: C = {c}")
        for algo in ("dpsgd", "dicesgd"):
            r = run(algo, "dicesgd-b1", c1=c, lr=0.5, steps=steps, device="cpu")
            out[algo].append(r.summary()["dist_to_opt"]["mean"])
        prob = get_problem("dicesgd-b1", c=c)
        out["exact_root"].append(abs(float(prob.clipped_fixed_point("dpsgd", c1=c).point[0])))
        out["paper_claimed"].append(prob.notes["paper_claimed_fixed_point"])
    plt = pyplot()
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    ax = axes[0]
    cfine = np.geomspace(min(cs), max(cs), 2000)
    cpf = np.ceil(cfine) + 1
    ax.plot(cfine, (cpf - cfine) / cpf, color="0.55", lw=1, label="exact clipped fixed point: |C/C' - 1|")
    ax.plot(
        cfine, cpf / (cpf + cfine), color="tab:red", ls="--", lw=1, label="paper App. B.1: x~ = C'/(C'+C)"
    )
    ax.plot(cs, out["exact_root"], "x", color="k", ms=7, label="root of sum_i clip(g_i(x), C) (brentq)")
    ax.plot(cs, out["dpsgd"], "o", mfc="none", color="tab:blue", ms=9, label=f"DPSGD-GC after {steps} steps")
    ax.plot(cs, out["dicesgd"], "s", color="tab:green", label=f"DiceSGD (C2 = C1) after {steps} steps")
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator([0.1, 0.25, 0.5, 1, 2, 4, 10]))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("clipping threshold C (= C1);  C' = ceil(C) + 1")
    ax.set_ylabel("|x - x*|   (x* = 0)")
    ax.set_title("bias vs C: no noise, full batch, lr 0.5", fontsize=10)
    ax.legend(fontsize=7.5, loc="upper right")
    ax.grid(alpha=0.3)
    # right: trajectories at C = 1
    ax = axes[1]
    tsteps = 80 if quick else 400
    for algo, color, name in (("dpsgd", "tab:blue", "DPSGD-GC"), ("dicesgd", "tab:green", "DiceSGD")):
        r = run(algo, "dicesgd-b1", c1=1.0, lr=0.1, steps=tsteps, device="cpu")
        tr = r.runs[0].trajectory
        ax.plot(tr["step"], tr["x"], color=color, lw=2, label=f"{name}, no noise")
        rn = run(
            algo, "dicesgd-b1", c1=1.0, lr=0.1, steps=tsteps, noise_multiplier=0.5, seeds=3, device="cpu"
        )
        for k, sr in enumerate(rn.runs):
            ax.plot(
                sr.trajectory["step"],
                sr.trajectory["x"],
                color=color,
                lw=0.6,
                alpha=0.6,
                label=f"{name}, z = 0.5 (3 seeds)" if k == 0 else None,
            )
    prob = get_problem("dicesgd-b1", c=1.0)
    ax.axhline(0.0, color="k", ls="--", lw=1, label="x* = 0")
    ax.axhline(
        prob.clipped_fixed_point("dpsgd", c1=1.0).point[0],
        color="0.4",
        ls=":",
        lw=1.5,
        label="clipped fixed point = -1/2",
    )
    ax.axhline(
        prob.notes["paper_claimed_fixed_point"], color="tab:red", ls="--", lw=1, label="paper's x~ = 2/3"
    )
    ax.set_xlabel("step t")
    ax.set_ylabel("x_t")
    ax.set_title("C = C1 = C2 = 1 (C' = 2, N = 3), lr 0.1, x0 = 1", fontsize=10)
    ax.legend(fontsize=7.5, loc="upper right", ncol=2)
    ax.grid(alpha=0.3)
    fig.suptitle(
        "dicesgd-b1 (DiceSGD paper App. B.1): DPSGD-GC stalls at the clipped fixed point, DiceSGD reaches x*"
    )
    fig.tight_layout()
    save_figure_atomic(fig, path, dpi=120)
    plt.close(fig)
    return out


def clip21_figure(path: str, *, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Panel (b): Clip-GD / Clip21-GD / Clip21-SGD2M on clip21-example1 and stochastic-quadratic."""
    from dptheory.runner import run, save_figure_atomic

    names = {"clipsgd": "Clip-SGD", "clip21sgd": "Clip21-SGD", "clip21sgd2m": "Clip21-SGD2M"}
    colors = {"clipsgd": "tab:blue", "clip21sgd": "tab:orange", "clip21sgd2m": "tab:green"}
    steps_a = 100 if quick else 300
    steps_b = 200 if quick else 1000
    seeds = 2 if quick else 4
    out: dict = {}
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for algo in names:
        if progress:
            progress(f"clip21: {algo}")
        r = run(algo, "clip21-example1", tau=1.0, lr=0.1, steps=steps_a, device="cpu")
        tr = r.runs[0].trajectory
        axes[0].plot(tr["step"], np.abs(tr["x"]), color=colors[algo], label=names[algo].replace("SGD", "GD"))
        out[f"example1_{algo}"] = float(abs(tr["x"][-1]))
        for ax, z in ((axes[1], 0.0), (axes[2], 0.05)):
            mom = dict(beta=0.1, beta_hat=0.1) if algo == "clip21sgd2m" else {}
            r = run(
                algo,
                "stochastic-quadratic",
                tau=1.0,
                lr=0.05,
                steps=steps_b,
                seeds=seeds,
                noise_multiplier=z,
                device="cpu",
                **mom,
            )
            if algo == "clipsgd" and r.fixed_point is not None:
                d = float(np.linalg.norm(r.fixed_point.point - r.optimum))
                ax.axhline(d, color=colors[algo], ls=":", lw=1, label="Clip-SGD exact fixed point")
                out["stochquad_clipsgd_fixed_point_dist"] = d
            curves = np.array([sr.trajectory["dist_to_opt"] for sr in r.runs])
            step = r.runs[0].trajectory["step"]
            m = curves.mean(axis=0)
            ax.semilogy(step, m, color=colors[algo], label=names[algo])
            ax.fill_between(step, curves.min(axis=0), curves.max(axis=0), color=colors[algo], alpha=0.15)
            out[f"stochquad_z{z}_{algo}"] = float(m[-1])
    axes[0].set_yscale("symlog", linthresh=1e-6)
    axes[0].set_title(
        "clip21-example1 (a=3, L=1, x0=1)\nfull gradients, tau=1, lr 0.1, beta=beta_hat=0.5", fontsize=10
    )
    axes[0].set_ylabel("|x_t - x*|")
    axes[1].set_title(
        "stochastic-quadratic (d=10, n=4, sigma=1)\n1 sample/round, no DP noise, lr 0.05", fontsize=10
    )
    axes[2].set_title(
        "stochastic-quadratic, local DP noise\nz = 0.05 (sigma_omega = z tau), lr 0.05", fontsize=10
    )
    for ax in axes[1:]:
        ax.set_ylabel(f"||x_t - x*||  (mean; band: min..max of {seeds} seeds)")
    for ax in axes:
        ax.set_xlabel("round t")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        "Clip-SGD vs Clip21-SGD vs Clip21-SGD2M, tau = 1 "
        "(stochastic panels: Clip21-SGD2M beta = beta_hat = 0.1)"
    )
    fig.tight_layout()
    save_figure_atomic(fig, path, dpi=120)
    plt.close(fig)
    return out


def epsilon_figure(path: str, *, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Panel (c): epsilon vs steps for constant / inv-k / inv-sqrt-k schedules (D2P-SGD)."""
    from dptheory import api
    from dptheory.runner import save_figure_atomic

    base, q, n, delta = 4.0, 0.01, 60000, 1e-5
    ts = np.unique(np.geomspace(10, 2000 if quick else 10000, 8 if quick else 16).astype(int))
    out: dict = {"steps": ts.tolist()}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.4))
    for sched, color in (("constant", "tab:blue"), ("inv-sqrt-k", "tab:green"), ("inv-k", "tab:red")):
        if progress:
            progress(f"epsilon: {sched}")
        eps = []
        for t in ts:
            rep = api.epsilon(
                defaults="paper",
                noise_multiplier=base,
                delta=delta,
                algo="d2psgd",
                sample_rate=q,
                steps=int(t),
                dataset_size=n,
                batch_size=q * n,
                schedule=sched,
            )
            eps.append(float(rep.epsilon))
        out[sched] = eps
        label = {
            "constant": "constant z_k = z",
            "inv-sqrt-k": "inv-sqrt-k: z_k^2 = z^2/sqrt(k)",
            "inv-k": "inv-k: z_k^2 = z^2/k",
        }[sched]
        shown = np.asarray(eps) <= EPS_CAP  # beyond this the number says nothing useful
        if not shown.all():
            label += f" (eps > {EPS_CAP:g} not drawn)"
        ax.loglog(ts[shown], np.asarray(eps)[shown], "o-", color=color, label=label, ms=4)
    ax.set_xlabel("steps T")
    ax.set_ylabel(f"epsilon at delta = {delta:g} (certified, RDP)")
    ax.set_title(f"D2P-SGD noise schedules: base z = {base:g}, q = {q:g}, N = {n}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure_atomic(fig, path, dpi=120)
    plt.close(fig)
    return out


def make_all(
    out_dir: str,
    *,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    only: tuple[str, ...] | None = None,
) -> dict[str, dict]:
    """Regenerate the figures (``only``: a subset of :data:`FIGURES`) into ``out_dir``.

    Returns the plotted numbers per file.
    """
    from dptheory import figures_dicesgd

    makers = dict(
        zip(
            FIGURES,
            (
                bias_figure,
                clip21_figure,
                epsilon_figure,
                figures_dicesgd.gap_heatmap_figure,
                figures_dicesgd.tradeoff_figure,
            ),
            strict=True,
        )
    )
    os.makedirs(out_dir, exist_ok=True)
    names = FIGURES if only is None else tuple(n for n in FIGURES if n in only)
    return {n: makers[n](os.path.join(out_dir, n), quick=quick, progress=progress) for n in names}
