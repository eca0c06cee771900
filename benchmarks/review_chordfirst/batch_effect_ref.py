"""For the entries that differ in batch_effect.py (K given), compare old and new to the mpmath reference."""

import sys

import mpmath as mp
import numpy as np

sys.path.insert(0, ".")
from reference import moment_log_a, quad_log_a

K = int(sys.argv[1])
DEF = np.load("/tmp/default_orders.npy")
orders = np.unique(np.concatenate([DEF, [150.5, 300.5, 500.5, 1000.5, 1500.5, 1999.5]]))
sig = np.concatenate(
    [10.0 ** np.linspace(11.5, 12.5, K), np.array([0.8, 1.5, 3.0, 10.0, 30.0, 100.0, 1e3, 1e4, 1e5, 1e6])]
)
a, b = np.load(f"/tmp/be_{K}_review_chordfirst_base.npy"), np.load(f"/tmp/be_{K}_review_chordfirst.npy")
d = np.argwhere((a.view(np.int64) != b.view(np.int64)) & ~(np.isnan(a) & np.isnan(b)))
for i, j in d:
    al, sg = orders[j], sig[i]
    f = moment_log_a if al * al / (2 * sg * sg) < 1e-6 else quad_log_a
    ref = f(0.3, sg, al) / (mp.mpf(al) - 1)
    print(
        f"sigma={sg:.6g} alpha={al} old={a[i, j]!r} new={b[i, j]!r} ref={mp.nstr(ref, 17)} "
        f"new/ref-1={mp.nstr(mp.mpf(b[i, j]) / ref - 1, 3)} (new-old)/old={(b[i, j] - a[i, j]) / a[i, j]:.3g}"
    )
