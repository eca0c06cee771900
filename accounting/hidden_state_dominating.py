"""DiceSGD's certified (eps, delta) from a one-dimensional dominating pair of its conservation law.

Derivation: docs/hidden-state.md, "The certified bound outside the flush regime: a one-dimensional
dominating pair", steps C1-C5.  It keeps K1-K5 of the conservation regime (for a fixed bit vector
of the differing example with n inclusions, the releases are an adaptive Gaussian composition whose
total squared shift is at most ``S(n)`` along every history) and replaces the Renyi step K6-K7: the
likelihood ratio of each bit vector is below a lognormal in convex order (a GDP filter), and the
prior-weighted sum of those ratios is below their comonotone sum.  So for every ``gamma = e^eps >= 1``
both hockey-stick divergences of DiceSGD are at most those of

    P* = sum_n Bin(n; T, q) N(mu_n, 1)   against   Q* = N(0, 1),   mu_n = (sqrt(n) + n rho / C1) / z,

``mu_n`` inflated by the conservation module's :data:`FLOAT_MARGIN` on ``S(n)``.  The likelihood ratio
``L(x) = sum_n pi_n exp(mu_n x - mu_n^2 / 2)`` of that pair is increasing, so each divergence is a
Gaussian tail sum at the point where ``L = gamma`` (resp. ``1/gamma``); no quadrature.

Every number is evaluated outward: the pair is defined by the float ``mu_n`` rounded up (a larger
``mu_n`` only enlarges the pair in convex order), the binomial log-pmf is bracketed by its lgamma
rounding, the threshold is bracketed by points at which ``L`` is certified on the right side of
``gamma``, the positive tail is rounded up and the subtracted one down (``log_ndtr`` with a margin far
above its error), and the epsilon returned is one at which that rounded-up delta is verified.  Where
a quantity would overflow the bound is ``delta = 1`` (``eps = inf``), never a wrong finite number.
"""

from __future__ import annotations

import math

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter
from accounting.hidden_state_conservation import FLOAT_MARGIN, MAX_STEPS
from accounting.rounding import ULP

__all__ = ["dominating_pair_delta", "dominating_pair_epsilon", "shifts"]

#: Beyond this a shift's square overflows; the pair is then not evaluated (delta = 1, eps = inf).
_MU_CAP = 1e150
#: Allowance on a computed ``log_ndtr``: scipy evaluates it through ``erfc``/``erfcx`` (relative error
#: documented below 6e-14 for Cephes' erfc, about 1e-13 for Faddeeva's erfcx) and ``-x^2/2`` (a few ulps
#: of x^2); 1e-11 absolute plus 1e-12 relative in the log dominates both by two orders of magnitude.
_LOG_ABS, _LOG_REL = 1e-11, 1e-12
_TINY = 5e-324
_INV_SQRT_2PI = 0.3989422804014327
#: Binomial terms this far (in log) below the largest are dropped from the pair and charged in full.
_DROP_BELOW = 750.0


def shifts(noise_multiplier: float, steps: int, c1: float, rho: float) -> np.ndarray:
    """``mu_n = sqrt(S(n) (1 + FLOAT_MARGIN)) / sigma1 = (sqrt(n) + n rho/C1) sqrt(1 + FLOAT_MARGIN) / z``,
    n = 0..T, each rounded up (six roundings of positive terms, 16 ulps)."""
    n = np.arange(steps + 1, dtype=float)
    with np.errstate(over="ignore"):
        mu = (np.sqrt(n) + n * (rho / c1)) / noise_multiplier * math.sqrt(1.0 + FLOAT_MARGIN)
    return mu * (1.0 + 16 * ULP)


