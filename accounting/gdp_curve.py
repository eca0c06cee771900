"""The privacy profile of ``mu``-GDP, with rigorous upper and lower floating-point estimates.

One implementation shared by the certified side (:mod:`accounting.gaussian_pld`, which needs
``delta`` rounded *up* so that its epsilon is an upper bound) and the audit side
(:mod:`accounting.audit.stats`, which needs ``delta`` rounded *down* so that its epsilon is a lower
bound).

The profile of ``N(0, 1)`` vs ``N(mu, 1)`` (Balle & Wang 2018, Thm 8; Dong, Roth & Su 2022,
Cor. 1) is ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, decreasing in ``eps``.
It is evaluated in log space: with ``x = -eps/mu + mu/2`` and ``xp = -eps/mu - mu/2 <= 0``,
``la = log Phi(x)``, ``gap = la - eps - log Phi(xp) > 0`` and ``delta = e^la (1 - e^-gap)``.
``gap`` is not formed as a difference of the huge ``eps`` and ``log Phi(xp)`` (each ~``mu^2/2``):
with ``F(t) = log Phi(t) + t^2/2 = log(erfcx(-t/sqrt 2) / 2)`` and the exact identity
``(xp^2 - x^2)/2 = eps``, ``gap = F(x) - F(xp)``, both terms of moderate size (``F(x)`` is taken
as ``la + x^2/2`` when ``x > 0``, where it does not cancel).

Rounding bound.  scipy's ``log_ndtr`` and ``erfcx`` are accurate to a few ulps of their values.
The computed ``x`` and ``xp`` are off by at most 2 ulps of ``a = eps/mu + mu/2`` (``x`` may
cancel); that moves ``log Phi(x)`` by at most the error times the largest ``phi/Phi(t)`` on the
error interval (``<= -t + 1`` below 0, ``<= 2 phi(t) <= e^(-t^2/2)`` above, ``phi/Phi`` decreasing),
and ``F(t)`` by at most the error times ``F'(t) = phi/Phi(t) + t``, which lies in ``(0, 1)`` for
``t <= 0`` and below ``t + 1`` above (it is ``1 - Var(X | X <= t)`` integrated, increasing).  So
``la`` is within ``la_err = LOG_ERROR (|la| + 1) + 8 ulp(1) a sup(phi/Phi)`` and ``gap``
within ``LOG_ERROR (|F(x)| + |F(xp)| + 1) + 8 ulp(1) a (|x| + 2)`` of the exact values (a 4x
margin on the argument terms, ~1000 ulps on the rest).  Widening ``la`` and ``gap`` by these
amounts (up for the upper estimate, down for the lower) also absorbs the relative rounding of
the final ``exp``, ``expm1`` and product (a few ulps, against a factor ``e^(+-1e-13)``).

Where ``gap`` cancels (tiny ``mu``: the two terms agree to many digits), its error bound would
swamp it, and the bracket of :func:`_gap_bracket` (an integral form, relative width ~``eps``) is
intersected with it.  The estimates then bracket ``delta`` to ~1e-6 relative or better over
``mu`` in [1e-12, 1e9] and ``delta`` in [1e-300, 0.99] (tests/accounting/test_gdp_against_mpmath.py
checks both sides against 80-digit mpmath), which moves epsilon by < 1e-7 relative.
"""

from __future__ import annotations

import math

__all__ = ["LOG_ERROR", "gdp_delta_bounds", "gdp_delta", "gdp_delta_upper", "gdp_delta_lower"]

#: Relative error allowed for each log-space quantity (see the module docstring): ~1000 ulps.
LOG_ERROR = 1e-13
_ULP1 = 2.0**-52


def _log_terms(mu: float, eps: float) -> tuple[float, float, float, float]:
    """``(la, la_err, gap, gap_err)`` for finite ``mu > 0`` and ``eps >= 0`` (module docstring)."""
    from scipy.special import erfcx, log_ndtr

    a = eps / mu + mu / 2
    if not a < 1e300:  # out of range for erfcx/log: the trivial bracket delta in [0, 1]
        return 0.0, math.inf, 0.0, math.inf
    x, xp = -eps / mu + mu / 2, -a  # the two arguments of Phi; xp <= 0
    la = float(log_ndtr(x))
    if x > 1e150:  # gap >= x^2/2 - |F(xp)|: e^-gap is far below the smallest float
        return la, LOG_ERROR, math.inf, 0.0
    # F(t) = log Phi(t) + t^2/2 = log(erfcx(-t/sqrt 2)/2) and (xp^2 - x^2)/2 = eps exactly, so
    # gap = F(x) - F(xp): no difference of two huge numbers.
    log_cx_p = math.log(float(erfcx(-xp / math.sqrt(2))) / 2)
    la_plus = math.log(float(erfcx(-x / math.sqrt(2))) / 2) if x <= 0 else la + x * x / 2
    gap = la_plus - log_cx_p  # > 0 exactly; the log of the ratio of the two terms
    # x and xp are off by <= 2 ulps of a (x may cancel).  The derivative of F is in (0, 1) for
    # t <= 0 and (0, t + 1) above: hence the arg terms (4x margin).
    arg_err = 8 * _ULP1 * a
    # sup of phi/Phi over the argument's error interval: <= |t| + 1 below 0, <= e^(-t^2/2) above
    t_lo = x - arg_err
    slope = -t_lo + 1.0 if t_lo < 0 else math.exp(-t_lo * t_lo / 2)
    la_err = LOG_ERROR * (abs(la) + 1.0) + arg_err * slope
    gap_err = LOG_ERROR * (abs(la_plus) + abs(log_cx_p) + 1.0) + arg_err * (abs(x) + 2.0)
    return la, la_err, gap, gap_err


