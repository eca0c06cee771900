"""Power of the one-run audits as the canary count grows: figures/audit_power.png.

Two score laws, median over seeds of the 95% bounds (default rule grid ``GuessGrid``, two-sided):

* ideal scores of the Gaussian matching eps = 2 at delta = 1e-5 (in ~ N(0.5, 1), out ~ N(0, 1)):
  Steinke et al.'s bound and the f-DP bound against the GDP curve (the exact curve of these scores);
* the white-box DP-SGD law of ``dptheory audit-run --eps 2`` (q = 64/1797, T = 113, z = 1.2239;
  its canary block is never read by the loss, so a canary's step is b + N(0, z^2), b ~ Bern(q) when
  in, scored by the summed per-step likelihood ratio): the f-DP bound against the exact
  subsampled-Gaussian curve (``--no-dpsgd`` skips it, about 1 s per audit).

Writes to the path given (default figures/audit_power.png).

    python benchmarks/audit_power.py [OUT.png] [--seeds 5] [--no-dpsgd]
"""

from __future__ import annotations

import argparse

import numpy as np

from dptheory.auditing import CanaryScoreAuditor, SubsampledGaussian

MU, DELTA, COUNTS = 0.5, 1e-5, (250, 500, 1000, 2000, 5000, 10000, 20000)
Q, T, Z = 64 / 1797, 113, 1.2239


def ideal(m: int, seed: int) -> CanaryScoreAuditor:
    rng = np.random.default_rng(seed)
    s = rng.random(m) < 0.5
    x = rng.normal(size=m) + MU * s
    return CanaryScoreAuditor(x[s], x[~s])


def dpsgd(m: int, seed: int) -> CanaryScoreAuditor:
    rng = np.random.default_rng(seed)
    s = rng.random(m) < 0.5
    x = rng.normal(scale=Z, size=(T, m)) + (rng.random((T, m)) < Q) * s
    score = np.logaddexp(np.log1p(-Q), np.log(Q) + (2 * x - 1) / (2 * Z * Z)).sum(axis=0)
    return CanaryScoreAuditor(score[s], score[~s])


def estimates(m: int, seeds: int, with_dpsgd: bool) -> tuple[float, float, float]:
    st, fd, run = [], [], []
    fam = SubsampledGaussian(Q, T)
    for seed in range(seeds):
        a = ideal(m, seed)
        st.append(a.epsilon_one_run(0.05, DELTA, False))
        fd.append(a.epsilon_one_run_fdp(0.05, DELTA, False))
        if with_dpsgd:
            run.append(dpsgd(m, seed).epsilon_one_run_fdp(0.05, DELTA, False, curve=fam))
    return float(np.median(st)), float(np.median(fd)), float(np.median(run)) if run else float("nan")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out", nargs="?", default="figures/audit_power.png")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--no-dpsgd", action="store_true")
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(m, *estimates(m, args.seeds, not args.no_dpsgd)) for m in COUNTS]
    for m, s, f, r in rows:
        print(f"m = {m:6d}: ideal Steinke {s:.3f}   ideal f-DP {f:.3f}   DP-SGD law f-DP exact {r:.3f}")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ms = [r[0] for r in rows]
    ax.plot(ms, [r[1] for r in rows], "o-", label="Steinke et al. 2023, ideal mu = 0.5")
    ax.plot(ms, [r[2] for r in rows], "s-", label="f-DP (GDP curve), ideal mu = 0.5")
    if not args.no_dpsgd:
        ax.plot(ms, [r[3] for r in rows], "^-", label="f-DP (exact curve), DP-SGD white-box law")
    ax.axhline(2.0, color="k", ls="--", lw=1, label="certified eps = 2")
    ax.set_xscale("log")
    ax.set_xlabel("canaries m")
    ax.set_ylabel("eps lower bound at 95% (median)")
    ax.set_title("One-run audit power (delta = 1e-5)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
