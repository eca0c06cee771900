"""Counterexample to "screened epsilon == whole curve" (accounting.order_screen.event_epsilon):
the closed-form bound at the fractional order 16.014164246828166 lies above the true RDP (its
P_B moments are subnormal, see REVIEW.md), so screening rules out the whole curve's optimum.

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
    for method, delta in (("classic", 3.84672096489656e-173), ("improved", 1.9151695967140057e-174)):
        full = rdp_to_epsilon(curve, delta, method=method)
        got = event_epsilon(event, GRID, delta, method=method)
        print(
            f"{method:8s} delta={delta!r}: whole curve order {full.order} eps {full.epsilon!r}; "
            f"screened order {got.order} eps {got.epsilon!r} (rel. diff {got.epsilon / full.epsilon - 1:.2e})"
        )
