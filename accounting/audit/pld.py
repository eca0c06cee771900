"""A privacy-loss-distribution (PLD) *lower* bound for compositions of Poisson-subsampled Gaussians.

Instance: one differing example whose (clipped) contribution is the sensitivity 1, everything else
contributes 0; step k releases ``b_k + N(0, z_k^2)`` with ``b_k ~ Bern(q_k)`` under D' and
``N(0, z_k^2)`` under D.  This is exactly realised by DP-SGD (and DiceSGD with ``G <= C1``, and the
D2P2 projected instance), so its epsilon(delta) is a lower bound on theirs.

Why the computed delta(eps) is a lower bound on the instance's true delta(eps):

* The privacy loss ``L = log(dP/dQ)(y)`` of one step is monotone in ``y``, so the probability that
  ``L`` falls in ``[k h, (k+1) h)`` is a difference of Gaussian CDFs at the inverse images: the
  discretised PMF puts that probability at ``k h`` (rounding *down*).  Coupled sample by sample,
  the discretised composed loss is <= the true one, and ``delta(eps) = E_P[(1 - e^{eps - L})_+]``
  is non-decreasing in ``L``.
* Mass is only ever *dropped* (Gaussian tails beyond ~1e-15, composed tails below 1e-14); the
  integrand is non-negative, so dropping mass lowers delta.
* Rounding ``z_k`` *up* to a grid (to group a schedule's distinct steps) adds independent Gaussian
  noise, which is post-processing of the original step: it can only lower the true delta.
* FFT convolution has floating-point error; negative entries are clipped to 0 and a margin of
  ``1e-9`` per convolution is subtracted from delta before it is compared with the target.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import fft, optimize, special

__all__ = ["subsampled_gaussian_epsilon_lower", "LossPmf"]

_TAIL = 1e-15  # Gaussian tail mass dropped per step (safe: dropping lowers delta)
_TRIM = 1e-14  # composed tail mass dropped after each convolution (safe: lowers delta)


class LossPmf:
    """Discretised privacy-loss PMF: mass ``pmf[i]`` at loss ``(offset + i) * h``."""

    def __init__(self, offset: int, pmf: np.ndarray, h: float, convolutions: int = 0) -> None:
        self.offset = int(offset)
        self.pmf = pmf
        self.h = float(h)
        self.convolutions = convolutions

    def convolve(self, other: LossPmf) -> LossPmf:
        out = _fftconvolve(self.pmf, other.pmf)
        np.maximum(out, 0.0, out=out)
        return LossPmf(
            self.offset + other.offset, out, self.h, self.convolutions + other.convolutions + 1
        ).trimmed()

    def trimmed(self) -> LossPmf:
        c = np.cumsum(self.pmf)
        total = c[-1]
        lo = int(np.searchsorted(c, _TRIM))
        hi = int(np.searchsorted(c, total - _TRIM)) + 1
        lo = min(lo, len(self.pmf) - 1)
        hi = max(hi, lo + 1)
        return LossPmf(self.offset + lo, self.pmf[lo:hi].copy(), self.h, self.convolutions)

    def power(self, n: int) -> LossPmf:
        result: LossPmf | None = None
        base = self
        while n:
            if n & 1:
                result = base if result is None else result.convolve(base)
            n >>= 1
            if n:
                base = base.convolve(base)
        assert result is not None
        return result

    def delta(self, eps: float) -> float:
        """Lower bound on delta(eps) (the FFT margin already subtracted)."""
        losses = (self.offset + np.arange(self.pmf.size)) * self.h
        mask = losses > eps
        val = float(np.sum(self.pmf[mask] * -np.expm1(eps - losses[mask])))
        return val - 1e-9 * self.convolutions


def _fftconvolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Full linear convolution of two non-negative vectors via real FFTs."""
    n = a.size + b.size - 1
    size = fft.next_fast_len(n, real=True)
    return fft.irfft(fft.rfft(a, size) * fft.rfft(b, size), size)[:n]


