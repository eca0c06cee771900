"""Instrumented probe (run from the NEW tree).  Wraps _rdp_evaluate.frac_log_a: for every batch
it also computes the pre-change composition frac_with_chord(*log_a_frac(...), q=q) on the SAME
batch (exactly what the old evaluate_steps ran), and for the rows the new code tries it also
records the series' candidate la + frac_rounding(alpha), the series status and the chord.

Reports: rows where new != old (bitwise), and the minimum of (cand - CHORD_WINS_BELOW) over
tried rows whose series converged (status 0) -- the claim is that it is >= 0.
usage: PYTHONPATH=. python benchmarks/review_chordfirst/probe_margin.py SEED N [mode]
"""

import json
import sys
import time

import numpy as np

from accounting import _frac_chord, _rdp_evaluate
from accounting._frac_chord import CHORD_WINS_BELOW, frac_with_chord
from accounting._log_a_frac import frac_rounding, log_a_frac
from accounting.orders import DEFAULT_ORDERS
from accounting.rdp import subsampled_gaussian_rdp_steps

REC = []
orig = _frac_chord.frac_log_a


def wrapped(lq, l1q, s, sigma, log_s, alpha, rows, tab_idx, tabs, int_cache=None, q=None):
    new_la, new_st = orig(lq, l1q, s, sigma, log_s, alpha, rows, tab_idx, tabs, int_cache, q=q)
    # old composition, same batch (no int_cache so as not to perturb the run's cache)
    s_la, s_st = log_a_frac(lq[rows], l1q[rows], s[rows], sigma[rows], alpha, tab_idx, tabs, rows)
    old_la, old_st = frac_with_chord(s_la.copy(), s_st.copy(), alpha, rows, lq, l1q, s, log_s, None, q=q)
    c_la, c_st = frac_with_chord(
        np.full(rows.size, np.nan), np.full(rows.size, 2, dtype=np.int8), alpha, rows, lq, l1q, s, log_s, None
    )
    n = np.floor(alpha)
    with np.errstate(over="ignore", invalid="ignore"):
        gauss = ((n + 1.0 - alpha) * (n * (n - 1.0)) + (alpha - n) * ((n + 1.0) * n)) * s[rows]
    tried = np.isfinite(gauss) & (2.0 * gauss < CHORD_WINS_BELOW)
    won = tried & (c_st == 0) & (c_la < CHORD_WINS_BELOW)
    cand = s_la + frac_rounding(alpha)
    qq = q[rows] if q is not None else np.full(rows.size, np.nan)
    REC.append(
        dict(
            alpha=alpha.copy(),
            q=qq,
            sigma=sigma[rows].copy(),
            new=new_la.copy(),
            old=old_la.copy(),
            new_st=new_st.copy(),
            old_st=old_st.copy(),
            s_la=s_la,
            s_st=s_st,
            chord=c_la,
            c_st=c_st,
            tried=tried,
            won=won,
            cand=cand,
            batch=np.full(rows.size, rows.size),
        )
    )
    return new_la, new_st


_rdp_evaluate.frac_log_a = wrapped


def cases(rng, N, mode):
    for _k in range(N):
        if mode == "wide":
            lq = rng.uniform(-10, 0)
            q = 10.0**lq if rng.random() < 0.6 else 1.0 - 10.0 ** rng.uniform(-9, -0.3)
            ls = rng.uniform(4, 300)
        elif mode == "half":  # q near 0.5, where the series converges at huge sigma
            ls = rng.uniform(5, 30)
            q = 0.5 + rng.choice([-1, 1]) * 10.0 ** rng.uniform(-ls - 2, -1)
        elif mode == "conv":  # sigma just above the trigger, moderate q: series converges
            ls = rng.uniform(6.5, 9.5)
            q = 10.0 ** rng.uniform(-4, -0.01) if rng.random() < 0.5 else 1 - 10.0 ** rng.uniform(-4, -0.31)
        elif mode == "smallalpha":  # constant-allowance regime (alpha < ~12), converging series
            ls = rng.uniform(7.2, 9.0)
            q = 10.0 ** rng.uniform(-6, -0.3) if rng.random() < 0.5 else 1 - 10.0 ** rng.uniform(-6, -0.3)
        elif mode == "underflow":
            ls = rng.uniform(150, 308)
            q = 10.0 ** rng.uniform(-10, 0) if rng.random() < 0.5 else 1 - 10.0 ** rng.uniform(-9, -0.3)
        sigma = 10.0**ls
        steps = int(rng.integers(1, 4))
        sig = sigma * 10.0 ** (-rng.uniform(0, 2, steps))
        sig[0] = sigma
        if mode == "underflow":
            sig = np.minimum(sig, 1.7e308)
        nx = int(rng.integers(1, 7))
        hi = rng.choice([12.0, 200.0, 5000.0, 1.2e5])
        extra = np.round(rng.uniform(1.0001, hi, nx), int(rng.integers(1, 5)))
        extra = extra[extra != np.floor(extra)]
        big = np.array([1000.5, 4096.5, 10000.5, 1e5 + 0.5])[rng.random(4) < 0.3]
        if mode == "smallalpha":
            extra, big = np.round(rng.uniform(1.0001, 12.0, 40), 4), np.zeros(0)
            extra = extra[extra != np.floor(extra)]
        orders = np.unique(np.concatenate([DEFAULT_ORDERS, extra, big]))
        yield q, sig, orders


