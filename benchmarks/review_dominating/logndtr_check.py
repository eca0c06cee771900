"""scipy's log_ndtr against mpmath: is the product's allowance (1e-11 absolute + 1e-12 relative in
the log) above the actual error on the whole range the pair uses?

    python benchmarks/review_dominating/logndtr_check.py
"""

import mpmath as mp
import numpy as np
from scipy.special import log_ndtr

mp.mp.dps = 50
xs = np.concatenate([-np.logspace(-3, 8, 3000), np.logspace(-3, 1.6, 1500), np.linspace(-40, 8, 4000)])
worst_ratio, worst_x = 0.0, None
for x in xs:
    got = float(log_ndtr(x))
    ref = mp.log(mp.ncdf(mp.mpf(float(x))))
    err = abs(mp.mpf(got) - ref)
    allow = 1e-11 + 1e-12 * abs(got)
    if ref != 0 and float(err / allow) > worst_ratio:
        worst_ratio, worst_x = float(err / allow), float(x)
print(f"largest |log_ndtr error| / allowance over {xs.size} points: {worst_ratio:.3g} at x = {worst_x:.6g}")
