"""Edge inputs and monotonicity of the product's pair (run with PYTHONPATH=/work/wt/como:.).

PYTHONPATH=/work/wt/como:. python benchmarks/review_dominating/edges.py
"""

import math

import numpy as np

from accounting import hidden_state_dominating as hsd
from accounting.errors import InvalidParameter

base = dict(sample_rate=0.02, noise_multiplier=10.0, steps=150, c1=1.0, rho=1.0)
cases = [
    ("eps", -1.0),
    ("eps", float("nan")),
    ("eps", math.inf),
    ("sample_rate", 0.0),
    ("sample_rate", 1.5),
    ("sample_rate", float("nan")),
    ("noise_multiplier", 0.0),
    ("noise_multiplier", math.inf),
    ("noise_multiplier", -1.0),
    ("noise_multiplier", 1e-300),
    ("noise_multiplier", 1e300),
    ("steps", 0),
    ("steps", 2.5),
    ("steps", True),
    ("steps", 10**7),
    ("c1", 0.0),
    ("c1", math.inf),
    ("rho", -0.1),
    ("rho", math.inf),
    ("rho", float("nan")),
    ("rho", 1e200),
]
for name, v in cases:
    kw = dict(base)
    e = 2.0
    if name == "eps":
        e = v
    else:
        kw[name] = v
    for fn, arg in (("delta", e), ("epsilon", 1e-5)):
        f = hsd.dominating_pair_delta if fn == "delta" else hsd.dominating_pair_epsilon
        if fn == "epsilon" and name == "eps":
            continue
        try:
            out = f(arg, **kw)
            print(f"{fn}({name}={v!r}) -> {out!r}")
        except InvalidParameter as exc:
            print(f"{fn}({name}={v!r}) -> InvalidParameter: {exc}")
        except Exception as exc:  # noqa: BLE001
            print(f"{fn}({name}={v!r}) -> UNEXPECTED {type(exc).__name__}: {exc}")
for d in (0.0, 1.0, -1e-5, 5e-324, 1e-300, float("nan")):
    try:
        print(f"epsilon(delta={d!r}) -> {hsd.dominating_pair_epsilon(d, **base)!r}")
    except InvalidParameter as exc:
        print(f"epsilon(delta={d!r}) -> InvalidParameter: {exc}")
    except Exception as exc:  # noqa: BLE001
        print(f"epsilon(delta={d!r}) -> UNEXPECTED {type(exc).__name__}: {exc}")

# monotonicity: eps non-increasing in z, non-decreasing in rho
for rho in (0.0, 0.5, 10.0):
    zs = np.geomspace(2, 300, 60)
    es = [
        hsd.dominating_pair_epsilon(1e-5, sample_rate=0.02, noise_multiplier=z, steps=150, c1=1.0, rho=rho)
        for z in zs
    ]
    bad = [(zs[i], es[i], es[i + 1]) for i in range(len(zs) - 1) if es[i + 1] > es[i]]
    print(f"rho={rho}: eps(z) increases at {len(bad)} of {len(zs) - 1} steps {bad[:3]}")
rs = np.linspace(0, 20, 60)
es = [
    hsd.dominating_pair_epsilon(1e-5, sample_rate=0.02, noise_multiplier=50.0, steps=150, c1=1.0, rho=r)
    for r in rs
]
print("eps(rho) decreases at", sum(es[i + 1] < es[i] for i in range(len(rs) - 1)), "of", len(rs) - 1, "steps")
