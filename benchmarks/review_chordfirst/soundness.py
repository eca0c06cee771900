"""Soundness in the regime where the new chord-first path fires: library RDP (this tree) vs the
independent mpmath reference (reference.moment_log_a).  Flags any row with lib < ref.
usage: PYTHONPATH=. python benchmarks/review_chordfirst/soundness.py SEED NPAIRS"""

import json
import math
import os
import sys
import warnings

warnings.simplefilter("ignore")
import mpmath as mp  # noqa: E402 (after the path and warning set-up)
import numpy as np  # noqa: E402 (after the path and warning set-up)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import moment_log_a  # noqa: E402 (after the path and warning set-up)

from accounting._frac_chord import CHORD_WINS_BELOW  # noqa: E402 (after the path and warning set-up)
from accounting.rdp import subsampled_gaussian_rdp_steps  # noqa: E402 (after the path and warning set-up)

seed, npairs = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(seed)
ALPHAS_FIXED = [1.0001, 1.1, 1.5, 1.9999, 2.5, 3.7, 10.5, 63.5, 1000.5, 4096.5, 1e5 + 0.5]
rows = 0
fired = 0
below = []
tight = []
for _p in range(npairs):
    u = rng.random()
    if u < 0.4:
        q = 10.0 ** rng.uniform(-10, -0.3)
    elif u < 0.7:
        q = 1 - 10.0 ** rng.uniform(-9, -0.3)
    else:
        q = 0.5 + rng.uniform(-0.2, 0.2)
    sigma = 10.0 ** rng.uniform(5, 300) if rng.random() < 0.6 else 10.0 ** rng.uniform(5, 14)
    alphas = np.unique(
        np.concatenate(
            [
                ALPHAS_FIXED,
                np.round(rng.uniform(1.0001, 2000, 4), 3),
                np.round(1 + 10.0 ** rng.uniform(-3, 0, 2), 4),
            ]
        )
    )
    alphas = alphas[alphas != np.floor(alphas)]
    lib = subsampled_gaussian_rdp_steps(q, sigma, alphas)[0]
    s = float(
        np.float64(0.5) / (np.float64(sigma) * np.float64(sigma))
    )  # as the library (may underflow to 0)
    for a, v in zip(alphas, lib, strict=False):
        n = math.floor(a)
        gauss = ((n + 1.0 - a) * (n * (n - 1.0)) + (a - n) * ((n + 1.0) * n)) * s
        if not (2 * gauss < CHORD_WINS_BELOW):
            continue
        fired += 1
        ref = moment_log_a(q, sigma, a) / (mp.mpf(a) - 1)
        rows += 1
        if not (mp.mpf(v) >= ref):
            below.append(dict(q=q, sigma=sigma, alpha=float(a), lib=float(v), ref=mp.nstr(ref, 20)))
        if ref > mp.mpf("1e-290"):
            tight.append(float(mp.mpf(v) / ref))
t = np.array(tight)
fin = t[np.isfinite(t)]
print(
    json.dumps(
        dict(
            seed=seed,
            pairs=npairs,
            rows_where_new_path_fires=fired,
            below_reference=len(below),
            examples=below[:10],
            min_lib_over_ref=float(fin.min()) if fin.size else None,
            median_lib_over_ref=float(np.median(fin)) if fin.size else None,
            frac_within_1pct=float(np.mean(fin < 1.01)) if fin.size else None,
        ),
        indent=1,
    )
)
