"""A deterministic lower bound on DiceSGD's epsilon(delta) from *stored* residuals.

The 1-D lattice audit (:mod:`accounting.audit.dicesgd`) emits xi''s residual at the next step.
Here the other examples keep the error state saturated (``e_t >= C2``), which hides xi''s
residuals, and then drain it in one step: a shift ``n a`` in one release instead of n shifts
``a`` spread over n releases, the most the conservation law of docs/hidden-state.md allows.

Why it is a lower bound with confidence 1: the statistic ``Y = y_F`` is post-processing, so every
threshold test on it bounds epsilon from below; the law of the error state under D is an exact
forward recursion on the lattice (dropped binomial tails tracked and added to every upper
bound); under D', on an event of the others' bits only, xi''s shift is ``a' Bin(F - f, q)``
independent of the state.  One-sided bounds on both probabilities of each test, padded, give the
epsilon returned (no sampling).  The design choices only decide how strong the bound is.

The instance and the argument, step by step: ``docs/audits.md``, "DiceSGD's stored-residual
instance".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.errors import InvalidParameter

__all__ = [
    "StoragePlan",
    "storage_plan",
    "threshold_bounds",
    "storage_epsilon_lower",
    "dicesgd_storage_epsilon_lower",
]

_PMF_FLOOR = 1e-22  # binomial pmf entries below this (relative to the mode) are dropped, mass tracked
_TRIM = 1e-40  # state-distribution tails below this are dropped, mass tracked
_PAD = 1e-10  # absolute slack on every computed probability (float rounding of pmf and sums)
_ROUNDING = 1e-9  # subtracted from the returned epsilon


@dataclass(frozen=True)
class StoragePlan:
    """The instance in lattice units (``l = c2 / c``): per step, the others' (count, per-example units)."""

    sample_rate: float
    sigma: float  # noise std on the averaged update
    c: int  # C2 in lattice units
    unit: float  # l, in averaged-update units
    alpha: int  # xi''s residual in lattice units
    clip_step: float  # xi''s clipped gradient C1/B at step F
    others: tuple[tuple[int, int], ...]  # per step t < F: (active count n_t, signed residual units j_t)
    store_from: int  # f
    n_others: int
    grad: float  # the largest per-example gradient norm used

    @property
    def final(self) -> int:
        return len(self.others)


def _binom_pmf(n: int, q: float) -> tuple[int, np.ndarray, float]:
    """(first k, pmf over the kept range, dropped mass) of Bin(n, q); lgamma pmf (scipy.special only)."""
    from scipy import special

    if n == 0:
        return 0, np.ones(1), 0.0
    mean, sd = n * q, math.sqrt(n * q * (1 - q))
    lo, hi = max(0, int(mean - 12 * sd) - 2), min(n, int(mean + 12 * sd) + 2)
    ks = np.arange(lo, hi + 1, dtype=float)
    logpmf = (
        special.gammaln(n + 1.0)
        - special.gammaln(ks + 1.0)
        - special.gammaln(n - ks + 1.0)
        + ks * math.log(q)
        + (n - ks) * math.log1p(-q)
    )
    pmf = np.exp(logpmf)
    keep = np.flatnonzero(pmf >= _PMF_FLOOR * pmf.max())
    k0, k1 = int(keep[0]), int(keep[-1])
    kept = pmf[k0 : k1 + 1]
    below = float(special.bdtr(int(ks[k0]) - 1, n, q)) if ks[k0] > 0 else 0.0
    above = float(special.bdtrc(int(ks[k1]), n, q)) if ks[k1] < n else 0.0
    return int(ks[k0]), kept, below + above


