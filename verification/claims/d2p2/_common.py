"""Helpers shared by the D2P2-SGD claim modules: the paper id and certified epsilon of a noise schedule."""

from __future__ import annotations

import numpy as np

from verification import properties as P

PAPER = "d2p2"


def _orders():
    from accounting.orders import DEFAULT_ORDERS

    return np.asarray(DEFAULT_ORDERS, dtype=float)


def eps_schedule(q: float, base: float, K: int, delta: float, schedule: str) -> tuple[float, str]:
    """Epsilon of K subsampled Gaussian steps under a named noise schedule, with its source line.

    ``inv-k`` and ``inv-sqrt-k`` shrink the variance as sigma^2 / k and sigma^2 / sqrt(k); anything
    else is constant.  Shared by the privacy-theorem claims that compare the schedules.
    """
    k = np.arange(1, K + 1, dtype=float)
    if schedule == "inv-k":
        z = base / np.sqrt(k)  # variance sigma^2 / k
    elif schedule == "inv-sqrt-k":
        z = base / k**0.25  # variance sigma^2 / sqrt(k)
    else:
        z = np.full(K, base)
    orders = _orders()
    rdp, src = P.schedule_rdp(q, z, orders)
    eps, src2 = P.eps_from_rdp(orders, rdp, delta)
    return eps, f"{src}; {src2}"


READ_ALG1 = "Alg. 1 as stated: per-sample normalised g_s/(||g_s|| + gamma)"
READ_UNBIASED = "g_k is an unbiased estimate of grad f (Section 2)"

UNBIASED_NOTE = (
    "Not the headline: Alg. 1 line 4 normalises each per-sample gradient, and the proofs replace the "
    "mean of the normalised gradients by the normalised mean (below eq. 16, eq. 28) and then use "
    "unclipped, unbiased g_k. Read literally as a premise ('the update direction is an unbiased "
    "estimate of grad f'), it needs E[(1/B) sum_s g_s/(||g_s|| + gamma)] = grad f(x) at every iterate: "
    "the left side has norm < 1 and vanishes where the normalised gradients cancel, so the premise "
    "holds almost nowhere (only where every per-sample gradient is equal and ||grad f|| = "
    "||grad f||/(||grad f|| + gamma), i.e. grad f = 0) and the theorem would say nothing."
)
