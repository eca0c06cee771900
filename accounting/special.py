"""``gammaln``, ``gammasgn`` and ``log_ndtr`` without importing :mod:`scipy.special`.

Why: ``import scipy.special`` pulls scipy's array-API layer (``numpy.f2py``, ``numpy.testing``,
``importlib.metadata``...), about 0.5 s of CPU, which was most of the start-up of a static
``dptheory calibrate``.  The RDP code needs only these three functions (its fractional series
takes ``log Phi`` from the vectorised :mod:`accounting._log_phi`; :func:`log_ndtr` serves the rest).

Numerics (soundness: the RDP code's rounding allowances were set with scipy's values, so these
must be as accurate).  ``tests/accounting/test_special.py`` checks both libraries against 40-digit mpmath
over the whole range the RDP code uses, extremes included, and that the RDP curves computed
with either agree to 1e-15 in the per-step ``log A`` (a tenth of ``accounting._log_a_frac._FRAC_ROUNDING``):

* :func:`gammaln` -- ``log|Gamma(x)|``, measured within 4 ulp of ``max(1, |lgamma|)`` (scipy: 3).
  - ``x >= 13``: Stirling's series ``(x - 1/2) log x - x + log(2 pi)/2 + sum_k B_2k / (2k (2k-1)
    x^(2k-1))`` cut after k = 7; the series encloses lgamma for x > 0, so the remainder is below
    the first omitted term, ``< 6e-19`` at x = 13 (an ulp of lgamma(13) ~ 20 is 3.6e-15).
    Cephes' ``lgam``, which scipy uses, evaluates the same expansion for ``x >= 13`` (with a
    fitted polynomial for the correction), and the results agree to an ulp.
  - ``|x| < 13``: ``log|math.gamma(x)|`` (an absolute error of a few ulp of 1); ``-log|x|``
    below ``2^-56``, where ``math.gamma`` could overflow and ``euler_gamma * x`` is below an ulp
    of the result.  Evaluated once per distinct argument (few per table), so the loop is cheap.
  - ``x <= -13``: the reflection formula ``log pi - log|sin(pi r)| - lgamma(1 - x)`` with
    ``r = x - round(x)`` (exact), as Cephes does.
* :func:`gammasgn` -- the sign of Gamma: ``+1`` for ``x > 0``, ``(-1)^ceil(-x)`` below 0;
  ``nan`` at the poles (non-positive integers, ``-inf``), matching scipy 1.17.
* :func:`log_ndtr` -- ``log Phi(x)``.  With ``t = x / sqrt 2``: ``log1p(-erfc(t)/2)`` for
  ``x >= -1`` (the formula scipy uses there); ``log(erfc(-t)/2)`` for ``-20 <= x < -1`` (no
  cancellation: ``Phi <= 0.16``); below -20, where ``erfc`` approaches underflow, the Mills-ratio series
  ``Phi(x) = phi(x)/|x| sum_n (-1)^n (2n-1)!!/x^(2n)`` cut after n = 20, whose remainder is below
  the first omitted term, ``41!!/20^42 < 1e-29`` relative.  ``math.erfc`` is per element (~0.2 us),
  and importing ``scipy.special`` costs ~0.4 s of CPU, so the path is chosen by the size of
  the argument alone: arrays of at most :data:`NDTR_LOOP_MAX` elements (every call a static
  calibration makes, ~67 000 at most) take the loop, larger ones scipy's vectorised
  ``log_ndtr``, imported then.  The two agree to ~1e-14 relative (both within a few ulp of the
  true value, ``tests/accounting/test_special.py``), far inside the RDP code's rounding allowances; since the
  choice depends on the input only, the same call returns the same bits in every process,
  whatever ran before it.  No state is kept: thread-safe.
"""

from __future__ import annotations

import math

import numpy as np

#: Below this argument Stirling's series is not used (Cephes' threshold as well).
_STIRLING_FROM = 13.0
#: B_2k / (2k (2k-1)) for k = 1..7 (Bernoulli numbers B_2 = 1/6 ... B_14 = 7/6).
_STIRLING = (
    1.0 / 12.0,
    -1.0 / 360.0,
    1.0 / 1260.0,
    -1.0 / 1680.0,
    1.0 / 1188.0,
    -691.0 / 360360.0,
    1.0 / 156.0,
)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)
#: Below this |x|, ``lgamma(x) = -log|x| - euler_gamma x + O(x^2)`` equals ``-log|x|`` in doubles.
_TINY = 2.0**-56


def _stirling(x: np.ndarray) -> np.ndarray:
    """lgamma for finite ``x >= 13`` (see the module docstring)."""
    rx = 1.0 / x
    z = rx * rx
    s = _STIRLING[-1]
    for c in _STIRLING[-2::-1]:
        s = c + z * s
    return (x - 0.5) * np.log(x) - x + _HALF_LOG_2PI + s * rx


def _small(v: float) -> float:
    """lgamma for ``|v| < 13`` via ``math.gamma``; ``inf`` at the poles."""
    if v == math.floor(v) and v <= 0.0:
        return math.inf
    if abs(v) < _TINY:
        return -math.log(abs(v))
    return math.log(abs(math.gamma(v)))


