"""End-to-end old-vs-new comparison.  Run in each tree:
   cd TREE && PYTHONPATH=. python CHECKOUT/benchmarks/review_chordfirst/compare_trees.py \
       run SEED N MODE OUT.npz
then: python benchmarks/review_chordfirst/compare_trees.py cmp OLD.npz NEW.npz
Each case: subsampled_gaussian_rdp_steps (matrix), subsampled_gaussian_rdp (totals, steps=7, dropped),
and exact_rdp_function evaluated at three order subsets in a row (shared int_cache)."""

import json
import pickle
import sys

import numpy as np


def gen(seed, N, mode):
    from accounting.orders import DEFAULT_ORDERS

    rng = np.random.default_rng(seed)
    out = []
    for _k in range(N):
        rng.random()
        if mode == "mixed":
            # steps spanning ordinary and huge noise: tried and series rows in one batch
            T = int(rng.integers(1, 40))
            lo, hi = rng.uniform(-0.5, 8), rng.uniform(6, 305)
            sig = 10.0 ** rng.uniform(lo, max(lo, hi), T)
            if rng.random() < 0.3:
                q = 10.0 ** rng.uniform(-10, -0.3, T)
            else:
                qq = 10.0 ** rng.uniform(-10, 0) if rng.random() < 0.6 else 1 - 10.0 ** rng.uniform(-9, -0.3)
                q = np.full(T, qq)
        elif mode == "edge":
            T = int(rng.integers(1, 6))
            choice = rng.integers(0, 6)
            if choice == 0:
                qq = 10.0 ** rng.uniform(-300, -10)  # q extremely small
            elif choice == 1:
                qq = 1 - 10.0 ** rng.uniform(-16, -9)  # q extremely close to 1
                qq = min(qq, np.nextafter(1.0, 0))
            elif choice == 2:
                qq = 0.5 + rng.choice([-1, 1]) * 10.0 ** rng.uniform(-17, -3)
            elif choice == 3:
                qq = float(rng.choice([5e-324, 1e-308, np.nextafter(1.0, 0), 0.5, 0.25, 0.75]))
            else:
                qq = 10.0 ** rng.uniform(-10, 0)
            q = np.full(T, qq)
            ls = rng.choice([rng.uniform(4, 12), rng.uniform(140, 170), rng.uniform(290, 308)])
            sig = np.minimum(10.0 ** (ls - rng.uniform(0, 3, T)), 1.7e308)
        elif mode == "bigalpha":
            T = int(rng.integers(1, 4))
            qq = rng.uniform(0.3, 1 - 1e-9) if rng.random() < 0.7 else 10.0 ** rng.uniform(-10, -0.3)
            q = np.full(T, qq)
            sig = 10.0 ** rng.uniform(8, 20, T)
        nx = int(rng.integers(1, 8))
        hi = {"bigalpha": 1.2e5}.get(mode, float(rng.choice([12.0, 300.0, 5000.0])))
        extra = np.round(rng.uniform(1.0001, hi, nx), int(rng.integers(1, 4)))
        if mode == "bigalpha":
            extra = np.concatenate(
                [extra, [1000.5, 2016.5, 10000.5, 99999.5, 100000.5][: int(rng.integers(1, 6))]]
            )
        extra = extra[extra != np.floor(extra)]
        orders = np.unique(np.concatenate([DEFAULT_ORDERS, extra]))
        out.append((q, sig, orders))
    return out


def run(seed, N, mode, path):
    from accounting.rdp import exact_rdp_function, subsampled_gaussian_rdp, subsampled_gaussian_rdp_steps

    res = []
    for q, sig, orders in gen(seed, N, mode):
        item = {}
        try:
            item["steps"] = subsampled_gaussian_rdp_steps(q, sig, orders)
        except Exception as e:
            item["steps_exc"] = repr(e)
        try:
            c = subsampled_gaussian_rdp(q, sig, orders, steps=1)
            item["tot"] = c.rdp
            item["dropped"] = c.dropped
            c7 = subsampled_gaussian_rdp(q[0], sig[0], orders, steps=7)
            item["tot7"] = c7.rdp
            item["dropped7"] = c7.dropped
        except Exception as e:
            item["tot_exc"] = repr(e)
        try:
            f = exact_rdp_function(q, sig)
            if f is not None:
                frac = orders[orders != np.floor(orders)]
                ints = orders[orders == np.floor(orders)]
                subsets = [frac[::2], orders, np.unique(np.concatenate([ints[:5], frac[1::2]]))]
                ev = [f(o) for o in subsets]
                item["fn"] = [e.rdp for e in ev]
                item["fn_dropped"] = [e.dropped for e in ev]
        except Exception as e:
            item["fn_exc"] = repr(e)
        res.append(item)
    with open(path, "wb") as fh:
        pickle.dump(dict(seed=seed, N=N, mode=mode, res=res), fh)


def cmp(pa, pb):
    A, B = pickle.load(open(pa, "rb")), pickle.load(open(pb, "rb"))
    gen(A["seed"], A["N"], A["mode"])
    n_diff_cases, n_vals, n_diff_vals, lower, worst_rel, bad = 0, 0, 0, 0, 0.0, []
    other = []
    for k, (a, b) in enumerate(zip(A["res"], B["res"], strict=False)):
        if set(a) != set(b):
            other.append((k, "keys", sorted(a), sorted(b)))
            continue
        diff_here = False
        for key in a:
            va, vb = a[key], b[key]
            if key.endswith("exc") or key.startswith("dropped") or key == "fn_dropped":
                if va != vb:
                    other.append((k, key, va, vb))
                    diff_here = True
                continue
            arrs = zip(va, vb, strict=False) if key == "fn" else [(va, vb)]
            for x, y in arrs:
                x, y = np.asarray(x, float), np.asarray(y, float)
                n_vals += x.size
                d = (x.view(np.int64) != y.view(np.int64)) & ~(np.isnan(x) & np.isnan(y))
                if d.any():
                    diff_here = True
                    n_diff_vals += int(d.sum())
                    with np.errstate(all="ignore"):
                        rel = (y[d] - x[d]) / np.abs(x[d])  # new minus old, relative
                        ulps = np.abs(y[d].view(np.int64) - x[d].view(np.int64))
                    lo = y[d] < x[d]
                    lower += int(lo.sum())
                    if lo.any():
                        worst_rel = max(worst_rel, float(np.nanmax(-rel[lo])))
                    if len(bad) < 12:
                        idx = np.flatnonzero(d)
                        bad.append(
                            dict(
                                case=k,
                                key=key,
                                idx=[int(i) for i in np.unravel_index(idx[0], x.shape)],
                                old=float(x.flat[idx[0]]),
                                new=float(y.flat[idx[0]]),
                                max_ulps=int(ulps.max()),
                                max_rel=float(np.nanmax(np.abs(rel))),
                            )
                        )
        n_diff_cases += diff_here
    print(
        json.dumps(
            dict(
                mode=A["mode"],
                seed=A["seed"],
                cases=len(A["res"]),
                values=n_vals,
                differing_values=n_diff_vals,
                differing_cases=n_diff_cases,
                new_lower=lower,
                new_lower_max_rel=worst_rel,
                examples=bad,
                other=[str(o)[:400] for o in other[:10]],
            ),
            indent=1,
        )
    )


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        cmp(sys.argv[2], sys.argv[3])