def _interval_mass(a: np.ndarray, b: np.ndarray, mean: float, s: float) -> np.ndarray:
    """P[a <= Y < b] for Y ~ N(mean, s^2), accurate in both tails."""
    za, zb = (a - mean) / s, (b - mean) / s
    upper = za > 0
    left = special.ndtr(zb) - special.ndtr(za)
    right = special.ndtr(-za) - special.ndtr(-zb)
    return np.maximum(np.where(upper, right, left), 0.0)


def _step_pmf(q: float, z: float, h: float, direction: str) -> LossPmf:
    """Rounded-down loss PMF of one subsampled-Gaussian step (sensitivity 1, noise z)."""
    s = z
    # Outside [y_lo, y_hi] (Gaussian tails beyond 8.5 sd, < 1e-16) the mass is not dropped but
    # put in the extreme low-loss cell, whose loss is <= 0; there (1 - e^(eps - L))_+ = 0 for
    # every eps >= 0, so delta(eps) -- the only thing the lower bound reads -- is unaffected.
    y_lo = -8.5 * s
    y_hi = 1.0 + 8.5 * s
    log1mq = math.log1p(-q) if q < 1 else -math.inf

    def loss(y):
        # log(1 - q + q exp((2y - 1)/(2 s^2)))
        t = (2.0 * y - 1.0) / (2.0 * s * s)
        if q >= 1:
            return t
        return np.logaddexp(log1mq, math.log(q) + t)

    def inv(l):
        # y with loss(y) = l  (for l > log(1-q))
        if q >= 1:
            return s * s * l + 0.5
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            x = np.expm1(l) + q  # e^l - (1 - q)
            small = np.where(x > 0, np.log(np.maximum(x, 1e-300)), -np.inf)
            # for large l, log(e^l - (1 - q)) = l + log1p(-(1 - q) e^-l), without overflow
            big = l + np.log1p(-(1.0 - q) * np.exp(-np.maximum(l, 1.0)))
            logx = np.where(l > 1.0, big, small)
            return np.where(np.isfinite(logx), s * s * (logx - math.log(q)) + 0.5, -np.inf)

    l_min = float(loss(np.array(y_lo)))
    l_max = float(loss(np.array(y_hi)))
    k_lo = math.floor(l_min / h)
    k_hi = math.floor(l_max / h)
    k = np.arange(k_lo, k_hi + 1)
    edges = k * h
    ya = inv(edges)
    yb = inv(edges + h)
    if direction == "add":
        # P = (1-q) N(0, s^2) + q N(1, s^2); L increasing in y; lowest cell takes everything below.
        ya = ya.copy()
        ya[0] = -np.inf
        yb = np.minimum(yb, y_hi)
        mass = (1 - q) * _interval_mass(ya, yb, 0.0, s) + q * _interval_mass(ya, yb, 1.0, s)
        return LossPmf(k_lo, mass, h).trimmed()
    # remove: P = N(0, s^2), loss is -loss(y): decreasing in y.  -L in [k h, (k+1) h) <=> y in [ya, yb);
    # L in (-(k+1) h, -k h]; round down to -(k+1) h.
    yb = yb.copy()
    yb[-1] = np.inf if q < 1 else yb[-1]
    ya = np.maximum(ya, y_lo)
    mass = _interval_mass(ya, yb, 0.0, s)
    pmf = mass[::-1]
    return LossPmf(-(k_hi + 1), pmf, h).trimmed()


#: Smallest noise multiplier the lower bound evaluates (smaller ones are raised to it, soundly).
_Z_FLOOR = 1e-4

#: Most cells of one step's loss PMF (the grid h is coarsened to respect it; still a lower bound).
_MAX_STEP_CELLS = 200_000


def _loss_span(q: float, z: float) -> float:
    """Width of the loss range that :func:`_step_pmf` discretises (y within 8.5 sd)."""
    t_lo = (2.0 * (-8.5 * z) - 1.0) / (2.0 * z * z)
    t_hi = (2.0 * (1.0 + 8.5 * z) - 1.0) / (2.0 * z * z)
    if q >= 1:
        return t_hi - t_lo
    log1mq, lq = math.log1p(-q), math.log(q)
    return float(np.logaddexp(log1mq, lq + t_hi) - np.logaddexp(log1mq, lq + t_lo))