def _mills_plus_t(t: float) -> tuple[float, float]:
    """``m(t) = phi(t)/Phi(t) + t`` and a bound on the error of the computed value.

    ``phi/Phi = sqrt(2/pi) / erfcx(-t/sqrt 2)`` needs no large exponentials (a few ulps);
    the sum cancels for very negative ``t`` (``m ~ 1/|t|``), hence an absolute error bound
    proportional to ``|phi/Phi| + |t|`` (and ``m' < 1`` absorbs the rounding of ``t`` itself)."""
    from scipy.special import erfcx

    cx = float(erfcx(-t / math.sqrt(2))) if math.isfinite(t) else 0.0
    if not cx > 0:  # |t| beyond erfcx's range: no information (0 <= m)
        return 0.0, math.inf
    lam = math.sqrt(2 / math.pi) / cx
    return lam + t, LOG_ERROR * (abs(lam) + abs(t) + 1.0)


def _gap_bracket(mu: float, eps: float) -> tuple[float, float]:
    """Rigorous ``(low, high)`` for ``gap`` by its integral form, tight when ``mu`` is tiny.

    With ``x = -eps/mu`` and ``h = mu/2`` (so ``eps = -2 x h``),
    ``gap = log Phi(x+h) - log Phi(x-h) + 2 x h = integral over [x-h, x+h] of m(t) dt`` with
    ``m(t) = phi(t)/Phi(t) + t``.  ``m' = 1 - Var(X | X <= t)`` for standard normal ``X``, in
    ``(0, 1)``: ``m`` is increasing, so ``2h m(x-h) <= gap <= 2h m(x+h)``.  The relative width is
    about ``2h |x| = eps``, where the direct difference of logs loses everything to cancellation."""
    x, h = -eps / mu, mu / 2
    m_lo, e_lo = _mills_plus_t(x - h)
    m_hi, e_hi = _mills_plus_t(x + h)
    low = mu * max(0.0, m_lo - e_lo) * (1 - LOG_ERROR)
    high = mu * (m_hi + e_hi) * (1 + LOG_ERROR)
    return low, high


def _terms(mu: float, eps: float) -> tuple[float, float, float, float, float]:
    """``(la, la_err, gap_nearest, gap_low, gap_high)`` for finite ``mu > 0``: the log-difference
    form, intersected with the integral bracket where it cancels (both brackets are sound)."""
    la, la_err, gap, gap_err = _log_terms(mu, eps)
    gap_low, gap_high = gap - gap_err, gap + gap_err
    if 1e-10 * gap < gap_err < math.inf:
        int_low, int_high = _gap_bracket(mu, eps)
        gap_low, gap_high = max(gap_low, int_low), min(gap_high, int_high)
        if int_high - int_low < 2 * gap_err:  # the narrower bracket gives the nearest value
            gap = 0.5 * (int_low + int_high)
    return la, la_err, gap, gap_low, gap_high


def gdp_delta_bounds(mu: float, eps: float) -> tuple[float, float]:
    """``(lower, upper)`` with ``lower <= delta(eps) <= upper`` for ``mu``-GDP despite rounding."""
    if mu <= 0:
        return 0.0, 0.0
    if not math.isfinite(mu):
        return 1.0, 1.0
    if eps == math.inf:
        return 0.0, 0.0
    la, la_err, _, gap_low, gap_high = _terms(mu, eps)
    # The exact la is <= 0 (a log-probability): capping the widened value keeps it an upper bound
    # and keeps exp() from overflowing when the error bound is large.
    upper = min(1.0, math.exp(min(la + la_err, 0.0)) * -math.expm1(-gap_high))
    lower = 0.0 if gap_low <= 0 else math.exp(la - la_err) * -math.expm1(-gap_low)
    return max(0.0, lower), upper


def gdp_delta_upper(mu: float, eps: float) -> float:
    """An estimate ``>= delta(eps)`` of ``mu``-GDP (certified side: makes epsilon larger)."""
    return gdp_delta_bounds(mu, eps)[1]


def gdp_delta_lower(mu: float, eps: float) -> float:
    """An estimate ``<= delta(eps)`` of ``mu``-GDP (audit side: makes epsilon smaller)."""
    return gdp_delta_bounds(mu, eps)[0]


def gdp_delta(mu: float, eps: float) -> float:
    """Nearest estimate of ``delta(eps)`` (no widening; for root finding and display)."""
    if mu <= 0:
        return 0.0
    if not math.isfinite(mu):
        return 1.0
    if eps == math.inf:
        return 0.0
    la, _, gap, _, _ = _terms(mu, eps)
    if gap <= 0:  # only by rounding (the profile is >= 0)
        return 0.0
    return math.exp(la) * -math.expm1(-gap)
