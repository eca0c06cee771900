"""``log Phi(x)`` rounded up, vectorised: the normal-CDF factor of every term of the fractional
series (:mod:`accounting._log_a_frac`).

Why not :func:`accounting.special.log_ndtr`: it calls ``math.erfc`` once per element (~0.2 us),
and a long heterogeneous schedule's fractional orders need ~70 000 of them (dp-accounting's grid
at T = 1000).  Here every element costs a dozen array operations, a few times less.

Method.  With ``phi`` the normal density and ``M(y) = Q(y) / phi(y)`` the Mills ratio
(``Q = 1 - Phi``), ``Phi(x) = phi(x) M(-x)``.  ``M`` has the Laplace form
``M(y) = int_0^inf exp(-y t - t^2/2) dt``, so ``M^(n)(y) = (-1)^n I_n(y)`` with
``I_n = int t^n exp(-y t - t^2/2) dt`` > 0, and integrating by parts gives
``I_(n+1) = n I_(n-1) - y I_n`` and ``y I_0 + I_1 = 1``.  ``M`` is tabulated with its Taylor
coefficients ``M^(n)/n!``, n < :data:`_TERMS`, on the nodes ``y_k = k/16`` of ``[0, 40]`` and
summed by Horner at ``d = y - y_k``, ``|d| <= 1/32``:

* truncation: ``|M^(n)(y)| d^n / n! <= int (t |d|)^n / n! exp(-y t - t^2/2) dt``, so the omitted
  terms are below ``M(y) E[(T/32)^10 e^(T/32) / 10!]`` (T with density proportional to
  ``exp(-y t - t^2/2)``, y >= 0; at y = 0, the worst case, the half-normal): < 4e-19 relative;
* nodes below 1: ``M(y_k) = sqrt(pi/2) erfc(y_k/sqrt 2) exp(y_k^2/2)`` (``y_k^2`` exact, the
  argument's rounding moves erfc by < ``y_k^2`` ulp) and the derivatives by the recurrence
  (forward: no cancellation for y < 1);
* nodes from 1 on: forward recurrence cancels there (``I_n`` is its minimal solution), so
  Miller's backward recurrence from n = :data:`_MILLER_FROM`, normalised by ``y I_0 + I_1 = 1``
  (its error falls like ``exp(-2 y sqrt n)``: below 1e-17 from y = 1).

Then ``log Phi(x) = log M(-x) - x^2/2 - log sqrt(2 pi)`` for x < 0 and ``log1p(-phi(x) M(x))``
for x >= 0 (``Q <= 1/2``: no cancellation).  Measured against 50-digit mpmath on (-40, 10): the
error is at most 1.8 units of ``eps max(1, |log Phi|)`` for x < 0 (``special.log_ndtr``, scalar
erfc: 1.9) and ``(3 + x^2/2) eps |log Phi|`` for x >= 0 (``x^2`` rounds in ``phi``).  The result
is then raised by ``4 eps max(1, |log Phi|)``, respectively ``(4 + x^2) eps |log Phi|``, so it is
an upper bound.  In the series every term enters with its absolute value, so a larger ``Phi``
only raises ``A``: by < 1e-15 relative where the term matters, inside
``_log_a_frac._FRAC_ROUNDING``.  ``tests/accounting/test_log_phi.py`` checks bound and size
against mpmath.

Outside (-40, 10): 0 for x >= 10 (true value > -1e-23), and for x <= -40 the asymptotic series
(relative error < 5e-20), raised by the same 4 eps max(1, |log Phi|) for its rounding; NaN gives
0, as the series' callers expect.
"""

from __future__ import annotations

import functools
import math

import numpy as np

#: log Phi(x) for x >= NDTR_ONE is replaced by 0 (true value is -Q(x) > -1e-23): an overestimate
#: of the term by a factor < 1 + 1e-23, conservative and far below rounding.
NDTR_ONE = 10.0
_NDTR_ASYMP = -40.0
# Asymptotic Mills series for x <= -40: Phi(x) = phi(x)/|x| sum_n (-1)^n (2n-1)!!/x^(2n), cut after
# n = 7 (error below the first omitted term, 15!!/x^16 < 5e-20 relative, alternating series).
_MILLS_ASYMP = np.array([1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0])
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_EPS = float(np.finfo(float).eps)
# Table: nodes k * _STEP on [0, _Y_MAX]; Taylor terms per node; Miller's start and its range.
_STEP = 1.0 / 16.0
_Y_MAX = 40.0
_TERMS = 10
_MILLER_BELOW = 1.0
_MILLER_FROM = 420


