"""How far above the truth the subsampled Gaussian's RDP is at fractional orders (tightness only).

Every value is an upper bound (docs/rdp-numerics.md); this measures by how much.  At fractional
orders the two-series formula is summed in absolute value (as dp-accounting does) and capped by the
chord between integer orders; below order 2 the chord is ``(alpha - 1) log A_2``, i.e. the RDP at
order 2.  Where the series' cancellation is heavy (large q, moderate sigma), the cap is what is
left, and the RDP at orders in (1, 2) is the order-2 value.  The reference is ``log A / (alpha - 1)``
with ``A`` integrated by mpmath quadrature at 30 digits; dp-accounting's RDP accountant is shown
beside ours.

Run from the repository root (about 10 s)::

    python benchmarks/frac_order_looseness.py          # table of ratio = value / exact
    python benchmarks/frac_order_looseness.py --json
"""

from __future__ import annotations

import argparse
import json

import mpmath as mp
import numpy as np

from accounting.rdp import subsampled_gaussian_rdp

CASES = [(0.01, 1.0), (0.05, 2.0), (0.128, 5.0), (0.2, 1.5), (0.5, 5.0)]
ORDERS = [1.1, 1.5, 1.9, 2.5, 3.5, 5.5, 8.5]


def exact_rdp(q: float, sigma: float, alpha: float) -> float:
    """RDP of the Poisson-subsampled Gaussian (remove direction, as dp-accounting), by quadrature."""
    mp.mp.dps = 30
    q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)

    def f(z):
        return mp.npdf(z, 0, s) * ((1 - q) + q * mp.exp((2 * z - 1) / (2 * s * s))) ** a

    area = mp.quad(f, [-mp.inf, -20 * s, 0, 0.5, 20 * s, mp.inf])
    return float(mp.log(area) / (a - 1))


def dp_accounting_rdp(q: float, sigma: float, alpha: float) -> float:
    from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_poisson_subsampled_gaussian

    return float(_compute_rdp_poisson_subsampled_gaussian(q, sigma, [alpha])[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for q, sigma in CASES:
        ours = np.asarray(subsampled_gaussian_rdp(q, sigma, np.array(ORDERS)).rdp)
        for alpha, value in zip(ORDERS, ours, strict=True):
            exact = exact_rdp(q, sigma, alpha)
            theirs = dp_accounting_rdp(q, sigma, alpha)
            row = dict(q=q, sigma=sigma, order=alpha, exact=exact, ours=float(value), dp_accounting=theirs)
            rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'q':>6} {'sigma':>6} {'order':>6} {'exact RDP':>12} {'ours/exact':>11} {'dp-acc/exact':>13}")
    for r in rows:
        ratio_ours, ratio_theirs = r["ours"] / r["exact"], r["dp_accounting"] / r["exact"]
        print(
            f"{r['q']:>6g} {r['sigma']:>6g} {r['order']:>6g} {r['exact']:>12.5g} "
            f"{ratio_ours:>11.4f} {ratio_theirs:>13.4f}"
        )


if __name__ == "__main__":
    main()
