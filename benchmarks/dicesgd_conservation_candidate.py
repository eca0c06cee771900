"""DiceSGD's epsilon from the conservation law, against the inclusion-cap z it replaced.

Run from the repository root::

    PYTHONPATH=. python benchmarks/dicesgd_conservation_candidate.py [--json]

The argument is docs/hidden-state.md, K1-K7; it is reviewed and part of ``--mode certified`` (regime
``conservation``, :mod:`accounting.hidden_state_conservation`); this script recomputes it on its own,
without the float margin, to compare with the z the other regimes certify (``CELLS``).
For a fixed bit vector of xi' with n inclusions, the per-step mean shift of the release is
``Delta_t = b_t c_t / B + u_t`` and, along every history, ``sum_t ||Delta_t||^2 <= S(n)`` with
``S(n) = (sqrt(n) C1/B + n (G - C1)/B)^2`` (Minkowski plus the conservation law
``sum_t ||u_t||^2 <= (n a)^2``); a Renyi filter then gives ``alpha S(n) / (2 sigma1^2)`` and joint
convexity over xi''s bits with their prior weights gives

    RDP(alpha) = log E_{n ~ Bin(T, q)} exp((alpha - 1) alpha S(n) / (2 sigma1^2)) / (alpha - 1).

For each non-flush cell of the grid the script prints this epsilon at the z of the other regimes
alone, its own z for eps = 2 and the stored-residual audit's lower bound there.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from scipy import special

from accounting.audit.dicesgd_storage import dicesgd_storage_epsilon_lower
from accounting.conversion import epsilon_per_order
from accounting.orders import DEFAULT_ORDERS

N, B, T, C1, DELTA, EPS = 50_000, 1000.0, 150, 1.0, 1e-5, 2.0
Q = B / N
CELLS = [(1.5, 0.5, 191.9), (2.0, 0.5, 383.2), (2.0, 1.0, 383.2), (3.0, 0.5, 766.0), (3.0, 1.0, 766.0)]
CELLS += [(3.0, 2.0, 766.0), (11.0, 0.5, 3828.0), (11.0, 1.0, 3828.0), (11.0, 2.0, 3828.0)]


def candidate_epsilon(z: float, g: float) -> float:
    """The candidate's epsilon at DELTA (standard orders, the project's RDP -> DP conversion)."""
    n = np.arange(T + 1, dtype=float)
    logpmf = (
        special.gammaln(T + 1.0)
        - special.gammaln(n + 1)
        - special.gammaln(T - n + 1)
        + n * math.log(Q)
        + (T - n) * math.log1p(-Q)
    )
    s_over_var = (np.sqrt(n) + n * (g - C1) / C1) ** 2 / z**2  # S(n) / sigma1^2
    orders = np.asarray(DEFAULT_ORDERS, dtype=float)
    orders = orders[orders > 1]
    rdp = np.array([special.logsumexp(logpmf + (a - 1) * a * s_over_var / 2) / (a - 1) for a in orders])
    return float(np.min(epsilon_per_order(orders, rdp, DELTA, "improved")))


def candidate_z(g: float) -> float:
    lo, hi = 0.1, 1e5
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if candidate_epsilon(mid, g) > EPS else (lo, mid)
    return hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for g, c2, z_cert in CELLS:
        zc = candidate_z(g)
        low, _ = dicesgd_storage_epsilon_lower(
            sample_rate=Q, noise_multiplier=zc, steps=T, delta=DELTA, c1=C1, c2=c2, batch_size=B,
            grad_bound=g, dataset_size=N,
        )  # fmt: skip
        rows.append(
            dict(
                g_over_c1=g,
                c2_over_c1=c2,
                z_certified=z_cert,
                candidate_eps_at_z_certified=candidate_epsilon(z_cert, g),
                candidate_z=zc,
                storage_eps_lower_at_candidate_z=low,
                candidate_ratio=EPS / low if low > 0 else math.inf,
            )
        )
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    print("| G/C1 | C2/C1 | certified z | candidate eps | candidate z | storage eps_lower there | 2/it |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['g_over_c1']:g} | {r['c2_over_c1']:g} | {r['z_certified']:.4g} | "
            f"{r['candidate_eps_at_z_certified']:.3g} | {r['candidate_z']:.4g} | "
            f"{r['storage_eps_lower_at_candidate_z']:.3g} | {r['candidate_ratio']:.3g} |"
        )


if __name__ == "__main__":
    main()
