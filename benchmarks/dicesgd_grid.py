"""Certified DiceSGD noise vs the audit's lower bound over a grid of G/C1 and C2/C1 (issue 10, section 2).

Run from the repository root::

    PYTHONPATH=. python benchmarks/dicesgd_grid.py [--samples 100000] [--json] [--without-conservation]

For each (G/C1, C2/C1) at the DiceSGD defaults (N = 50000, B = 1000, 3 epochs, C1 = 1) and
eps = 2, delta = 1e-5: the certified z (``dptheory.api.calibrate``, flat clipping, ``--grad-bound G``),
the regime that gave it and P(E^c), then the audit's eps_lower at that z, the larger of the 1-D
lattice instance of ``accounting/audit/dicesgd.py`` (Monte Carlo, confidence 0.99), the
stored-residual instance of ``accounting/audit/dicesgd_storage.py`` (exact) and the orthogonal
storage instance of ``accounting/audit/dicesgd_orthogonal.py`` (Monte Carlo, confidence 0.99), and the ratio
certified eps / eps_lower at the same noise (``--json`` rows also carry each audit's number). The
audit is a *lower* bound, so the ratio is an upper bound on how loose the certified number can be
on those instances. The computation is
:func:`dptheory.figures_dicesgd.certified_vs_audit_grid`, which ``dptheory figures`` also draws
as ``figures/dicesgd_gap_heatmap.png``.

The certified minimum includes the conservation-law bounds (:mod:`accounting.hidden_state_conservation`,
docs/hidden-state.md K1-K7, and its one-dimensional dominating pair,
:mod:`accounting.hidden_state_dominating`, C1-C5); every ``--json`` row carries ``"conservation"``:
whether they were in the minimum. ``--without-conservation`` leaves both out for this process only,
which reproduces the grid of the other regimes alone (``--with-conservation``, the default, is kept
for old command lines).
"""

from __future__ import annotations

import argparse
import json

from dptheory.figures_dicesgd import GRID_C2, GRID_G, certified_vs_audit_grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--json", action="store_true")
    switch = ap.add_mutually_exclusive_group()
    switch.add_argument(
        "--with-conservation",
        action="store_true",
        help="include the conservation-law bounds in the certified minimum (the default)",
    )
    switch.add_argument(
        "--without-conservation",
        action="store_true",
        help="leave the conservation-law bounds out of the certified minimum (this run only)",
    )
    args = ap.parse_args()
    import contextlib

    import accounting.hidden_state_conservation as hsc

    scope = hsc.left_out() if args.without_conservation else contextlib.nullcontext()
    with scope:
        rows = certified_vs_audit_grid(GRID_G, GRID_C2, samples=args.samples)
    if args.json:
        for r in rows:
            print(json.dumps({**r, "conservation": not args.without_conservation}))
        return
    from dptheory.cli.numbers import DOWN, UP, fmt  # lower bounds printed down, ratios up

    print(
        "| G/C1 | C2/C1 | certified z | regime | P(E^c) | lattice eps_lower | storage eps_lower "
        "| orthogonal eps_lower | certified/audit (lattice only) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        pf = "-" if r["p_fail"] is None else fmt(r["p_fail"], UP, 2)
        print(
            f"| {r['g_over_c1']:g} | {r['c2_over_c1']:g} | {r['z']:.4g} | {r['regime']} | {pf} | "
            f"{fmt(r['eps_lower_lattice'], DOWN, 3)} | {fmt(r['eps_lower_storage'], DOWN, 3)} | "
            f"{fmt(r['eps_lower_orthogonal'], DOWN, 3)} | {fmt(r['ratio'], UP, 3)} "
            f"({fmt(r['ratio_lattice'], UP, 3)}) |"
        )


if __name__ == "__main__":
    main()
