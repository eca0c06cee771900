"""Independent reference codes for the Clip21-SGD2M reductions (``_reductions.py``).

Heterogeneous quadratic clients, Polyak's heavy ball and Clip21-GD, written without any line of
``verification.simulate`` or ``dptheory.optim``, plus the deviation ratio the searches maximise.

:class:`QuadClients` is the list of per-client gradient functions, and also evaluates all of them
at once (``all_at``) with one stacked matrix product: the adversarial searches run thousands of
60-round recurrences, where n separate small products per round cost most of the time. The
stacked product multiplies each client's own matrix and vector exactly as ``a @ (x - b)`` does
(tests/verification/test_clip21_references.py checks bit equality), so the searches report the same numbers.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

RTOL = 1e-9


@lru_cache(maxsize=256)
def _quad_base(d: int, n: int, seed: int):
    rng = np.random.default_rng(seed * 7919 + 31 * d + n)
    mats = []
    for _ in range(n):
        q = rng.normal(size=(d, d))
        mats.append(q @ q.T / d + 0.1 * np.eye(d))
    units = rng.normal(size=(n, d))
    L = max(float(np.linalg.eigvalsh(a).max()) for a in mats)
    stacked = np.stack(mats)
    stacked.flags.writeable = False  # shared by every call through the cache
    return tuple(mats), units, L, stacked


class QuadClients(list):
    """The clients' gradient functions ``x -> A_i (x - b_i)``, in client order, and all at once."""

    def __init__(self, mats: tuple[np.ndarray, ...], cents: list[np.ndarray], stacked: np.ndarray) -> None:
        super().__init__(lambda x, a=a, b=b: a @ (x - b) for a, b in zip(mats, cents, strict=True))
        self._a = stacked
        self._b = np.stack(cents)

    def all_at(self, x: np.ndarray) -> np.ndarray:
        """Row i is client i's gradient at x, bit for bit ``self[i](x)``."""
        return np.matmul(self._a, (x - self._b)[:, :, None])[:, :, 0]


def quad_clients(d: int, n: int, spread: float, seed: int = 0):
    """n heterogeneous quadratics f_i = 1/2 (x - b_i)^T A_i (x - b_i) in R^d; returns (grads, L, x*)."""
    mats, units, L, stacked = _quad_base(d, n, seed)
    cents = [spread * u for u in units]
    a_bar = sum(mats) / n
    x_star = np.linalg.solve(a_bar, sum(a @ b for a, b in zip(mats, cents, strict=True)) / n)
    return QuadClients(mats, cents, stacked), L, x_star


def mean_gradient(grads):
    """x -> (1/n) sum_i grad f_i(x), summed in client order (with ``all_at`` when it is there)."""
    n = len(grads)
    if hasattr(grads, "all_at"):
        return lambda x: sum(grads.all_at(x)) / n
    return lambda x: sum(f(x) for f in grads) / n


def polyak_heavy_ball(grad, y0: np.ndarray, alpha: float, momentum: float, steps: int) -> np.ndarray:
    """Polyak (1964): y_{k+1} = y_k - alpha grad(y_k) + momentum (y_k - y_{k-1}), y_{-1} = y_0."""
    prev, y = y0.copy(), y0.copy()
    out = [y.copy()]
    for _ in range(steps):
        prev, y = y, y - alpha * grad(y) + momentum * (y - prev)
        out.append(y.copy())
    return np.array(out)


def clip21_gd(grads, x0: np.ndarray, gamma: float, tau: float, steps: int) -> np.ndarray:
    """Clip21-GD (Khirirat et al. 2023, EF21 with clipping): g_i += clip(grad f_i(x) - g_i); g = mean g_i.

    Written with the server direction recomputed as the mean of the client shifts, not updated
    incrementally as in the restored Clip21-SGD2M, so the two codes share no line.
    """
    n = len(grads)
    x = x0.astype(float).copy()
    shifts = np.zeros((n, x.size))
    out = [x.copy()]
    for _ in range(steps):
        x = x - gamma * shifts.mean(axis=0)
        at_x = grads.all_at(x) if hasattr(grads, "all_at") else [f(x) for f in grads]
        for i in range(n):
            diff = at_x[i] - shifts[i]
            norm = float(np.sqrt(diff @ diff))
            shifts[i] = shifts[i] + (diff if norm <= tau else diff * (tau / norm))
        out.append(x.copy())
    return np.array(out)


def relative_deviation(a: np.ndarray, b: np.ndarray) -> float:
    """max_t ||a_t - b_t|| / (RTOL (1 + max_t ||b_t||)); nan when either run left the floats."""
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("nan")
    scale = 1.0 + float(np.linalg.norm(b, axis=1).max())
    return float(np.linalg.norm(a - b, axis=1).max()) / (RTOL * scale)
