"""Power of the one-run audits as the canary count grows: figures/audit_power.png.

Ideal scores of the Gaussian matching eps = 2 at delta = 1e-5 (in ~ N(0.5, 1), out ~ N(0, 1)),
median over seeds of Steinke et al.'s and the f-DP (GDP curve) estimates at 95%, Bonferroni
over the default rule grid, two-sided.  Writes to the path given (default figures/audit_power.png).

    python benchmarks/audit_power.py [OUT.png] [--seeds 5]
"""

from __future__ import annotations

import argparse

import numpy as np

from dptheory.auditing import CanaryScoreAuditor

MU, DELTA, COUNTS = 0.5, 1e-5, (250, 500, 1000, 2000, 5000, 10000, 20000)


def estimates(m: int, seeds: int) -> tuple[float, float]:
    st, fd = [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        s = rng.random(m) < 0.5
        x = rng.normal(size=m) + MU * s
        a = CanaryScoreAuditor(x[s], x[~s])
        st.append(a.epsilon_one_run(0.05, DELTA, False))
        fd.append(a.epsilon_one_run_fdp(0.05, DELTA, False))
    return float(np.median(st)), float(np.median(fd))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out", nargs="?", default="figures/audit_power.png")
    p.add_argument("--seeds", type=int, default=5)
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(m, *estimates(m, args.seeds)) for m in COUNTS]
    for m, s, f in rows:
        print(f"m = {m:6d}: Steinke {s:.3f}   f-DP {f:.3f}")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-", label="Steinke et al. 2023")
    ax.plot([r[0] for r in rows], [r[2] for r in rows], "s-", label="f-DP (Mahloujifar et al. 2024)")
    ax.axhline(2.0, color="k", ls="--", lw=1, label="true eps = 2 (mu = 0.5 GDP)")
    ax.set_xscale("log")
    ax.set_xlabel("canaries m")
    ax.set_ylabel("eps lower bound at 95%")
    ax.set_title("One-run audit power on ideal scores (delta = 1e-5)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
