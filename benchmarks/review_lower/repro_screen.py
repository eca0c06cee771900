"""Counterexample to "screened epsilon == whole curve" (accounting.order_screen.event_epsilon):
the closed-form bound at the fractional order 16.014164246828166 lies above the true RDP (its
P_B moments are subnormal, see REVIEW.md), so screening rules out the whole curve's optimum.

A second case uses the tests' grid 1.05, 1.3, ..., 19.8 (no integer order) at q = 0.159.

Usage: PYTHONPATH=$PWD python benchmarks/review_lower/repro_screen.py
"""

from __future__ import annotations

import numpy as np

from accounting.conversion import rdp_to_epsilon
from accounting.events import SubsampledGaussianEvent
from accounting.order_screen import event_epsilon
from accounting.rdp_lower import lower_rdp_steps

Q, SIGMA, ALPHA = 0.9999999999716869, 0.5326103029669392, 16.014164246828166
GRID = np.concatenate([np.arange(2.0, 17.0), [ALPHA], np.arange(17.0, 41.0)])

if __name__ == "__main__":
    event = SubsampledGaussianEvent(Q, SIGMA)
    curve = event.rdp(GRID)
    k = int(np.flatnonzero(GRID == ALPHA)[0])
    print(
        f"RDP at {ALPHA}: computed {curve.rdp[k]!r}, closed-form lower bound "
        f"{lower_rdp_steps(Q, SIGMA, [ALPHA])[0]!r} (quadrature: 28.226378195717736)"
    )
    cases = [
        (event, GRID, curve, "classic", 3.84672096489656e-173),
        (event, GRID, curve, "improved", 1.9151695967140057e-174),
    ]
    event2 = SubsampledGaussianEvent(0.15942381695926852, 0.4529204845770666)
    grid2 = np.arange(1.05, 20.0, 0.25)
    curve2 = event2.rdp(grid2)
    cases += [
        (event2, grid2, curve2, "classic", 1.0285940975922554e-237),
        (event2, grid2, curve2, "improved", 1.0102964325217535e-238),
    ]
    for ev, grid, cv, method, delta in cases:
        full = rdp_to_epsilon(cv, delta, method=method)
        got = event_epsilon(ev, grid, delta, method=method)
        print(
            f"{method:8s} delta={delta!r}: whole curve order {full.order} eps {full.epsilon!r}; "
            f"screened order {got.order} eps {got.epsilon!r} (rel. diff {got.epsilon / full.epsilon - 1:.2e})"
        )
