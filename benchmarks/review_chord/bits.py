"""Bit-for-bit dump of subsampled_gaussian_rdp_steps / subsampled_gaussian_rdp over adversarial cases.
usage: PYTHONPATH=<tree> python bits.py SEED N MODE OUT.json   (MODE: normal | noskip)"""

import json
import sys

import numpy as np

from accounting import rdp

seed, N, mode, outp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]

skips = [0, 0]
if mode in ("noskip", "count"):
    import accounting._frac_chord as fc

    orig = fc._chord_cannot_win

    def patched(cand, alpha, rows, q, s):
        r = orig(cand, alpha, rows, q, s)
        skips[0] += int(r.sum())
        skips[1] += r.size
        return np.zeros(rows.size, bool) if mode == "noskip" else r

    fc._chord_cannot_win = patched
rng = np.random.default_rng(seed)


def draw_q(k):
    c = rng.integers(0, 4)
    if c == 0:
        return 10 ** rng.uniform(-9, -1e-12, k)
    if c == 1:
        return rng.uniform(0.5, 1, k)
    if c == 2:
        return np.where(rng.random(k) < 0.5, 0.5, np.nextafter(0.5, 1.0))
    return 1 - 10 ** rng.uniform(-12, -0.3, k)


def draw_orders():
    ints = rng.integers(1, 25, 6).astype(float)
    eps = 10.0 ** rng.uniform(-12, -0.3, 6)
    fr = np.concatenate([ints + eps, ints + 1 - eps, rng.uniform(1, 25, 3), [1.5, 2.000001, 23.9999, 24.5]])
    fr = fr[(fr > 1) & (fr != np.floor(fr))]
    o = np.unique(np.concatenate([fr, rng.integers(2, 26, 3).astype(float)]))
    return o


res = []
for _i in range(N):
    T = int(rng.integers(1, int(__import__("os").environ.get("TMAX", "4"))))
    q = draw_q(T)
    sig = 10 ** rng.uniform(np.log10(0.2), 8, T)
    o = draw_orders()
    rec = {"q": [x.hex() for x in q], "sig": [x.hex() for x in sig], "o": [x.hex() for x in o]}
    try:
        m = rdp.subsampled_gaussian_rdp_steps(q, sig, o)
        rec["steps"] = m.tobytes().hex()
    except Exception as e:
        rec["steps"] = "ERR " + type(e).__name__
    try:
        k = int(rng.integers(1, 1000))
        c = rdp.subsampled_gaussian_rdp(float(q[0]), float(sig[0]), o, steps=k)
        rec["curve1"] = np.asarray(c.rdp).tobytes().hex() + str(c.dropped)
        c = rdp.subsampled_gaussian_rdp(q, sig, o)
        rec["curveT"] = np.asarray(c.rdp).tobytes().hex() + str(c.dropped)
    except Exception as e:
        rec["curve"] = "ERR " + type(e).__name__ + str(e)[:80]
    res.append(rec)
json.dump({"skips": skips, "res": res}, open(outp, "w"))
print(mode, "cases", N, "skips/rows", skips)
