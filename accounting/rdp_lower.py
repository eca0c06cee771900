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

from typing import Any

import numpy as np

__all__ = ["event_lower_rdp", "lower_rdp_steps"]

_ULP = 2.0**-52
#: Largest index of the polynomial terms (the sums of step 3); larger orders use the top moment.
_MAX_TERMS = 24
#: Orders above this use the top moment only (their coefficients would exceed double range).
_MAX_POLY_ORDER = 1.0e4
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


def _log_a_lower(q: np.ndarray, s: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Lower bound on ``log A`` per step (rows, ``0 < q < 1``, finite ``s > 0``) and order (columns)."""
    n = np.floor(orders)
    frac = orders != n
    poly = orders <= _MAX_POLY_ORDER
    k_top = np.where(poly, np.minimum(n - 1.0, _MAX_TERMS), 0.0)  # K of step 3 (sum i <= K)
    with_n = poly & (n <= _MAX_TERMS)  # the max(C_n t^n, t^alpha) alternative applies
    signed = poly & frac & (n + 2.0 <= _MAX_TERMS)  # P_A applies
    n_terms = _MAX_TERMS + 1
    idx = np.arange(n_terms, dtype=float)
    coef = _coefficients(orders, n_terms)
    c_b = np.where(idx[:, None] <= k_top[None, :], coef, 0.0)
    c_a = np.where(signed[None, :] & (idx[:, None] <= n[None, :] + 2.0), coef, 0.0)
    c_n = np.where(with_n, coef[np.minimum(n, _MAX_TERMS).astype(int), np.arange(orders.size)], 0.0)

    lq, l1q = np.log(q), np.log1p(-q)
    lr = (lq - l1q)[:, None]
    ss = s[:, None]
    size_r = (np.abs(lq) + np.abs(l1q))[:, None]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        g = idx * lr + (idx * idx - idx) * ss  # (steps, terms)
        m = g.max(axis=1, keepdims=True)
        w = np.exp(g - m)
        # size of every quantity whose rounding enters a term (step "Rounding" of the docstring)
        top_i = float(_MAX_TERMS)
        scale = top_i * size_r + (top_i * top_i) * ss + np.abs(m) + 1.0
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

        p_a = w @ c_a - rel * (w @ np.abs(c_a))
        log_a = np.where(signed[None, :] & (p_a > 0.0), m + np.log(p_a), -np.inf)

        best = np.maximum(log_a, log_b)
        out = orders * l1q[:, None] + best
        # the final additions round by ulps of their parts
        out = out - 4.0 * _ULP * (np.abs(orders * l1q[:, None]) + np.abs(best) + 1.0)
    return np.where(np.isfinite(out), np.maximum(out, 0.0), 0.0)


def lower_rdp_steps(sample_rate: Any, noise_multiplier: Any, orders: Any, counts: Any = 1) -> np.ndarray:
    """A lower bound on the composed RDP, at each order > 1, of Poisson-subsampled Gaussian
    steps ``(sample_rate, noise_multiplier)`` (broadcast together), each composed ``counts``
    times; 0 where no bound is available (the module docstring gives the derivation)."""
    o = np.asarray(orders, dtype=float).reshape(-1)
    q, z, c = np.broadcast_arrays(
        np.asarray(sample_rate, dtype=float),
        np.asarray(noise_multiplier, dtype=float),
        np.asarray(counts, dtype=float),
    )
    q, z, c = q.reshape(-1), z.reshape(-1), c.reshape(-1)
    with np.errstate(divide="ignore", over="ignore"):
        s = 0.5 / (z * z)
    total = np.zeros(o.size)
    n_adds = 0
    ok_o = np.isfinite(o) & (o > 1.0)
    if not ok_o.any():
        return total
    oo = o[ok_o]
    sub = np.flatnonzero((q > 0.0) & (q < 1.0) & np.isfinite(s) & (s > 0.0) & (c > 0.0))
    if sub.size:
        # one row per distinct (q, s): schedules repeat few pairs, and the rows cost the same
        if np.all(q[sub] == q[sub[0]]):  # one rate (the usual schedule): a 1-d unique is cheaper
            us, inv = np.unique(s[sub], return_inverse=True)
            pairs = np.stack([np.full(us.size, q[sub[0]]), us], axis=1)
        else:
            pairs, inv = np.unique(np.stack([q[sub], s[sub]], axis=1), axis=0, return_inverse=True)
        weight = np.bincount(inv.reshape(-1), weights=c[sub], minlength=pairs.shape[0])
        per = max(1, (1 << 20) // max(1, oo.size))
        for a in range(0, pairs.shape[0], per):
            la = _log_a_lower(pairs[a : a + per, 0], pairs[a : a + per, 1], oo)
            total[ok_o] += weight[a : a + per] @ la
            n_adds += pairs[a : a + per].shape[0] + 1
    full = np.flatnonzero((q == 1.0) & np.isfinite(s) & (c > 0.0))
    if full.size:
        # plain Gaussian: log A = alpha (alpha - 1) s exactly; s = 1/(2 sigma^2) rounds by 2 ulp
        total[ok_o] += float(np.sum(c[full] * s[full])) * (oo * (oo - 1.0)) * (1.0 - 8.0 * _ULP)
        n_adds += full.size + 1
    with np.errstate(invalid="ignore"):
        res = total / np.where(ok_o, o - 1.0, 1.0)
        res = res * (1.0 - (n_adds + 4.0) * _ULP) * (1.0 - _MARGIN)
    return np.where(ok_o & np.isfinite(res), np.maximum(res, 0.0), 0.0)


def event_lower_rdp(event: Any, orders: np.ndarray) -> np.ndarray:
    """:func:`lower_rdp_steps` of a composition of (subsampled) Gaussian events (those
    :func:`accounting.order_screen.screenable` accepts); zeros for any other event."""
    from accounting.events import (
        ComposedEvent,
        GaussianEvent,
        ScheduleEvent,
        SelfComposedEvent,
        SubsampledGaussianEvent,
    )

    o = np.asarray(orders, dtype=float)
    if isinstance(event, GaussianEvent):
        return lower_rdp_steps(1.0, event.effective_noise_multiplier, o)
    if isinstance(event, SubsampledGaussianEvent):
        return lower_rdp_steps(event.sample_rate, event.noise_multiplier, o)
    if isinstance(event, ScheduleEvent):
        return lower_rdp_steps(*event.step_arrays, o)
    if isinstance(event, SelfComposedEvent):
        return event.count * event_lower_rdp(event.event, o) * (1.0 - 2.0 * _ULP)
    if isinstance(event, ComposedEvent):
        parts = [event_lower_rdp(e, o) for e in event.events]
        return np.sum(parts, axis=0) * (1.0 - (len(parts) + 2.0) * _ULP) if parts else np.zeros(o.shape)
    return np.zeros(o.shape)