@functools.cache
def _mills_table() -> np.ndarray:
    """``M^(n)(y_k) / n!``, shape (_TERMS, nodes); ~3 ms, once per process."""
    y = np.arange(round(_Y_MAX / _STEP) + 1) * _STEP
    coef = np.empty((_TERMS, y.size))
    fact = np.array([math.factorial(n) for n in range(_TERMS)], dtype=float)
    low = y < _MILLER_BELOW
    yl = y[low]
    m0 = np.array([math.erfc(v * math.sqrt(0.5)) * math.exp(0.5 * v * v) for v in yl.tolist()])
    der = [m0 * math.sqrt(0.5 * math.pi)]
    der.append(yl * der[0] - 1.0)  # M' = y M - 1
    for n in range(1, _TERMS - 1):
        der.append(yl * der[n] + n * der[n - 1])  # M^(n+1) = y M^(n) + n M^(n-1)
    coef[:, low] = np.array(der) / fact[:, None]
    yh = y[~low]
    nxt, cur = np.zeros(yh.size), np.ones(yh.size)  # unnormalised I_(n+1), I_n
    kept = np.zeros((_TERMS, yh.size))
    for n in range(_MILLER_FROM, 0, -1):
        nxt, cur = cur, (nxt + yh * cur) / n  # I_(n-1) = (I_(n+1) + y I_n) / n
        if n - 1 < _TERMS:
            kept[n - 1] = cur
        far = (np.abs(cur) > 1e100) | (np.abs(cur) < 1e-100)
        if far.any():  # rescale (only the ratios matter): no overflow, no underflow
            scale = np.where(far, 1.0 / np.abs(cur), 1.0)
            nxt, cur, kept = nxt * scale, cur * scale, kept * scale
    norm = 1.0 / (yh * kept[0] + kept[1])
    sign = (-1.0) ** np.arange(_TERMS)
    coef[:, ~low] = kept * norm * (sign / fact)[:, None]
    coef.flags.writeable = False
    return coef


def _mills(y: np.ndarray) -> np.ndarray:
    """Mills ratio ``Q(y) / phi(y)`` for ``0 <= y <= 40`` (3 ulp)."""
    coef = _mills_table()
    k = np.rint(y * (1.0 / _STEP)).astype(np.intp)
    d = y - k * _STEP
    acc = coef[_TERMS - 1].take(k)  # a 1-d take per row: ~3x faster than coef[n, k]
    for n in range(_TERMS - 2, -1, -1):
        acc *= d
        acc += coef[n].take(k)
    return acc


def log_ndtr_upper(x: np.ndarray) -> np.ndarray:
    """An upper bound on ``log Phi(x)``, elementwise, within a few ulp of ``max(1, |log Phi|)``
    (module docstring); 0 for NaN.

    Args:
        x: a float array.

    Returns:
        A float array of ``x``'s shape.
    """
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    neg = (x < 0.0) & (x > _NDTR_ASYMP)
    if neg.any():
        xn = x[neg]
        v = np.log(_mills(-xn)) - 0.5 * xn * xn - _HALF_LOG_2PI
        out[neg] = v + 4.0 * _EPS * np.maximum(1.0, -v)
    pos = (x >= 0.0) & (x < NDTR_ONE)
    if pos.any():
        xp = x[pos]
        v = np.log1p(-np.exp(-0.5 * xp * xp - _HALF_LOG_2PI) * _mills(xp))
        out[pos] = v * (1.0 - (4.0 + xp * xp) * _EPS)
    low = x <= _NDTR_ASYMP
    if low.any():
        xl = x[low]
        r = 1.0 / (xl * xl)
        poly = np.polyval(_MILLS_ASYMP[::-1], r)
        v = -0.5 * xl * xl - np.log(-xl) - _HALF_LOG_2PI + np.log(poly)
        with np.errstate(invalid="ignore"):  # log Phi(-inf) = -inf stays
            out[low] = np.where(v > -np.inf, v + 4.0 * _EPS * np.maximum(1.0, -v), v)
    return out
