"""A Monte Carlo lower bound on DiceSGD's epsilon(delta) from residuals stored *orthogonally*.

The 1-D storage audit (:mod:`accounting.audit.dicesgd_storage`) hides xi''s residuals by keeping the
error state saturated along xi''s own direction, so the others' Poisson refill lands on top of the
stored residuals and spreads the drained release. Here the others work along a second axis:

* xi''s gradient is ``G e1`` on its storage steps (clipped part ``C1/B`` released at once, residual
  ``a = (G - C1)/B`` stored); everyone else's gradient is ``+-(C1 + B j_t) e2`` on ``n_t`` of them and
  0 on the rest (functions of the step only; ``j_t <= a`` keeps every norm <= G).
* The others keep ``||e|| ~ lam C2`` with ``lam > 1``, so ``clip(e, C2)`` releases along e1 only the
  fraction ``C2/||e||`` of the stored e1 component per step (a slow leak), and their Poisson noise
  enters e2 and ``||e||`` only. This needs the others to refill more than ``C2`` per step,
  ``(N - 1) q (G - C1)/B > C2``: at the boundary cells (``G - C1 = C2``, ``B = qN``) it does not apply.
* On the last ``drain`` steps the others' residuals point along ``-e2`` and cancel e2 (in mean), so
  the release at ``F`` carries (most of) xi''s stored e1 component at once.

Argument (add/remove, ``D' = D + {xi'}``; each step holds for both neighbours):

1. Every gradient is a function of the step alone, so the error state, hence the mean of every
   release, is a function of the Poisson bits alone (xi''s ``b_t`` and the others' counts
   ``K_t ~ Bin(n_t, q)``, independent, with the same law under D and D').
2. Under D nothing ever has an e1 component: the e1 coordinates of the releases are i.i.d.
   ``N(0, sigma1^2)`` exactly, so ``S = sum_t w_t y_t[e1]`` is ``N(0, sigma1^2 |w|^2)`` exactly.
3. Under D', given the bits, ``y_t[e1] = m_t(bits) + N(0, sigma1^2)`` independently, with ``m_t`` from
   the real 2-D recursion (h and clip, floats); so ``P'(S > u) = E_bits[Phibar((u - M)/s)]`` with
   ``M = sum_t w_t m_t``, ``s = sigma1 |w|``: the mean of a [0, 1] variable of the bits.
4. ``S`` is post-processing of the releases, so (eps, delta)-DP needs, for every u,
   ``P'(S > u) <= e^eps P(S > u) + delta`` (add) and ``P(S < u) <= e^eps P'(S < u) + delta`` (remove).
5. A pilot sample chooses the design, the weights w, the direction and the threshold u; a fresh
   independent sample of the bits bounds the one D'-probability that test needs (a lower bound on
   ``P'(S > u)``, or an upper bound on ``P'(S < u)``) by the empirical Bernstein inequality
   (Maurer & Pontil 2009, Thm 4) at level ``1 - beta``; the D-side probability is exact (step 2).
   The epsilon that test forces, rounded down, is then a lower bound on the true epsilon(delta) of
   this instance with probability >= ``1 - beta`` over the audit's own randomness.

The certified bounds of docs/hidden-state.md cover this instance: their proofs use only that each
per-example gradient is a function of the step and the past releases with norm <= G. The design
(lam, the storage window, the drain length, the weights) decides only the strength, never validity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from accounting.errors import InvalidParameter

__all__ = [
    "OrthogonalPlan",
    "orthogonal_plan",
    "release_means",
    "bernstein_mean_bounds",
    "orthogonal_epsilon_lower",
    "dicesgd_orthogonal_epsilon_lower",
]

_PAD = 1e-10  # absolute slack on every probability (float rounding of the recursion and of ndtr)
_ROUNDING = 1e-9  # subtracted from the returned epsilon


@dataclass(frozen=True)
class OrthogonalPlan:
    """The 2-D instance, in averaged-update units; per step t = 0 .. T-1 of the run."""

    sample_rate: float
    sigma: float  # noise std on the averaged update (sigma1 = z C1 / B)
    c2: float
    residual: float  # xi''s stored residual per inclusion, a = (G - C1)/B
    clip_step: float  # xi''s clipped gradient C1/B, released along e1 on its inclusion
    others: tuple[tuple[int, float], ...]  # per step: (active count n_t, signed e2 residual j_t)
    xi_steps: tuple[bool, ...]  # steps on which xi''s gradient is G e1 (0 elsewhere)
    weights: tuple[float, ...]  # w_t on the e1 coordinate of release t

    @property
    def steps(self) -> int:
        return len(self.others)


def _simulate(plan: OrthogonalPlan, rng: np.random.Generator, samples: int, profile: bool) -> np.ndarray:
    q, c2 = plan.sample_rate, plan.c2
    u = np.zeros(samples)
    v = np.zeros(samples)
    total = np.zeros(samples)
    prof = np.zeros(plan.steps)
    for t in range(plan.steps):
        norm = np.hypot(u, v)
        scale = np.minimum(1.0, c2 / np.maximum(norm, 1e-300))  # clip(e, C2) = scale e
        n_t, j_t = plan.others[t]
        b = rng.random(samples) < q if plan.xi_steps[t] else np.zeros(samples, dtype=bool)
        if profile:
            prof[t] = float((scale * u + b * plan.clip_step).mean())
        elif plan.weights[t]:
            total += plan.weights[t] * (scale * u + b * plan.clip_step)
        u = (1.0 - scale) * u + b * plan.residual
        v = (1.0 - scale) * v
        if n_t and j_t:
            v += j_t * rng.binomial(n_t, q, size=samples)
    return prof if profile else total


def release_means(plan: OrthogonalPlan, rng: np.random.Generator, samples: int) -> np.ndarray:
    """``M = sum_t w_t m_t`` under D' for ``samples`` independent draws of all Poisson bits.

    The real recursion ``e_{t+1} = h(e_t) + (1/B) sum_{i in B_t} (g_i - clip(g_i, C1))`` in two
    dimensions, ``h(e) = e - clip(e, C2)``; ``m_t`` is the e1 coordinate of release t's mean,
    ``clip(e_t, C2)[e1] + b_t C1/B`` (xi''s clipped gradient on its storage steps).
    """
    return _simulate(plan, rng, samples, profile=False)


def matched(plan: OrthogonalPlan, rng: np.random.Generator, samples: int) -> OrthogonalPlan:
    """The plan with ``w_t`` proportional to ``E[m_t]`` (a matched filter for the mean leak profile of
    xi''s stored residuals), normalised to ``max w = 1``; a design choice made before any sample
    that certifies."""
    prof = _simulate(plan, rng, samples, profile=True)
    w = prof / prof.max() if prof.max() > 0 else prof
    w = np.where(w >= 1e-3, w, 0.0)
    return replace(plan, weights=tuple(float(x) for x in w))


def bernstein_mean_bounds(x: np.ndarray, beta: float) -> tuple[float, float]:
    """One-sided bounds (each at level ``1 - beta``) on the mean of i.i.d. [0, 1] variables.

    Empirical Bernstein (Maurer & Pontil 2009, Thm 4): with probability >= 1 - beta,
    ``E X <= mean + sqrt(2 V ln(2/beta) / n) + 7 ln(2/beta) / (3 (n - 1))``, V the unbiased sample
    variance; applied to ``1 - X`` for the lower bound.
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 2:
        return 0.0, 1.0
    m = float(x.mean())
    var = float(x.var(ddof=1))
    lg = math.log(2.0 / beta)
    r = math.sqrt(2.0 * var * lg / n) + 7.0 * lg / (3.0 * (n - 1))
    return max(0.0, m - r), min(1.0, m + r)


