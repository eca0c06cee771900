"""Exotic inputs in each tree; prints a digest line per call (values as hex + dropped/exception)."""

import hashlib
import warnings

import numpy as np  # noqa: E402 (after the path and warning set-up)

warnings.simplefilter("ignore")
from accounting.orders import DEFAULT_ORDERS  # noqa: E402 (after the path and warning set-up)
from accounting.rdp import exact_rdp_function, subsampled_gaussian_rdp, subsampled_gaussian_rdp_steps  # noqa: E402 (after the path and warning set-up)

O = np.unique(np.concatenate([DEFAULT_ORDERS, [1.0000001, 1.9999999, 2.0000001, 1e5 + 0.5, 999999.5]]))
cases = [
    (0.0, 1e10),
    (0.0, 1e200),
    (1.0, 1e10),
    (5e-324, 1e10),
    (5e-324, 1e300),
    (np.nextafter(1, 0), 1e10),
    (np.nextafter(1, 0), 1e300),
    (0.5, 1e154),
    (0.5, 1.3e154),
    (0.5, 1e155),
    (0.5, 1.7976931348623157e308),
    (0.3, 1e-160),
    (0.3, 1e-100),
    (0.5, 1e7),
    (0.5, 1.4142e7),
    (0.5, 1.5e7),
    (1e-300, 1e150),
    (0.9999999999, 1e8),
    (0.5000000001, 1e20),
    (0.4999999999, 1e20),
    (0.25, np.inf),
]
for q, s in cases:
    line = [f"q={q!r} sigma={s!r}"]
    for name, fn in [
        ("steps", lambda q=q, s=s: subsampled_gaussian_rdp_steps(q, s, O)),
        ("curve", lambda q=q, s=s: subsampled_gaussian_rdp(q, s, O, steps=3)),
        ("fn", lambda q=q, s=s: exact_rdp_function(q, s, steps=3)(O)),
    ]:
        try:
            r = fn()
            if name == "steps":
                line.append(name + ":" + hashlib.sha1(np.asarray(r).tobytes()).hexdigest()[:12])
            else:
                line.append(
                    name
                    + ":"
                    + hashlib.sha1(r.rdp.tobytes()).hexdigest()[:12]
                    + " dropped="
                    + str(len(r.dropped))
                    + hashlib.sha1(repr(r.dropped).encode()).hexdigest()[:8]
                )
        except Exception as e:
            line.append(name + ":EXC " + type(e).__name__ + " " + str(e)[:80])
    print(" | ".join(line))