class _Dist:
    """A sub-probability distribution on the integers (the D-world state in lattice units)."""

    def __init__(self) -> None:
        self.lo, self.p, self.dropped = 0, np.ones(1), 0.0

    def values(self) -> np.ndarray:
        return np.arange(self.lo, self.lo + self.p.size)

    def moments(self) -> tuple[float, float]:
        w = self.p.sum()
        v = self.values()
        m = float((self.p * v).sum() / w)
        return m, float(math.sqrt(max((self.p * (v - m) ** 2).sum() / w, 0.0)))

    def apply_h(self, c: int) -> None:
        """e -> e - clip(e, c): the map h on the lattice."""
        v = self.values()
        new_v = np.where(v >= c, v - c, np.where(v <= -c, v + c, 0))
        lo = int(new_v.min())
        out = np.zeros(int(new_v.max()) - lo + 1)
        np.add.at(out, new_v - lo, self.p)
        self.lo, self.p = lo, out

    def add_binomial(self, n: int, q: float, j: int) -> None:
        """e -> e + j K, K ~ Bin(n, q) independent."""
        if n == 0 or j == 0:
            return
        k0, pmf, dropped = _binom_pmf(n, q)
        self.dropped += dropped * float(self.p.sum())
        kernel = np.zeros(abs(j) * (pmf.size - 1) + 1)
        kernel[:: abs(j)] = pmf if j > 0 else pmf[::-1]
        out = np.convolve(self.p, kernel)  # direct summation: no FFT rounding, no negative entries
        self.lo = self.lo + j * k0 if j > 0 else self.lo + j * (k0 + pmf.size - 1)
        self.p = out
        self.trim()

    def kill_below(self, c: int) -> None:
        """Zero the mass on e < c (leaving the event A)."""
        v = self.values()
        self.p = np.where(v >= c, self.p, 0.0)
        self.trim()

    def trim(self) -> None:
        nz = np.flatnonzero(self.p > _TRIM)
        if nz.size == 0:
            self.dropped += float(self.p.sum())
            self.lo, self.p = 0, np.zeros(1)
            return
        a, b = int(nz[0]), int(nz[-1])
        self.dropped += float(self.p[:a].sum() + self.p[b + 1 :].sum())
        self.lo += a
        self.p = self.p[a : b + 1].copy()


def storage_plan(
    *,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    c1: float,
    c2: float,
    batch_size: float,
    grad_bound: float,
    dataset_size: int,
    storage_steps: int | None,
    kappa: float = 5.0,
    target: float = -0.25,
) -> StoragePlan | None:
    """Design an instance (None when the others cannot keep the state saturated at these parameters).

    ``storage_steps`` is F - f (how many of xi''s bits are stored; None: up to F = T - 1);
    ``target`` the mean of ``e_F`` in units of C2. The plan is built from the exact moments of the
    D-world state, step by step.
    """
    q, big_n, b = float(sample_rate), int(dataset_size), float(batch_size)
    a = (grad_bound - c1) / b
    n_o = big_n - 1
    lam = n_o * q
    if a <= 0 or n_o < 1 or (storage_steps is not None and storage_steps < 1):
        return None
    alpha = max(1, int(math.floor(0.95 * lam * a / c2)))
    c = int(math.ceil(alpha * c2 / a - 1e-9))
    while alpha * (c2 / c) > a:
        c += 1
    unit = c2 / c
    j_max = int(math.floor(a / unit * (1 + 1e-12)))
    while j_max * unit > a:
        j_max -= 1
    if j_max < 1 or lam * j_max <= c * 1.001:
        return None  # the others cannot even replace what one clip removes per step
    dist = _Dist()
    others: list[tuple[int, int]] = []

    def inject(m: float, sd: float, extra: float) -> tuple[int, int]:
        """(active count, per-example units) whose injection brings the mean to about
        ``c + extra + kappa * sd_after`` from the current mean m (fixed point for the added variance)."""
        need = c + extra + kappa * sd - m
        j = 1
        for _ in range(4):
            if need <= 0:
                return 0, 0
            j = min(j_max, max(1, int(math.ceil(need / lam))))
            need = c + extra + kappa * math.sqrt(sd**2 + need * j * (1 - q)) - m
        return min(n_o, int(round(need / (q * j)))), j

    # fill, then store: the mean of e_{t+1} is kept at c + kappa sd; xi' stores from the first step
    # whose update reaches that (A needs e_t >= C2 only from the step after)
    store_from = None
    while store_from is None:
        t = len(others)
        if t >= steps - 2:
            return None
        dist.apply_h(c)
        m, sd = dist.moments()
        n_t, j = inject(m, sd, 0.0)
        dist.add_binomial(n_t, q, j)
        others.append((n_t, j))
        m, sd = dist.moments()
        if m - 0.9 * kappa * sd >= c:
            store_from = t
    final = steps - 1 if storage_steps is None else store_from + storage_steps
    if final > steps - 1 or final <= store_from:
        return None
    while len(others) < final - 1:
        dist.apply_h(c)
        m, sd = dist.moments()
        n_t, j = inject(m, sd, 0.0)
        dist.add_binomial(n_t, q, j)
        others.append((n_t, j))
    # step F-1 drains towards the target (the state is >= c before it, on A)
    dist.apply_h(c)
    m, _ = dist.moments()
    need = m - target * c  # remove this much on average
    if need > 0:
        j = min(j_max, max(1, int(math.ceil(need / lam))))
        n_t = min(n_o, int(round(need / (q * j))))
        others.append((n_t, -j))
    else:
        others.append((0, 0))
    grad = c1 + b * max(alpha, j_max) * unit
    return StoragePlan(
        q, noise_multiplier * c1 / b, c, unit, alpha, c1 / b, tuple(others), store_from, n_o, grad
    )


