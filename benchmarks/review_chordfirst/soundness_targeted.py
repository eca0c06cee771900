"""Targeted soundness points (new tree) vs the mpmath reference: extreme q, alpha near 1 and huge."""

import itertools
import json
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

qs = [
    1e-300,
    1e-30,
    1e-10,
    3e-6,
    0.1,
    0.4999999,
    0.5,
    0.5000001,
    0.9,
    1 - 1e-9,
    1 - 1e-13,
    float(np.nextafter(1.0, 0.0)),
]
sigmas = [1.5e7, 1e8, 3e9, 1e12, 1e15, 1e40, 1e100, 1e140]
alphas = np.array([1.0000001, 1.5, 1.9999999, 2.0000001, 7.3, 150.5, 9999.5, 999999.5])
n = bad = 0
worst = []
for q, sg in itertools.product(qs, sigmas):
    lib = subsampled_gaussian_rdp_steps(q, sg, alphas)[0]
    s = 0.5 / (sg * sg)
    for a, v in zip(alphas, lib, strict=False):
        k = np.floor(a)
        if not (2 * ((k + 1 - a) * (k * (k - 1)) + (a - k) * ((k + 1) * k)) * s < CHORD_WINS_BELOW):
            continue
        ref = moment_log_a(q, sg, a) / (mp.mpf(a) - 1)
        n += 1
        if ref < mp.mpf("1e-295"):
            ok = v > 0
        else:
            ok = mp.mpf(v) >= ref
            worst.append((float(mp.mpf(v) / ref), q, sg, float(a)))
        if not ok:
            bad += 1
            print("BELOW", q, sg, a, v, ref)
worst.sort()
print(json.dumps(dict(rows_new_path=n, below_reference=bad, tightest=worst[:5]), indent=1))
