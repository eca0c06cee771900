"""Probe L_m = log_a_lower_steps <= P_m = log_a_int_precise for integer m in 2..24 (the chord skip's
premise), over adversarial (q, sigma).  Prints worst L/P ratio and any violation of L*(1-1e-9) > P."""

import sys

import numpy as np

from accounting._log_a_int import log_a_int_precise, log_s_of_sigma
from accounting.rdp_lower import log_a_lower_steps

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
parts = [
    (10 ** rng.uniform(-9, 0, N) * (1 - 1e-16), 10 ** rng.uniform(np.log10(0.2), 8, N)),
    (rng.uniform(0.5, 1, N), 10 ** rng.uniform(np.log10(0.2), 3, N)),
    (1 - 10 ** rng.uniform(-15, -1, N), 10 ** rng.uniform(-1, 2, N)),
    (10 ** rng.uniform(-300, -9, N), 10 ** rng.uniform(-1.5, 1, N)),
    (np.full(N, 0.5), 10 ** rng.uniform(-1.3, 8, N)),
    (np.nextafter(0.5, rng.integers(0, 2, N).astype(float)), 10 ** rng.uniform(-1.3, 3, N)),
    (10 ** rng.uniform(-9, 0, N) * (1 - 1e-16), 10 ** rng.uniform(-1.3, 0, N)),
]
q = np.concatenate([p[0] for p in parts])
sig = np.concatenate([p[1] for p in parts])
ok = (q > 0) & (q < 1)
q, sig = q[ok], sig[ok]
s = 0.5 / (sig * sig)
fin = np.isfinite(s) & (s > 0)
q, sig, s = q[fin], sig[fin], s[fin]
lq, l1q, log_s = np.log(q), np.log1p(-q), log_s_of_sigma(sig)
ms = np.arange(2, 25, dtype=float)
L = log_a_lower_steps(q, s, ms)
rows = np.arange(q.size)
worst = -np.inf
bad = 0
npos = 0
for j, m in enumerate(ms):
    P = log_a_int_precise(lq, l1q, s, log_s, rows, int(m))
    pos = (L[:, j] > 0) & np.isfinite(P)
    npos += pos.sum()
    r = np.where(pos, L[:, j] / P - 1, -np.inf)
    viol = pos & (L[:, j] * (1 - 1e-9) > P)
    nonfinP = L[:, j] > 0
    nonfinP &= ~np.isfinite(P)
    if nonfinP.any():
        i = np.flatnonzero(nonfinP)[0]
        print("P nonfinite with L>0:", q[i].hex(), sig[i].hex(), m, P[i], L[i, j])
    bad += viol.sum()
    if viol.any():
        i = np.flatnonzero(viol)[0]
        print(f"VIOLATION q={q[i]!r} sigma={sig[i]!r} m={m:g} L={L[i, j]!r} P={P[i]!r}")
    k = np.argmax(r)
    if r[k] > worst:
        worst = r[k]
        wi = (q[k], sig[k], m, L[k, j], P[k])
print("steps", q.size, "positive (L>0) pairs", int(npos), "violations", int(bad), "worst L/P-1", worst, wi)
