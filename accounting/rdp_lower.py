"""Closed-form *lower* bounds on the RDP of Poisson-subsampled Gaussian steps, at every order.

Why: order screening (:mod:`accounting.order_screen`) evaluates an order exactly only when a
lower bound on its RDP cannot rule it out.  Away from the evaluated integer orders its chords
are loose, and a fractional order costs ~100x an integer one (two series of Gaussian CDFs).  The
bounds here use only moments of the likelihood ratio -- no special functions -- and cost one
small matrix product for all orders and steps.

How: with ``t = q L / (1-q)`` (L the Gaussian likelihood ratio, ``E[t^b]`` in closed form for
every real b), ``A = (1-q)^alpha E[(1+t)^alpha]``; pointwise, ``(1+t)^alpha`` is at least its
Taylor polynomial of degree ``floor(alpha)`` (or ``floor(alpha) + 2`` at fractional orders), and
at least the polynomial of degree ``floor(alpha) - 1`` plus ``t^alpha``.  At integer orders up
to :data:`_MAX_TERMS` the bound is the binomial sum itself.  Every rounding is taken off with
room to spare, and 1e-10 relative more.  Derivation and rounding: ``docs/rdp-numerics.md``,
"Closed-form lower bounds"; checked against 40-digit quadrature and the computed RDP by
``tests/accounting/test_rdp_lower.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "EXACT_ORDER_MAX",
    "event_lower_function",
    "event_lower_rdp",
    "log_a_lower_steps",
    "lower_rdp_steps",
    "step_lower_function",
]

_ULP = 2.0**-52
#: Largest index of the polynomial terms (the sums of step 3); larger orders use the top moment.
_MAX_TERMS = 24
#: Orders above this use the top moment only (their coefficients would exceed double range).
_MAX_POLY_ORDER = 1.0e4
#: Moments more than this (in log) below the shared shift may come out of exp subnormal.
_SHIFT_FLOOR = 600.0
#: Relative margin taken off the composed bound on top of the rounding allowances.
_MARGIN = 1e-10


def _coefficients(orders: np.ndarray, n_terms: int) -> np.ndarray:
    """``C(alpha, i)`` for ``i < n_terms`` (rows) and each order (columns), by the product
    recurrence ``C_{i+1} = C_i (alpha - i) / (i + 1)`` (relative error <= 2 i ulp)."""
    c = np.empty((n_terms, orders.size))
    c[0] = 1.0
    for i in range(n_terms - 1):
        c[i + 1] = c[i] * (orders - i) / (i + 1)
    return c


class _StepMoments:
    """The order-independent part of :meth:`log_a_lower` for fixed steps (rows ``0 < q < 1``,
    finite ``s > 0``): the shifted moments ``exp(g_i - M)`` and the rounding scale.  Order
    screening asks for bounds several times on the same steps; this is computed once."""

    def __init__(self, q: np.ndarray, s: np.ndarray) -> None:
        self.idx = np.arange(_MAX_TERMS + 1, dtype=float)
        self.l1q = np.log1p(-q)
        lq = np.log(q)
        self.lr = (lq - self.l1q)[:, None]
        self.ss = s[:, None]
        self.size_r = (np.abs(lq) + np.abs(self.l1q))[:, None]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            g = self.idx * self.lr + (self.idx * self.idx - self.idx) * self.ss  # (steps, terms)
            self.g = g
            self.gmax = np.maximum.accumulate(g, axis=1)  # max of g_0..g_i
            self.m = g.max(axis=1, keepdims=True)
            self.w = np.exp(g - self.m)
            # size of every quantity whose rounding enters a term (step "Rounding" of the docstring)
            top_i = float(_MAX_TERMS)
            self.scale = top_i * self.size_r + (top_i * top_i) * self.ss + np.abs(self.m) + 1.0

    def log_a_lower(self, orders: np.ndarray, rows: slice = slice(None)) -> np.ndarray:
        """Lower bound on ``log A`` per step of ``rows`` and order (columns)."""
        n = np.floor(orders)
        frac = orders != n
        poly = orders <= _MAX_POLY_ORDER
        k_top = np.where(poly, np.minimum(n - 1.0, _MAX_TERMS), 0.0)  # K of step 3 (sum i <= K)
        with_n = poly & (n <= _MAX_TERMS)  # the max(C_n t^n, t^alpha) alternative applies
        signed = poly & frac & (n + 2.0 <= _MAX_TERMS)  # P_A applies
        n_terms = _MAX_TERMS + 1
        idx = self.idx
        coef = _coefficients(orders, n_terms)
        c_b = np.where(idx[:, None] <= k_top[None, :], coef, 0.0)
        c_a = np.where(signed[None, :] & (idx[:, None] <= n[None, :] + 2.0), coef, 0.0)
        c_n = np.where(with_n, coef[np.minimum(n, _MAX_TERMS).astype(int), np.arange(orders.size)], 0.0)

        l1q, lr, ss, size_r = self.l1q[rows], self.lr[rows], self.ss[rows], self.size_r[rows]
        m, w, scale = self.m[rows], self.w[rows], self.scale[rows]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            g_top = orders * lr + (orders * orders - orders) * ss  # (steps, orders)
            scale_top = orders * size_r + (orders * orders) * ss + np.abs(m) + 1.0
            rel = 4.0 * (16.0 * _ULP * np.maximum(scale, scale_top) + (2.0 * n_terms + 8.0) * _ULP)

            sum_b = w @ c_b
            tn = w[:, np.minimum(n, _MAX_TERMS).astype(int)] * c_n
            tt = np.exp(g_top - m)  # may overflow to inf: then the log-space branch below decides
            head = np.maximum(tn, tt)
            p_b = (sum_b + head) * (1.0 - rel)
            log_b = m + np.log(p_b)
            # top moment far above the others (tt = inf, or p_b overflowing): log(t^alpha) alone
            log_top = g_top + np.log1p(-rel)
            log_b = np.where(np.isfinite(log_b), np.maximum(log_b, log_top), log_top)

            # The shift m is the largest of all _MAX_TERMS + 1 moments; where the moments an order
            # uses lie far below it (tiny q, small noise: g_i grows like i^2 s), they come out of
            # exp subnormal, with too few bits for the rounding allowance (q = 1e-6, sigma = 0.5,
            # alpha = 10 gave 9e-9 relative above the true RDP).  Where either sum is affected,
            # both are recomputed in log space, each around its own largest term.
            # Each sum is tested on its own range: P_B sums i <= n (or K) and the top moment, P_A
            # (fractional orders) i <= n + 2, whose largest exponent can be 100 e-folds above P_B's.
            gmax = self.gmax[rows]
            range_b = np.maximum(g_top, gmax[:, np.where(with_n, n, k_top).astype(int)])
            range_a = gmax[:, np.minimum(n + 2.0, _MAX_TERMS).astype(int)]
            sub = ~(range_b - m >= -_SHIFT_FLOOR) | (signed & ~(range_a - m >= -_SHIFT_FLOOR))
            if signed.any():
                p_a = w @ c_a - rel * (w @ np.abs(c_a))
                log_a = np.where(signed[None, :] & (p_a > 0.0), m + np.log(p_a), -np.inf)
                best = np.maximum(log_a, log_b)
            else:  # integer orders only (P_A is for fractional ones): the same value, two products less
                best = log_b
            if sub.any():
                logs = self._log_space(sub, rows, orders, g_top, (c_b, c_a, c_n), n, k_top, with_n, signed)
                best = np.where(sub, logs, best)
            out = orders * l1q[:, None] + best
            # the final additions round by ulps of their parts
            out = out - 4.0 * _ULP * (np.abs(orders * l1q[:, None]) + np.abs(best) + 1.0)
        return np.where(np.isfinite(out), np.maximum(out, 0.0), 0.0)

    def _log_space(
        self,
        sub: np.ndarray,
        rows: slice,
        orders: np.ndarray,
        g_top: np.ndarray,
        coefs: tuple[np.ndarray, np.ndarray, np.ndarray],
        n: np.ndarray,
        k_top: np.ndarray,
        with_n: np.ndarray,
        signed: np.ndarray,
    ) -> np.ndarray:
        """``max(log P_A, log P_B)`` (rounding taken off) at the entries ``sub`` (rows, orders),
        each sum shifted by its own largest exponent, so its largest term is exactly 1 and none
        that matters is subnormal; NaN elsewhere (:meth:`_shifted_log_sum`)."""
        c_b, c_a, c_n = coefs
        g = self.g[rows]
        size_r, ss = self.size_r[rows][:, 0], self.ss[rows][:, 0]
        out = np.full(sub.shape, np.nan)
        for j in np.flatnonzero(sub.any(axis=0)):
            f = np.flatnonzero(sub[:, j])
            a, top = float(orders[j]), g_top[f, j]
            size = (a, size_r[f], ss[f])
            # P_B: the polynomial of degree K plus max(C_n t^n, t^alpha)
            k = int(k_top[j])
            head = np.maximum(top, g[f, int(n[j])] + np.log(c_n[j])) if with_n[j] else top
            val, rel = self._shifted_log_sum(g[f, : k + 1], c_b[: k + 1, j], head, size)
            best = np.maximum(val, top + np.log1p(-rel))  # the top moment alone
            if signed[j]:  # P_A: the signed polynomial of degree n + 2
                k = int(n[j] + 2.0)
                val_a, _ = self._shifted_log_sum(g[f, : k + 1], c_a[: k + 1, j], None, size)
                best = np.maximum(best, val_a)
            out[f, j] = best
        return out

    @staticmethod
    def _shifted_log_sum(
        g: np.ndarray, coef: np.ndarray, head: np.ndarray | None, size: tuple[float, np.ndarray, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lower bound on ``log(sum_i coef_i e^(g_i) [+ e^head])`` per row (-inf where it is not
        positive), and the relative allowance taken off.  The shift is the row's largest exponent
        (between 0 = g_0 and ``m``).  The allowance is ``log_a_lower``'s ``rel`` with this shift
        and the terms actually summed in place of ``m`` and all _MAX_TERMS + 1 terms, plus 64 ulp
        of ``|log |C_i|| + 1`` for the coefficients, which now sit in the exponents; with signed
        coefficients it is taken off the sum of magnitudes, as for ``P_A`` above."""
        a, size_r, ss = size
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            lc = np.log(np.abs(coef))
            terms = g + lc
            shift = terms.max(axis=1) if head is None else np.maximum(terms.max(axis=1), head)
            kk = float(g.shape[1] - 1)
            scale = kk * size_r + (kk * kk) * ss + np.abs(shift) + 1.0
            scale_top = a * size_r + (a * a) * ss + np.abs(shift) + 1.0
            rel = 4.0 * (16.0 * _ULP * np.maximum(scale, scale_top) + (2.0 * (_MAX_TERMS + 1) + 8.0) * _ULP)
            rel = rel + 64.0 * _ULP * (float(np.max(np.abs(lc), initial=0.0)) + 1.0)
            e = np.exp(terms - shift[:, None])
            if head is None:
                p = e @ np.sign(coef) - rel * e.sum(axis=1)
            else:
                p = (e.sum(axis=1) + np.exp(head - shift)) * (1.0 - rel)
            val = np.where(p > 0.0, shift + np.log(p), -np.inf)
        return np.where(np.isnan(val), -np.inf, val), rel