def main():
    seed, N = int(sys.argv[1]), int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "wide"
    rng = np.random.default_rng(seed)
    t0 = time.time()
    for q, sig, orders in cases(rng, N, mode):
        subsampled_gaussian_rdp_steps(np.full(sig.size, q), sig, orders)
    R = {k: np.concatenate([r[k] for r in REC]) for k in REC[0]}
    diff = R["new"].view(np.int64) != R["old"].view(np.int64)
    diff &= ~(np.isnan(R["new"]) & np.isnan(R["old"]))
    sdiff = R["new_st"] != R["old_st"]
    conv = R["won"] & (R["s_st"] == 0)
    out = dict(
        mode=mode,
        seed=seed,
        cases=N,
        rows=int(R["new"].size),
        tried=int(R["tried"].sum()),
        won=int(R["won"].sum()),
        won_series_converged=int(conv.sum()),
        value_diffs=int(diff.sum()),
        status_diffs=int(sdiff.sum()),
        secs=round(time.time() - t0, 1),
    )
    if conv.any():
        m = R["cand"][conv] - CHORD_WINS_BELOW
        i = np.argmin(m)
        sel = np.flatnonzero(conv)[i]
        out["min_cand_minus_5e-15"] = float(m[i])
        out["at"] = dict(
            alpha=float(R["alpha"][sel]),
            q=float(R["q"][sel]),
            sigma=float(R["sigma"][sel]),
            s_la=float(R["s_la"][sel]),
            chord=float(R["chord"][sel]),
        )
        # smallest raw series value relative to -frac_rounding (how close to the allowance)
        fr = frac_rounding(R["alpha"][conv])
        ratio = (-R["s_la"][conv]) / fr
        j = np.argmax(ratio)
        out["max_neg_series_over_allowance"] = float(ratio[j])
        out["min_series_la"] = float(R["s_la"][conv].min())
        ci = np.flatnonzero(conv)
        worst = ci[np.argsort(-ratio)[:6]]
        out["worst_ratio_rows"] = [
            dict(
                alpha=float(R["alpha"][i]),
                q=float(R["q"][i]),
                sigma=float(R["sigma"][i]),
                s_la=float(R["s_la"][i]),
                allowance=float(frac_rounding(R["alpha"][i : i + 1])[0]),
                chord=float(R["chord"][i]),
            )
            for i in worst
        ]
        worst2 = ci[np.argsort(R["s_la"][ci])[:4]]
        out["most_negative_rows"] = [
            dict(
                alpha=float(R["alpha"][i]),
                q=float(R["q"][i]),
                sigma=float(R["sigma"][i]),
                s_la=float(R["s_la"][i]),
                allowance=float(frac_rounding(R["alpha"][i : i + 1])[0]),
            )
            for i in worst2
        ]
    # tried rows where the chord did not win but series/chord differ etc
    nw = R["tried"] & ~R["won"]
    out["tried_not_won"] = int(nw.sum())
    if nw.any():
        out["tried_not_won_chord_status"] = {
            int(k): int(v) for k, v in zip(*np.unique(R["c_st"][nw], return_counts=True), strict=False)
        }
    if diff.any():
        idx = np.flatnonzero(diff)[:10]
        out["diffs"] = [
            dict(
                alpha=float(R["alpha"][i]),
                q=float(R["q"][i]),
                sigma=float(R["sigma"][i]),
                new=float(R["new"][i]),
                old=float(R["old"][i]),
                s_la=float(R["s_la"][i]),
                s_st=int(R["s_st"][i]),
                chord=float(R["chord"][i]),
                tried=bool(R["tried"][i]),
                batch=int(R["batch"][i]),
            )
            for i in idx
        ]
        lower = diff & (R["new"] < R["old"])
        out["new_lower_count"] = int(lower.sum())
        if lower.any():
            rel = (R["old"][lower] - R["new"][lower]) / np.abs(R["old"][lower])
            out["new_lower_max_rel"] = float(rel.max())
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
