"""Helpers shared by the D2P2-SGD claim modules: the paper id and certified epsilon of a noise schedule."""

from __future__ import annotations

import numpy as np

from verification import properties as P

PAPER = "d2p2"


def _orders():
    try:
        from accounting.orders import DEFAULT_ORDERS

        return np.asarray(DEFAULT_ORDERS, dtype=float)
    except ImportError:
        return np.arange(2, 257, dtype=float)


def _eps_schedule(q: float, base: float, K: int, delta: float, schedule: str) -> tuple[float, str]:
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