def orthogonal_plan(
    *,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    c1: float,
    c2: float,
    batch_size: float,
    grad_bound: float,
    dataset_size: int,
    lam: float,
    store: int | None,
    drain: int,
    weights: str = "final",
) -> OrthogonalPlan | None:
    """Design an instance (None when the others cannot hold ``||e|| > C2`` at these parameters).

    The release step is ``F = T - 1``; the others fill ``||e||`` up to ``lam C2`` (at most their
    largest refill per step), hold it there, and drain e2 to 0 in mean over the ``drain`` steps
    before F (None when the mean path cannot reach ``||e|| <= C2`` by F). xi' stores on the ``store``
    steps before the drain (None: from step 1), on the drain steps and at F. Each step's e2 mass M is
    carried by all ``N - 1`` others with ``j = M / ((N - 1) q)``: the smallest per-example residual,
    hence the smallest Poisson variance ``M^2 (1 - q) / ((N - 1) q)`` for that mass.
    ``weights``: ``"final"`` (S = y_F[e1]), ``"tail"`` (equal weights on F and the drain steps) or
    ``"matched"`` (:func:`matched`).
    The plan follows the mean path of e2 (xi''s e1 part is second order in ``||e||``).
    """
    q, b = float(sample_rate), float(batch_size)
    a = (grad_bound - c1) / b
    n_o = int(dataset_size) - 1
    top = n_o * q * a  # the largest mean e2 mass per step
    if a <= 0 or n_o < 1 or top <= c2 * 1.0001 or lam <= 1 or drain < 1 or (store is not None and store < 1):
        return None
    final = steps - 1
    start = 1 if store is None else final - drain - store
    if start < 1:
        return None
    target = lam * c2
    others: list[tuple[int, float]] = []
    v = 0.0
    v_drain = 0.0
    for t in range(final):
        hv = max(v - c2, 0.0)  # h on the mean path (e1 ignored)
        if t < final - drain:
            mass = min(top, max(target - hv, 0.0))
            v_drain = hv + mass
        else:  # the mean of e2 falls linearly to 0 at F
            left = final - t - 1  # drain steps after this one
            mass = min(top, max(-top, v_drain * left / drain - hv))
        j = max(-a, min(a, mass / (n_o * q)))  # |j| <= a: every gradient norm stays <= G
        others.append((n_o, j) if mass else (0, 0.0))
        v = hv + mass
    if v > c2:
        return None
    others.append((0, 0.0))
    xi = tuple(t >= start for t in range(steps))
    if weights == "final":
        w = tuple(1.0 if t == final else 0.0 for t in range(steps))
    elif weights == "tail":
        w = tuple(1.0 if t >= final - drain + 1 else 0.0 for t in range(steps))
    elif weights == "matched":
        w = tuple(1.0 if t >= final - drain + 1 else 0.0 for t in range(steps))
        plan = OrthogonalPlan(q, noise_multiplier * c1 / b, c2, a, c1 / b, tuple(others), xi, w)
        return matched(plan, np.random.default_rng(12345), 2000)
    else:
        raise InvalidParameter("weights", "'final', 'tail' or 'matched'")
    return OrthogonalPlan(q, noise_multiplier * c1 / b, c2, a, c1 / b, tuple(others), xi, w)