def _final_laws(plan: StoragePlan) -> tuple[_Dist, _Dist]:
    """(law of e_F under D, sub-law of e_F on the event A), exact up to tracked dropped mass."""
    full, sat = _Dist(), _Dist()
    for t, (n_t, j) in enumerate(plan.others):
        # A: e_t >= C2 for t = f+1 .. F-1; the check reads e_t, before this step's update
        if plan.store_from + 1 <= t:
            sat.kill_below(plan.c)
        for d in (full, sat):
            d.apply_h(plan.c)
        for d in (full, sat):
            d.add_binomial(n_t, plan.sample_rate, j)
    return full, sat


@dataclass(frozen=True)
class _Weights:
    """Y's laws as weights on the clipped state values (D exactly; D' on the event A)."""

    vals: np.ndarray  # clip(e_F + shift, C2), averaged units
    w_d: np.ndarray
    w_p: np.ndarray
    slack_d: float  # dropped mass under D
    slack_p: float  # dropped mass and P(A^c) under D'


def _weights(plan: StoragePlan) -> _Weights:
    full, sat = _final_laws(plan)
    c, q = plan.c, plan.sample_rate
    n_store = plan.final - plan.store_from
    k0, pn, _ = _binom_pmf(n_store, q)
    pn = np.concatenate([np.zeros(k0), pn])  # the dropped tail only lowers the D'-side weights
    w_d = np.zeros(2 * c + 1)
    np.add.at(w_d, np.clip(full.values(), -c, c) + c, full.p)
    w_p = np.zeros(2 * c + 1)  # weight of clip(e + alpha n) on A
    v_sat = sat.values()
    for n, pw in enumerate(pn):
        if pw > 0:
            np.add.at(w_p, np.clip(v_sat + plan.alpha * n, -c, c) + c, pw * sat.p)
    support = np.flatnonzero((w_d > 0) | (w_p > 0))
    return _Weights(
        (support - c) * plan.unit,
        w_d[support],
        w_p[support],
        max(0.0, 1.0 - float(w_d.sum())),
        max(0.0, 1.0 - float(w_p.sum())),
    )


def threshold_bounds(plan: StoragePlan, us: np.ndarray, weights: _Weights | None = None) -> dict:
    """One-sided bounds at thresholds ``us`` (Step 4): ``sf_d_up >= P(Y > u)``, ``cdf_d_low <=
    P(Y < u)`` under D, ``sf_p_low <= P'(Y > u)``, ``cdf_p_up >= P'(Y < u)`` under D'."""
    from scipy import special

    w = _weights(plan) if weights is None else weights
    q, s = plan.sample_rate, plan.sigma
    z0 = (np.asarray(us, dtype=float)[:, None] - w.vals[None, :]) / s
    z1 = z0 - plan.clip_step / s
    tail0, head0 = special.ndtr(-z0), special.ndtr(z0)  # each evaluated once, used twice
    sf_d = tail0 @ w.w_d
    cdf_d = head0 @ w.w_d
    sf_p = ((1 - q) * tail0 + q * special.ndtr(-z1)) @ w.w_p
    cdf_p = ((1 - q) * head0 + q * special.ndtr(z1)) @ w.w_p
    return {
        "sf_d_up": sf_d + w.slack_d + _PAD,
        "cdf_d_low": cdf_d - _PAD,
        "sf_p_low": sf_p - _PAD,
        "cdf_p_up": cdf_p + w.slack_p + _PAD,
    }


