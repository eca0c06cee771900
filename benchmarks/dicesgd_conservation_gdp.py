"""CANDIDATE (not certified, not in the product path): a tighter conservation bound for DiceSGD via GDP.

Run from the repository root::

    PYTHONPATH=. python benchmarks/dicesgd_conservation_gdp.py [--json] [--audit]

The certified conservation regime (docs/hidden-state.md, K1-K7) bounds, for a fixed bit vector b of
xi' with n inclusions, the total squared release shift by ``S(n) = (sqrt(n) C1/B + n (G - C1)/B)^2``
along every history, then goes through Renyi divergences. This script replaces K6-K7 by:

* for fixed (S, b), a fully adaptive composition of Gaussian mechanisms whose squared GDP parameters
  ``||Delta_t||^2 / sigma1^2`` sum to at most ``mu_n^2 = S(n) / sigma1^2`` almost surely is
  ``mu_n``-GDP (the GDP filter: Smith & Thakurta 2022, Koskela et al. 2023), so the hockey-stick
  divergence at ``e^eps`` is at most ``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``
  in both directions;
* the hockey-stick divergence is jointly convex, so the mixture over b with its prior (and over S,
  K1) gives ``delta(eps) <= sum_n Bin(n; T, q) delta_{mu_n}(eps)``.

Units: ``mu_n = (sqrt(n) + n rho/C1)/z``. The script prints, per gradient bound, the candidate z for
(eps, delta) = (2, 1e-5) at the DiceSGD defaults next to the certified conservation z; ``--audit``
adds the lattice (20000 trajectories, confidence 0.99) and storage audits' eps_lower at the candidate
z for each non-flush C2 of the grid (they must stay below eps = 2 if the candidate is sound).
Not reviewed; nothing here is reported by ``dptheory`` as certified.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from scipy import special, stats

N, B, T, C1, DELTA, EPS = 50_000, 1000.0, 150, 1.0, 1e-5, 2.0
Q = B / N
GS = (1.5, 2.0, 3.0, 11.0)
NON_FLUSH_C2 = {1.5: (0.5,), 2.0: (0.5, 1.0), 3.0: (0.5, 1.0, 2.0), 11.0: (0.5, 1.0, 2.0)}


def log_delta_gauss(eps: float, mu: np.ndarray) -> np.ndarray:
    """``log delta_mu(eps)`` of mu-GDP, elementwise; ``-inf`` at mu = 0."""
    out = np.full(mu.shape, -math.inf)
    m = mu > 0
    mm = mu[m]
    la = special.log_ndtr(-eps / mm + mm / 2)
    lb = special.log_ndtr(-eps / mm - mm / 2)
    out[m] = la + np.log1p(-np.exp(np.minimum(eps + lb - la, 0.0)))
    return out


def candidate_delta(z: float, g: float, eps: float = EPS) -> float:
    n = np.arange(T + 1)
    mu = (np.sqrt(n) + n * (g - C1) / C1) / z
    return float(np.exp(special.logsumexp(stats.binom.logpmf(n, T, Q) + log_delta_gauss(eps, mu))))


def candidate_z(g: float) -> float:
    lo, hi = 0.1, 1e5
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if candidate_delta(mid, g) > DELTA else (lo, mid)
    return hi


def certified_z(g: float) -> float:
    from dptheory import api

    rep = api.calibrate(defaults="paper", eps=EPS, delta=DELTA, algo="dicesgd", grad_bound=g, c2=C1 / 2)
    assert rep.details["regime"] == "conservation"
    return float(rep.noise_multiplier)


def audits(z: float, g: float, c2: float) -> tuple[float, float]:
    from accounting.algorithms.registry import get_algorithm
    from accounting.audit import run_audit
    from accounting.audit.dicesgd_storage import dicesgd_storage_epsilon_lower
    from dptheory import api

    p, _, _ = get_algorithm("dicesgd").resolve(
        api.build_params(algo="dicesgd", delta=DELTA, noise_multiplier=z, grad_bound=g, c2=c2)
    )
    lattice = float(run_audit(p, samples=20_000, confidence=0.99, seed=0).epsilon_lower)
    storage, _ = dicesgd_storage_epsilon_lower(
        sample_rate=Q, noise_multiplier=z, steps=T, delta=DELTA, c1=C1, c2=c2, batch_size=B,
        grad_bound=g, dataset_size=N,
    )  # fmt: skip
    return lattice, float(storage)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--audit", action="store_true", help="audit eps_lower at the candidate z (a few minutes)")
    args = ap.parse_args()
    rows = []
    for g in GS:
        zc, zr = candidate_z(g), certified_z(g)
        row = dict(g_over_c1=g, z_candidate_gdp=zc, z_certified_conservation=zr, noise_ratio=zr / zc)
        if args.audit:
            row["audits"] = {str(c2): audits(zc, g, c2) for c2 in NON_FLUSH_C2[g]}
        rows.append(row)
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    print(
        "| G/C1 | candidate z (GDP) | certified z (conservation, RDP) | certified/candidate "
        "| audits at candidate z |"
    )
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        aud = "; ".join(
            f"C2 = {c2}: lattice {a[0]:.3g}, storage {a[1]:.3g}" for c2, a in r.get("audits", {}).items()
        )
        print(
            f"| {r['g_over_c1']:g} | {r['z_candidate_gdp']:.4g} | {r['z_certified_conservation']:.4g} | "
            f"{r['noise_ratio']:.3g} | {aud or '-'} |"
        )


if __name__ == "__main__":
    main()