def pilot_test(
    plan: OrthogonalPlan, delta: float, m: np.ndarray, samples: int, beta: float
) -> tuple[float, str, float]:
    """(predicted bound, direction, threshold) of the best threshold test on pilot draws ``m``.

    The prediction is the bound :func:`orthogonal_epsilon_lower` would give on ``samples`` fresh draws
    if they had the pilot's mean and variance: it chooses thresholds the confidence bound can certify.
    """
    from scipy import special

    s = plan.sigma * math.sqrt(sum(w * w for w in plan.weights))
    us = np.linspace(-4.0 * s, float(m.max()) + 6.0 * s, 240)
    lg = math.log(2.0 / beta)
    best = (0.0, "add", float(us[-1]))
    for u in us:
        for direction in ("add", "remove"):
            x = special.ndtr((m - u) / s) if direction == "add" else special.ndtr((u - m) / s)
            r = math.sqrt(2.0 * float(x.var()) * lg / samples) + 7.0 * lg / (3.0 * (samples - 1))
            if direction == "add":
                num, den = float(x.mean()) - r - delta, float(special.ndtr(-u / s))
            else:
                num, den = float(special.ndtr(u / s)) - delta, float(x.mean()) + r
            if num > 0 and den > 0 and math.log(num / den) > best[0]:
                best = (math.log(num / den), direction, float(u))
    return best