def storage_epsilon_lower(plan: StoragePlan, delta: float, *, thresholds: int = 1500) -> tuple[float, dict]:
    """The largest epsilon the threshold tests on ``Y = y_F`` force (>= 0), and details."""
    w = _weights(plan)
    s = plan.sigma
    us = np.linspace(w.vals.min() - 4 * s, w.vals.max() + plan.clip_step + 9 * s, thresholds)
    best, best_u, direction = 0.0, None, None
    for chunk in np.array_split(us, max(1, us.size // 200)):
        b = threshold_bounds(plan, chunk, w)
        with np.errstate(divide="ignore", invalid="ignore"):
            add = np.log(np.maximum(b["sf_p_low"] - delta, 0.0)) - np.log(b["sf_d_up"])
            rem = np.log(np.maximum(b["cdf_d_low"] - delta, 0.0)) - np.log(b["cdf_p_up"])
        for arr, name in ((add, "add"), (rem, "remove")):
            i = int(np.argmax(arr))
            if np.isfinite(arr[i]) and arr[i] > best:
                best, best_u, direction = float(arr[i]), float(chunk[i]), name
    details = {
        "storage_steps": plan.final - plan.store_from,
        "store_from": plan.store_from,
        "release_step": plan.final,
        "lattice_c": plan.c,
        "alpha": plan.alpha,
        "instance_gradient": plan.grad,
        "p_not_saturated": w.slack_p,
        "dropped_mass_d": w.slack_d,
        "threshold": best_u,
        "direction": direction,
    }
    return max(0.0, best - _ROUNDING), details


def dicesgd_storage_epsilon_lower(
    *,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    c1: float,
    c2: float,
    batch_size: float,
    grad_bound: float,
    dataset_size: int,
    storage_steps: tuple[int | None, ...] | None = None,
    targets: tuple[float, ...] = (-0.5, 0.0),
) -> tuple[float, dict]:
    """Best storage-attack lower bound over a few designs (each valid; 0.0 when none applies).

    Parameters as in :func:`accounting.audit.dicesgd_sum.dicesgd_sum_test_epsilon_lower`, plus the
    gradient bound ``grad_bound`` (> C1) and the dataset size ``dataset_size`` (the pair has
    ``dataset_size - 1`` common examples).
    """
    q, z, t = float(sample_rate), float(noise_multiplier), int(steps)
    for name, ok in (
        ("sample_rate", 0 < q < 1),
        ("noise_multiplier", z > 0 and math.isfinite(z)),
        ("steps", t >= 3),
        ("delta", 0 < delta < 1),
        ("c1", c1 > 0),
        ("c2", c2 > 0),
        ("batch_size", batch_size > 0),
        ("grad_bound", grad_bound > 0 and math.isfinite(grad_bound)),
        ("dataset_size", int(dataset_size) >= 2),
    ):
        if not ok:
            raise InvalidParameter(name, "out of range for the storage audit")
    if storage_steps is None:
        storage_steps = (None, max(1, (2 * t) // 3))  # as long as possible, and a shorter (less spread) one
    best, best_details = 0.0, {"applicable": False}
    for ls in storage_steps:
        for tg in targets:
            plan = storage_plan(
                sample_rate=q,
                noise_multiplier=z,
                steps=t,
                c1=c1,
                c2=c2,
                batch_size=batch_size,
                grad_bound=grad_bound,
                dataset_size=int(dataset_size),
                storage_steps=ls,
                target=tg,
            )
            if plan is None:
                continue
            eps, det = storage_epsilon_lower(plan, delta)
            det["target"] = tg
            det["applicable"] = True
            if eps > best or not best_details.get("applicable"):
                best, best_details = max(best, eps), det if eps >= best else best_details
    return best, best_details