def gammaln(x: np.ndarray | float) -> np.ndarray:
    """``log|Gamma(x)|`` elementwise, a float array of ``x``'s shape (a 0-d array for scalars).

    ``inf`` at the poles (non-positive integers) and at ``+-inf`` except ``-inf`` -> ``-inf``,
    ``nan`` for ``nan``: scipy's conventions.
    """
    x = np.asarray(x, dtype=float)
    with np.errstate(all="ignore"):
        return _gammaln(x.reshape(-1)).reshape(x.shape)


def _gammaln(x: np.ndarray) -> np.ndarray:
    # One Stirling pass over the whole array (reflected arguments included), then the few
    # |x| < 13 entries one by one: the RDP tables call this on thousands of arguments.
    refl = x <= -_STIRLING_FROM
    any_refl = bool(refl.any())
    y = np.where(refl, 1.0 - x, x) if any_refl else x
    out = _stirling(np.maximum(y, _STIRLING_FROM))  # +-inf and nan are set below
    if any_refl:
        xn = x[refl]
        r = np.abs(xn - np.round(xn))  # exact; 0 at the poles (every |x| >= 2^52 is one)
        out[refl] = np.where(r == 0.0, np.inf, _LOG_PI - np.log(np.sin(math.pi * r)) - out[refl])
    small = np.flatnonzero(np.abs(x) < _STIRLING_FROM)
    if small.size:
        # Per distinct value: the fractional-order tables repeat a few orders over every step
        # (90 000 entries, ~100 distinct values); the values are the same as element by element.
        vals, inv = np.unique(x[small], return_inverse=True)
        out[small] = np.array([_small(v) for v in vals.tolist()])[inv.reshape(-1)]
    if not np.isfinite(x).all():
        out[np.isposinf(x)] = np.inf
        out[np.isneginf(x)] = -np.inf
        out[np.isnan(x)] = np.nan
    return out


def gammasgn(x: np.ndarray | float) -> np.ndarray:
    """Sign of ``Gamma(x)`` elementwise: 1 for ``x > 0`` (and ``+0``), -1 for ``-0``,
    ``(-1)^ceil(-x)`` for negative non-integers, ``nan`` at negative integers, ``-inf``, ``nan``."""
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore"):
        fl = np.floor(x)
        half = 0.5 * fl
        sgn = np.where((x < 0.0) & (np.floor(half) != half), -1.0, 1.0)  # floor(x) odd
        special = ((x <= 0.0) & (x == fl)) | np.isnan(x)  # zeros, poles, -inf, nan
        if special.any():
            sgn = np.where(special, np.nan, sgn)
            zero = x == 0.0
            sgn = np.where(zero, np.copysign(1.0, x), sgn)
    return sgn


#: Largest argument (in elements) served by the per-element ``math.erfc`` loop (~0.2 us an
#: element, so at most ~30 ms); larger arrays go to scipy, whose import (~0.4 s) they amortise.
NDTR_LOOP_MAX = 1 << 17
_SQRT1_2 = math.sqrt(0.5)
_NDTR_SERIES_BELOW = -20.0
#: (-1)^n (2n-1)!! for n = 0..20, the Mills-ratio series' numerators.
_MILLS = np.array([(-1.0) ** n * math.prod(range(1, 2 * n, 2)) for n in range(21)])


def _erfc(t: np.ndarray) -> np.ndarray:
    """``math.erfc`` elementwise on a 1-d array (numpy has no erfc)."""
    return np.fromiter(map(math.erfc, t.tolist()), dtype=float, count=t.size)


def log_ndtr(x: np.ndarray | float) -> np.ndarray:
    """``log Phi(x)``, Phi the standard normal CDF, elementwise (``-inf`` at ``-inf``).

    Args:
        x: any array-like of floats.

    Returns:
        A float array of ``x``'s shape; the path (loop or scipy) depends on ``x.size`` only.
    """
    x = np.asarray(x, dtype=float)
    if x.size > NDTR_LOOP_MAX:
        from scipy import special  # vectorised; its import is amortised (module docstring)

        return np.asarray(special.log_ndtr(x), dtype=float)
    out = np.empty(x.shape)
    series = x < _NDTR_SERIES_BELOW
    upper = x >= -1.0
    lower = ~series & ~upper  # also nan
    if upper.any():  # log Phi = log1p(-Q), Q = erfc(t)/2 <= 0.85
        out[upper] = np.log1p(-0.5 * _erfc(x[upper] * _SQRT1_2))
    if lower.any():  # Phi <= 0.16: no cancellation in the log
        out[lower] = np.log(0.5 * _erfc(-x[lower] * _SQRT1_2))
    if series.any():
        xs = x[series]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            r = 1.0 / (xs * xs)
            poly = np.polyval(_MILLS[::-1], r)
            val = -0.5 * xs * xs - np.log(-xs) - _HALF_LOG_2PI + np.log(poly)
        out[series] = np.where(np.isneginf(xs), -np.inf, val)
    return out