def orthogonal_epsilon_lower(
    plan: OrthogonalPlan, delta: float, direction: str, threshold: float, m: np.ndarray, beta: float
) -> tuple[float, float]:
    """(epsilon lower bound at level ``1 - beta``, its point estimate) of one fixed threshold test,
    from draws ``m`` of M independent of the choice of the test (Step 5 of the module docstring)."""
    from scipy import special

    s = plan.sigma * math.sqrt(sum(w * w for w in plan.weights))
    u = float(threshold)
    if direction == "add":  # P'(S > u) - delta <= e^eps P(S > u)
        x = special.ndtr((m - u) / s)
        lo, _ = bernstein_mean_bounds(x, beta)
        exact = float(special.ndtr(-u / s))
        num, den = lo - _PAD - delta, exact + _PAD
        p_num, p_den = float(x.mean()) - delta, exact
    elif direction == "remove":  # P(S < u) - delta <= e^eps P'(S < u)
        x = special.ndtr((u - m) / s)
        _, hi = bernstein_mean_bounds(x, beta)
        exact = float(special.ndtr(u / s))
        num, den = exact - _PAD - delta, hi + _PAD
        p_num, p_den = exact - delta, float(x.mean())
    else:
        raise InvalidParameter("direction", "'add' or 'remove'")
    eps = math.log(num / den) - _ROUNDING if num > 0 else 0.0
    point = math.log(p_num / p_den) if p_num > 0 and p_den > 0 else 0.0
    return max(0.0, eps), max(0.0, point)


_DESIGNS: tuple[tuple[float, int | None, int], ...] = tuple(
    (lam, None, drain) for lam in (60.0, 240.0) for drain in (8, 12, 16, 24, 32, 40, 48, 56, 64)
)


def dicesgd_orthogonal_epsilon_lower(
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
    samples: int = 200_000,
    pilot_samples: int = 20_000,
    confidence: float = 0.99,
    seed: int = 0,
    designs: tuple[tuple[float, int | None, int], ...] = _DESIGNS,
) -> tuple[float, dict]:
    """Lower bound (probability >= ``confidence`` over ``seed``) on DiceSGD's epsilon(delta) from the
    orthogonal storage instance; 0.0 when no design applies (the boundary cells).

    A pilot sample picks the design ``(lam, store, drain)``, the matched weights, the direction and
    the threshold; one fresh sample of ``samples`` draws certifies that single test.
    """
    q, z, t = float(sample_rate), float(noise_multiplier), int(steps)
    for name, ok in (
        ("sample_rate", 0 < q < 1),
        ("noise_multiplier", z > 0 and math.isfinite(z)),
        ("steps", t >= 4),
        ("delta", 0 < delta < 1),
        ("c1", c1 > 0 and math.isfinite(c1)),
        ("c2", c2 > 0 and math.isfinite(c2)),
        ("batch_size", batch_size > 0 and math.isfinite(batch_size)),
        ("grad_bound", grad_bound > 0 and math.isfinite(grad_bound)),
        ("dataset_size", int(dataset_size) >= 2),
        ("samples", int(samples) >= 2),
        ("pilot_samples", int(pilot_samples) >= 2),
        ("confidence", 0 < confidence < 1),
    ):
        if not ok:
            raise InvalidParameter(name, "out of range for the orthogonal storage audit")
    rng = np.random.default_rng(seed)
    best: tuple[float, OrthogonalPlan, str, float, tuple] | None = None
    for lam, store, drain in designs:
        plan = orthogonal_plan(
            sample_rate=q,
            noise_multiplier=z,
            steps=t,
            c1=c1,
            c2=c2,
            batch_size=batch_size,
            grad_bound=grad_bound,
            dataset_size=int(dataset_size),
            lam=lam,
            store=store,
            drain=drain,
            weights="matched",
        )
        if plan is None:
            continue
        m = release_means(plan, rng, int(pilot_samples))
        est, direction, u = pilot_test(plan, delta, m, int(samples), 1.0 - confidence)
        if best is None or est > best[0]:
            best = (est, plan, direction, u, (lam, store, drain))
    if best is None:
        return 0.0, {"applicable": False}
    _, plan, direction, u, design = best
    m = release_means(plan, rng, int(samples))  # fresh draws: the test is fixed before them
    eps, point = orthogonal_epsilon_lower(plan, delta, direction, u, m, 1.0 - confidence)
    return eps, {
        "applicable": True,
        "lam": design[0],
        "store": design[1],
        "drain": design[2],
        "direction": direction,
        "threshold": u,
        "point_estimate": point,
        "confidence": confidence,
        "samples": int(samples),
        "seed": seed,
    }