def _groups(sample_rates: np.ndarray, noise: np.ndarray, ratio: float) -> list[tuple[float, float, int]]:
    """Group steps after rounding each z up to the geometric grid ratio**j (post-processing)."""
    zr = ratio ** np.ceil(np.log(noise) / math.log(ratio) - 1e-12)
    zr = np.maximum(zr, noise)
    keys: dict[tuple[float, float], int] = {}
    for q, z in zip(sample_rates.tolist(), zr.tolist(), strict=True):
        keys[(q, z)] = keys.get((q, z), 0) + 1
    return [(q, z, n) for (q, z), n in keys.items()]


def _composed(groups, h: float, direction: str) -> LossPmf:
    total: LossPmf | None = None
    for q, z, n in groups:
        part = _step_pmf(q, z, h, direction).power(n)
        total = part if total is None else total.convolve(part)
    assert total is not None
    return total


def subsampled_gaussian_epsilon_lower(
    sample_rates,
    noise_multipliers,
    delta: float,
    *,
    h: float | None = None,
    max_groups: int = 48,
    progress: Any = None,
) -> float:
    """Deterministic lower bound on epsilon(delta) of the composed subsampled-Gaussian instance.

    ``sample_rates``/``noise_multipliers``: per-step arrays (or scalars with ``noise_multipliers``
    an array).  Distinct multipliers are rounded up to a geometric grid of at most ~``max_groups``
    values (valid: extra noise is post-processing).  Both neighbour orders (add and remove) are
    computed; the instance's epsilon is at least the larger.
    Result = sup{eps : delta_lower(eps) > delta} (rounded down by bisection).
    ``h`` is the loss grid (default ``1e-4 max(1, 1/min z)``).
    Multipliers below ``_Z_FLOOR`` (1e-4) are raised to it: the result stays a lower bound (extra
    noise is post-processing), and at z = 1e-4 the instance's epsilon is already ~1e8 or more.
    ``progress``: a tqdm-like bar, advanced by one as each of the two directions is composed.
    """
    # More noise is post-processing (add independent N(0, z'^2 - z^2)), so a lower bound for the
    # instance with z raised to _Z_FLOOR is one for z too; below it z^2 underflows the loss range.
    z = np.maximum(np.atleast_1d(np.asarray(noise_multipliers, dtype=float)), _Z_FLOOR)
    q = np.broadcast_to(np.asarray(sample_rates, dtype=float), z.shape)
    if h is None:
        # the per-step loss range grows like 1/z^2; a coarser grid keeps the arrays small where
        # epsilon is large anyway (the rounding costs at most T*h in epsilon)
        h = 1e-4 * max(1.0, 1.0 / float(np.min(z)))
    if np.unique(z).size > 1 or np.unique(q).size > 1:
        # geometric grid with at most ~max_groups distinct values (rounding z up: post-processing)
        ratio = max(1.002, float(np.max(z) / np.min(z)) ** (1.0 / max_groups))
        groups = _groups(q, z, ratio)
    else:
        groups = [(float(q[0]), float(z[0]), z.size)]
    # A coarser grid is still a lower bound (losses are rounded down); cap the per-step support.
    span = max(_loss_span(gq, gz) for gq, gz, _ in groups)
    h = max(h, span / _MAX_STEP_CELLS)
    best = 0.0
    for direction in ("add", "remove"):
        pmf = _composed(groups, h, direction)
        if progress is not None:
            progress.update(1)
        if pmf.delta(0.0) <= delta:
            continue
        top = float((pmf.offset + pmf.pmf.size) * h)
        if pmf.delta(top) > delta:  # cannot happen: delta(eps) = 0 beyond the largest loss
            best = max(best, top)
            continue
        root = optimize.brentq(lambda e, p=pmf: p.delta(e) - delta, 0.0, top, xtol=1e-10)
        e = root
        while pmf.delta(e) <= delta and e > 0:
            # step down by at least one ulp: at e ~ 1e8, e - 1e-9 == e and this looped forever
            e = min(e - 1e-9, float(np.nextafter(e, -np.inf)) - abs(e) * 1e-12)
        best = max(best, max(0.0, e))
    return float(best)