def _log_binomial_pmf_bounds(steps: int, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds on ``log Bin(n; T, q)``, n = 0..T: each lgamma sum moved by 16 ulps of the
    magnitude of its terms (scipy's lgamma is accurate to a few ulps)."""
    from scipy.special import gammaln

    if q >= 1.0:
        out = np.full(steps + 1, -math.inf)
        out[-1] = 0.0
        return out, out.copy()
    n = np.arange(steps + 1, dtype=float)
    lq, l1q = math.log(q), math.log1p(-q)
    g_t, g_n, g_rest = float(gammaln(steps + 1.0)), gammaln(n + 1.0), gammaln(steps - n + 1.0)
    logpmf = g_t - g_n - g_rest + n * lq + (steps - n) * l1q
    pad = 16 * ULP * (g_t + g_n + g_rest + n * abs(lq) + (steps - n) * abs(l1q) + 1.0)
    return logpmf - pad, logpmf + pad


def _lse(x: np.ndarray) -> float:
    m = float(np.max(x))
    if not math.isfinite(m):
        return m
    return m + math.log(float(np.sum(np.exp(x - m))))


class _Pair:
    """The pair (P*, Q*) for fixed shifts and binomial weights, with float and outward evaluations."""

    def __init__(self, mu: np.ndarray, lo: np.ndarray, hi: np.ndarray):
        # Binomial terms below e^-750 of the largest (each under the smallest double) are dropped from
        # P*: H(P* || Q*) <= H(P_in || Q*) + P_out(all) and H(Q* || P*) <= H(Q* || P_in), with P_in
        # the sub-probability of the kept terms; at T = 1e6 this keeps ~1e4 of the 1e6 terms.
        keep = hi >= np.max(hi) - _DROP_BELOW
        # a log-sum-exp of up to T + 1 terms: the sum of positive terms rounds by (T + 1) ulps, each
        # exp and the log by a few more, the final addition of the maximum by an ulp of the result
        self.sum_slack = (mu.size + 8) * ULP
        out = _lse(hi[~keep]) if not np.all(keep) else -math.inf
        self.log_out = out + self._slack(out)
        kept = keep.copy()
        kept[0] = False
        self.mu, self.lo, self.hi = mu[kept], lo[kept], hi[kept]
        self.pi0_lo, self.pi0_hi = (float(lo[0]), float(hi[0])) if keep[0] else (-math.inf, -math.inf)
        half = self.mu * self.mu / 2.0
        self.half_lo, self.half_hi = half * (1 - 2 * ULP), half * (1 + 2 * ULP)
        self.base = (self.lo + self.hi) / 2.0 - half
        self.absent = np.isneginf(self.hi)  # pi_n = 0 (q = 1): the term is 0 whatever the exponent

    def _slack(self, v: float) -> float:
        return self.sum_slack + 8 * ULP * (1.0 + abs(v)) if math.isfinite(v) else 0.0

    def log_ratio(self, x: float) -> float:
        """``log L(x)`` in plain floating point (to locate the threshold)."""
        with np.errstate(invalid="ignore"):
            rest = _lse(np.where(self.absent, -math.inf, self.base + self.mu * x))
        return float(np.logaddexp((self.pi0_lo + self.pi0_hi) / 2.0, rest))

    def log_ratio_bounds(self, x: float) -> tuple[float, float]:
        """Certified ``lo <= log L(x) <= hi``: each exponent moved by 4 ulps of its terms' magnitudes."""
        mx = self.mu * x
        size = np.abs(self.hi) + np.abs(mx) + self.half_hi
        with np.errstate(invalid="ignore"):
            up = self.hi + mx - self.half_lo + 4 * ULP * size
            dn = self.lo + mx - self.half_hi - 4 * ULP * size
        up, dn = np.where(self.absent, -math.inf, up), np.where(self.absent, -math.inf, dn)
        hi, lo = _lse(np.append(up, self.pi0_hi)), _lse(np.append(dn, self.pi0_lo))
        return lo - self._slack(lo), hi + self._slack(hi)

    def _root(self, target: float) -> float:
        """A float ``x`` with ``log L(x) ~ target`` (-inf / +inf when none is within 1e307)."""
        from scipy.optimize import brentq

        f = lambda x: self.log_ratio(x) - target  # noqa: E731
        lo, hi = -1.0, 1.0
        while f(lo) > 0:
            if lo < -1e306:
                return -math.inf
            lo *= 16.0
        while f(hi) < 0:
            if hi > 1e306:
                return math.inf
            hi *= 16.0
        try:
            return brentq(f, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=200)
        except (RuntimeError, ValueError):  # no convergence: any point will do, the bracket is certified
            return (lo + hi) / 2.0

    def bracket(self, target: float) -> tuple[float, float]:
        """``(x0, x1)`` with ``x0 <= x_g <= x1`` for ``x_g = inf{x : L(x) > e^target}``: x0 = -inf or
        ``log L(x0) <= target`` certified; x1 = +inf, or ``log L(x1) >= target`` certified, or -inf when
        ``pi_0 >= e^target`` (then ``L > e^target`` everywhere)."""
        if self.pi0_lo >= target:
            return -math.inf, -math.inf
        r = self._root(target)
        # Free ends: L(0) = sum_n pi_n exp(-mu_n^2 / 2) <= 1, so for gamma >= 1 the threshold is >= 0;
        # L(mu_max / 2) >= sum_n pi_n exp(mu_n (mu_max - mu_n) / 2) >= 1 - P_out(all), so for 1/gamma
        # it is <= mu_max / 2 once the dropped mass is below 1 - 1/gamma (or nothing is dropped)
        x0 = 0.0 if target >= 0 else -math.inf
        free = self.log_out == -math.inf or (
            target < 0 and self.log_out <= math.log(-math.expm1(target)) - 1e-9
        )
        x1 = float(self.mu[-1]) / 2.0 * (1 + 2 * ULP) if target <= 0 and free and self.mu.size else math.inf
        if math.isfinite(r):
            w = 1e-13 * (1.0 + abs(r))
            certified = done = False
            for _ in range(48):
                if not certified and r - w <= x0:
                    certified = True  # no point above the known lower end to try
                elif not certified and self.log_ratio_bounds(r - w)[1] <= target:
                    x0, certified = r - w, True
                if not done and r + w >= x1:
                    done = True
                elif not done and self.log_ratio_bounds(r + w)[0] >= target:
                    x1, done = r + w, True
                if certified and done:
                    break
                w *= 2.0
        return x0, x1

    def _log_tail(self, x: float, upper: bool, right: bool) -> float:
        """``log P*(Z > x)`` (right) or ``log P*(Z < x)``, rounded up (upper) or down."""
        from scipy.special import log_ndtr

        with np.errstate(invalid="ignore"):
            arg = self.mu - x if right else x - self.mu
            move = np.where(np.isfinite(arg), 2 * ULP * np.abs(arg), 0.0)
            arg = arg + move if upper else arg - move
        lp = log_ndtr(arg)
        pad = _LOG_ABS + _LOG_REL * np.abs(np.where(np.isfinite(lp), lp, 0.0))
        pi0 = self.pi0_hi if upper else self.pi0_lo
        # the n = 0 component is Q* itself: its tail has an exact argument
        lp0 = float(log_ndtr(-x if right else x))
        lp0 += (1 if upper else -1) * (_LOG_ABS + _LOG_REL * abs(lp0) if math.isfinite(lp0) else 0.0)
        if upper:
            v = _lse(np.append(self.hi + np.minimum(lp + pad, 0.0), pi0 + min(lp0, 0.0)))
            return min(v + self._slack(v), 0.0)
        v = _lse(np.append(self.lo + lp - pad, pi0 + lp0))
        return v - self._slack(v)

    def log_delta(self, eps: float) -> float:
        """Upper bound on ``log max(H_gamma(P* || Q*), H_gamma(Q* || P*))``, ``gamma = e^eps``.

        With ``x0 <= x_g <= x1`` each direction has two bounds, and the smaller is kept:
        ``P*(Z > x0) - gamma Q*(Z > x1)`` (first order in the bracket's width), and, splitting the
        expectation at x0 (at x1 in the other direction), where ``0 <= gamma - L <= gamma - L(x0)``
        on ``(x0, x_g]``: ``P*(Z > x0) - gamma Q*(Z > x0) + (gamma - L(x0)) Q*(x0 < Z < x1)``, second
        order in the width, which matters where delta is a small difference of two large tails.
        """
        from scipy.special import log_ndtr

        def margin(v: float, sign: float) -> float:
            return v + sign * (_LOG_ABS + _LOG_REL * abs(v)) if math.isfinite(v) else v

        def log_width(x0: float, x1: float) -> float:
            # Q*(x0 < Z < x1) <= (x1 - x0) / sqrt(2 pi), and <= 1
            if not (math.isfinite(x0) and math.isfinite(x1)):
                return 0.0
            return min(0.0, math.log(max(x1 - x0, 0.0) * _INV_SQRT_2PI * (1 + 4 * ULP) + _TINY) + 4 * ULP)

        def plus(a: float, c: float) -> float:
            v = float(np.logaddexp(a, c))
            return v + 4 * ULP * (1.0 + abs(v)) if math.isfinite(v) else v

        # P* -> Q*: threshold at L = gamma
        x0, x1 = self.bracket(eps)
        a = self._log_tail(x0, upper=True, right=True)
        d1 = _log_difference(a, eps + margin(float(log_ndtr(-x1)), -1.0))
        if math.isfinite(x0):
            gap = self.log_ratio_bounds(x0)[0] - eps  # log(L(x0)/gamma) from below, <= 0
            gap = min(gap - 2 * ULP * abs(gap), 0.0)
            c = eps + _log_one_minus_exp(gap) + log_width(x0, x1)
            d1 = min(d1, _log_difference(plus(a, c), eps + margin(float(log_ndtr(-x0)), -1.0)))
        d1 = plus(d1, self.log_out)  # the dropped binomial terms, counted in full
        # Q* -> P*: threshold at L = 1/gamma
        x0, x1 = self.bracket(-eps)
        a = margin(float(log_ndtr(x1)), 1.0)
        d2 = _log_difference(a, eps + self._log_tail(x0, upper=False, right=False))
        if math.isfinite(x1):
            up = eps + self.log_ratio_bounds(x1)[1]  # log(gamma L(x1)) from above, >= 0
            up = up + 2 * ULP * abs(up)
            if up <= 0:
                c = -math.inf
            else:  # log(e^up - 1) <= up
                c = up if up > 30 else math.log(math.expm1(up))
                c += 4 * ULP * (1.0 + abs(c))
            c += log_width(x0, x1)
            d2 = min(d2, _log_difference(plus(a, c), eps + self._log_tail(x1, upper=False, right=False)))
        if math.isnan(d1) or math.isnan(d2):
            return 0.0  # delta <= 1 always; never a NaN turned into a number
        return max(d1, d2)


def _log_one_minus_exp(d: float) -> float:
    """Upper bound on ``log(1 - e^d)`` for ``d <= 0`` (d already rounded down)."""
    if d == 0.0:
        return -math.inf
    v = math.log(-math.expm1(d))
    return v + 4 * ULP * (1.0 + abs(v))


def _log_difference(a: float, b: float) -> float:
    """Upper bound on ``log(e^a - e^b)`` given upper ``a`` and lower ``b`` (-inf when not positive)."""
    if math.isnan(a) or math.isnan(b):
        return 0.0
    b = b - 2 * ULP * abs(b) if math.isfinite(b) else b
    if a == -math.inf or b >= a:
        return -math.inf
    if b == -math.inf:
        return a
    d = b - a
    d -= 2 * ULP * abs(d)
    v = a + math.log(-math.expm1(d))
    return v + 1e-12 * (1.0 + abs(v))


def _pair(sample_rate, noise_multiplier, steps, c1, rho) -> _Pair | None:
    q = validate.rate("sample_rate", sample_rate)
    z = validate.positive("noise_multiplier", noise_multiplier)
    t = validate.positive_int("steps", steps)
    c1v = validate.positive("c1", c1)
    r = validate.nonnegative("rho", rho)
    if t > MAX_STEPS:
        return None
    mu = shifts(z, t, c1v, r)
    if not np.all(np.isfinite(mu)) or float(mu[-1]) > _MU_CAP:
        return None
    lo, hi = _log_binomial_pmf_bounds(t, q)
    return _Pair(mu, lo, hi)


def _check_eps(eps: float) -> float:
    if not validate.is_real(eps) or math.isnan(eps) or eps < 0:
        raise InvalidParameter("eps", f"must be a number >= 0 (got {eps!r})")
    return float(eps)


def dominating_pair_delta(
    eps: float, *, sample_rate: float, noise_multiplier: float, steps: int, c1: float, rho: float
) -> float:
    """Upper bound on DiceSGD's delta at ``eps`` (both neighbour directions; module docstring).

    ``noise_multiplier`` is ``z = sigma1 B / C1``; ``rho`` bounds every per-example residual norm.
    Returns 1.0 where the pair is not evaluated (T above ``MAX_STEPS``, shifts near overflow).  Raises
    :class:`~accounting.errors.InvalidParameter` naming the bad parameter.
    """
    e = _check_eps(eps)
    pair = _pair(sample_rate, noise_multiplier, steps, c1, rho)
    if pair is None or e == math.inf:
        return 1.0 if pair is None else 0.0
    v = pair.log_delta(e)
    if v == -math.inf:
        return _TINY  # the truth is positive for every finite eps (unbounded likelihood ratio)
    # below the float range the smallest positive double still bounds it from above
    return min(1.0, max(math.exp(v) * (1 + 4 * ULP), _TINY)) if v < 0 else 1.0


def dominating_pair_epsilon(
    delta: float, *, sample_rate: float, noise_multiplier: float, steps: int, c1: float, rho: float
) -> float:
    """An upper bound on DiceSGD's epsilon at ``delta``: a point at which :func:`dominating_pair_delta`'s
    outward bound is verified ``<= delta`` (the upper end of a bisection bracket; ``inf`` if none)."""
    from scipy.optimize import brentq

    d = validate.open_unit("delta", delta)
    pair = _pair(sample_rate, noise_multiplier, steps, c1, rho)
    if pair is None:
        return math.inf
    target = math.log(d)
    g = lambda e: pair.log_delta(e) - target  # noqa: E731
    if g(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while g(hi) > 0:
        lo, hi = hi, hi * 16.0
        if hi > 1e300:
            return math.inf
    try:
        root = brentq(g, lo, hi, xtol=1e-12, rtol=1e-12, maxiter=200)
    except (RuntimeError, ValueError):  # no convergence: hi is verified
        return hi
    step = 1e-11 * (1.0 + root)
    for _ in range(40):
        cand = root + step
        if cand >= hi:
            return hi
        if g(cand) <= 0:
            return cand
        step *= 4.0
    return hi