#: Integer orders up to this are bounded by the binomial sum itself (less its rounding): the
#: tightest of the bounds, what :mod:`accounting._frac_chord` relies on.
EXACT_ORDER_MAX = _MAX_TERMS


def log_a_lower_steps(sample_rate: np.ndarray, s: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Lower bound on ``log A_alpha`` per step (rows) and order (columns), for steps with
    ``0 < q < 1`` and finite ``s = 1/(2 sigma^2) > 0`` (the caller's; nothing is checked here).
    ``A_alpha`` is the per-step moment whose ``log / (alpha - 1)`` is the RDP."""
    moments = _StepMoments(np.asarray(sample_rate, dtype=float), np.asarray(s, dtype=float))
    return moments.log_a_lower(np.asarray(orders, dtype=float))


def step_lower_function(
    sample_rate: Any, noise_multiplier: Any, counts: Any = 1
) -> Callable[[Any], np.ndarray]:
    """``orders -> lower_rdp_steps(sample_rate, noise_multiplier, orders, counts)``, with the
    steps grouped and their moments computed once (the same values, for callers that ask
    about several order subsets of one composition)."""
    q, z, c = np.broadcast_arrays(
        np.asarray(sample_rate, dtype=float),
        np.asarray(noise_multiplier, dtype=float),
        np.asarray(counts, dtype=float),
    )
    q, z, c = q.reshape(-1), z.reshape(-1), c.reshape(-1)
    with np.errstate(divide="ignore", over="ignore"):
        s = 0.5 / (z * z)
    sub = np.flatnonzero((q > 0.0) & (q < 1.0) & np.isfinite(s) & (s > 0.0) & (c > 0.0))
    moments: _StepMoments | None = None
    weight = np.zeros(0)
    if sub.size:
        # one row per distinct (q, s): schedules repeat few pairs, and the rows cost the same
        if np.all(q[sub] == q[sub[0]]):  # one rate (the usual schedule): a 1-d unique is cheaper
            us, inv = np.unique(s[sub], return_inverse=True)
            pairs = np.stack([np.full(us.size, q[sub[0]]), us], axis=1)
        else:
            pairs, inv = np.unique(np.stack([q[sub], s[sub]], axis=1), axis=0, return_inverse=True)
        weight = np.bincount(inv.reshape(-1), weights=c[sub], minlength=pairs.shape[0])
        moments = _StepMoments(np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]))
    full = np.flatnonzero((q == 1.0) & np.isfinite(s) & (c > 0.0))
    full_sum = float(np.sum(c[full] * s[full])) if full.size else 0.0

    def lower(orders: Any) -> np.ndarray:
        o = np.asarray(orders, dtype=float).reshape(-1)
        total = np.zeros(o.size)
        n_adds = 0
        ok_o = np.isfinite(o) & (o > 1.0)
        if not ok_o.any():
            return total
        oo = o[ok_o]
        if moments is not None:
            n_rows = weight.size
            per = max(1, (1 << 20) // max(1, oo.size))
            for a in range(0, n_rows, per):
                la = moments.log_a_lower(oo, slice(a, a + per))
                total[ok_o] += weight[a : a + per] @ la
                n_adds += min(per, n_rows - a) + 1
        if full.size:
            # plain Gaussian: log A = alpha (alpha - 1) s exactly; s = 1/(2 sigma^2) rounds by 2 ulp
            total[ok_o] += full_sum * (oo * (oo - 1.0)) * (1.0 - 8.0 * _ULP)
            n_adds += full.size + 1
        with np.errstate(invalid="ignore"):
            res = total / np.where(ok_o, o - 1.0, 1.0)
            res = res * (1.0 - (n_adds + 4.0) * _ULP) * (1.0 - _MARGIN)
        return np.where(ok_o & np.isfinite(res), np.maximum(res, 0.0), 0.0)

    return lower


def lower_rdp_steps(sample_rate: Any, noise_multiplier: Any, orders: Any, counts: Any = 1) -> np.ndarray:
    """A lower bound on the composed RDP, at each order > 1, of Poisson-subsampled Gaussian
    steps ``(sample_rate, noise_multiplier)`` (broadcast together), each composed ``counts``
    times; 0 where no bound is available (the module docstring gives the derivation)."""
    return step_lower_function(sample_rate, noise_multiplier, counts)(orders)


def event_lower_function(event: Any) -> Callable[[Any], np.ndarray]:
    """``orders -> event_lower_rdp(event, orders)``, with each part's steps prepared once
    (:func:`step_lower_function`)."""
    from accounting.events import (
        ComposedEvent,
        GaussianEvent,
        ScheduleEvent,
        SelfComposedEvent,
        SubsampledGaussianEvent,
    )

    if isinstance(event, GaussianEvent):
        return step_lower_function(1.0, event.effective_noise_multiplier)
    if isinstance(event, SubsampledGaussianEvent):
        return step_lower_function(event.sample_rate, event.noise_multiplier)
    if isinstance(event, ScheduleEvent):
        return step_lower_function(*event.step_arrays)
    if isinstance(event, SelfComposedEvent):
        inner = event_lower_function(event.event)
        count = event.count
        return lambda orders: count * inner(np.asarray(orders, dtype=float)) * (1.0 - 2.0 * _ULP)
    if isinstance(event, ComposedEvent):
        fns = [event_lower_function(e) for e in event.events]

        def composed(orders: Any) -> np.ndarray:
            o = np.asarray(orders, dtype=float)
            parts = [f(o) for f in fns]
            if not parts:
                return np.zeros(o.shape)
            return np.sum(parts, axis=0) * (1.0 - (len(parts) + 2.0) * _ULP)

        return composed
    return lambda orders: np.zeros(np.asarray(orders, dtype=float).shape)


def event_lower_rdp(event: Any, orders: np.ndarray) -> np.ndarray:
    """:func:`lower_rdp_steps` of a composition of (subsampled) Gaussian events (those
    :func:`accounting.order_screen.screenable` accepts); zeros for any other event."""
    return event_lower_function(event)(np.asarray(orders, dtype=float))
