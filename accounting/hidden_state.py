"""Certified RDP accountant for DiceSGD's error-feedback hidden state (DiceSGD paper, Alg. 2).

DiceSGD releases ``x_{t+1} = x_t - eta (v_t + w_t)`` with
``v_t = (1/B) sum_{i in B_t} clip(g_i, C1) + clip(e_t, C2)`` and ``w_t ~ N(0, sigma1^2 I)``,
while the error state ``e_{t+1} = e_t - clip(e_t, C2) + (1/B) sum_{i in B_t} (g_i - clip(g_i, C1))``
stays hidden.  The full derivation is in ``docs/hidden-state.md``; its result, in units of the
per-example sensitivity ``C1/B`` of the averaged update (so the noise is ``z = sigma1 B / C1``):

* step ``t`` (0-based) is bounded, at every order ``alpha`` and in both add/remove directions, by
  ``min_{lambda in (0,1)} eps_SG(q, z sqrt(1-lambda); alpha) + alpha u_t^2 / (2 z^2 lambda)``
  (noise splitting; ``eps_SG`` is the Poisson-subsampled Gaussian RDP) and by the unamplified
  ``alpha (1 + u_t)^2 / (2 z^2)``; for ``u_t = 0`` it is exactly ``eps_SG(q, z; alpha)``;
* ``u_t = U_t B / C1`` with ``U_t = 0`` for ``t = 0`` and, for ``t >= 1``,
  ``U_t = 2 C2`` without a gradient bound, ``U_t = min(2 C2, t max(0, G - C1) / B)`` with a
  per-example gradient-norm bound ``G``;
* steps compose additively (adaptive composition, after conditioning on every other example's
  Poisson bits).

The split is optimised per order on a fixed grid of ``lambda``; every grid point is a valid bound,
so the grid only costs tightness.  A fixed grid in ``lambda`` keeps the result monotone in the
noise (each term decreases in ``z`` at fixed ``lambda``), in ``C2`` (``U_t`` grows) and in ``T``
(non-negative terms are added).

*Flush regime* (docs/hidden-state.md, "The flush regime"): when every per-example residual
``g_i - clip(g_i, C1)`` has norm <= rho (a gradient bound G, or the residual clip R) and the others'
batch sizes stay below ``B C2 / rho - 1`` at every step (event E, probability >= 1 - P(E^c)), the
state is emptied by every ``clip(e_t, C2)`` and DiceSGD is a post-processing of DP-SGD with noise
multiplier ``z C1 / (C1 + rho)``; then it is ``(eps, delta_RDP + P(E^c))``-DP
(:func:`dicesgd_flush_epsilon`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter, UnreachableTarget
from accounting.rounding import up

__all__ = [
    "residual_norm_bound",
    "binomial_log_sf_upper",
    "flush_failure_probability",
    "dicesgd_flush_rdp",
    "dicesgd_flush_epsilon",
    "hidden_state_shift_bounds",
    "shift_groups",
    "dicesgd_certified_rdp",
    "dicesgd_certified_epsilon",
    "largest_c2",
    "dicesgd_certified_epsilon_capped",
    "SPLIT_GRID",
]

#: Fraction ``lambda = sigma_b^2 / sigma^2`` of the noise variance spent on the hidden-state shift:
#: logistic grid, dense enough that the optimum is resolved to ~1% in the per-step RDP even when the
#: shift dwarfs the per-example sensitivity (lambda -> 1) or is tiny (lambda -> 0).
SPLIT_GRID: np.ndarray = 1.0 / (1.0 + np.exp(-np.arange(-16.0, 16.0 + 1e-9, 0.2)))
SPLIT_GRID.setflags(write=False)


def hidden_state_shift_bounds(
    *, steps: int, c1: float, c2: float, batch_size: float, grad_bound: float | None = None
) -> np.ndarray:
    """Bound ``U_t`` (t = 0..T-1) on ``||clip(e'_t, C2) - clip(e_t, C2)||`` in averaged-update units.

    ``e_0 = e'_0`` so ``U_0 = 0``.  ``x -> x - clip(x, C2)`` is non-expansive (it is ``I - P`` for the
    projection ``P`` onto the C2-ball), so ``||e'_{t+1} - e_{t+1}|| <= ||e'_t - e_t|| + b_t ||g' -
    clip(g', C1)|| / B`` with ``||g' - clip(g', C1)|| = max(0, ||g'|| - C1) <= max(0, G - C1)``; and
    ``||clip(a) - clip(b)|| <= min(2 C2, ||a - b||)``.  Without ``G`` the increment is unbounded.
    An array of length T: the accountant uses :func:`shift_groups`, whose size does not grow with T.
    """
    t = np.arange(int(steps), dtype=float)
    if grad_bound is None:
        u = np.full_like(t, 2.0 * c2)
    else:
        a = max(0.0, float(grad_bound) - float(c1)) / float(batch_size)
        u = np.minimum(2.0 * c2, t * a)
    u[0] = 0.0
    return u


#: Up to this many distinct ramp values ``U_t`` are evaluated exactly; beyond, steps are grouped.
MAX_EXACT_SHIFTS = 4096


def shift_groups(
    *,
    steps: int,
    c1: float,
    c2: float,
    batch_size: float,
    grad_bound: float | None = None,
    cap: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(values, counts)``: the normalised shifts ``u_t = U_t B / C1`` of :func:`hidden_state_shift_bounds`
    (with ``t`` replaced by ``min(t, cap)`` when an inclusion cap is given) as groups, in O(1) memory in T.

    ``u_t`` is nondecreasing in ``t`` and constant once ``t a >= 2 C2`` (or ``t >= cap``), so the
    distinct values are a ramp ``t = 1..m-1`` and one plateau.  With at most
    :data:`MAX_EXACT_SHIFTS` ramp steps every value is the exact one (the same floating-point
    expression as the array version); with more, the ramp is cut into geometric buckets and each
    step takes the value at its bucket's right end: never smaller than its own, and the per-step
    bound increases with ``u`` (both terms of ``_per_step_rdp`` do), so the sum stays an upper
    bound.  Buckets end at ``ceil`` of a geometric grid, so ``u`` grows by at most ~0.5% at T = 1e9.
    """
    t_all = int(steps)
    b, c1f, c2f = float(batch_size), float(c1), float(c2)
    if t_all <= 1:
        return np.zeros(1), np.ones(1, dtype=np.int64)
    if grad_bound is None:
        return np.array([0.0, 2.0 * c2f * b / c1f]), np.array([1, t_all - 1], dtype=np.int64)
    a = max(0.0, float(grad_bound) - c1f) / b

    def f(t: np.ndarray) -> np.ndarray:
        tt = t if cap is None else np.minimum(t, cap)
        return np.minimum(2.0 * c2f, tt.astype(float) * a) * b / c1f

    # m: first t >= 1 from which u_t is constant (t a >= 2 C2, or t >= cap), at most T - 1
    m = t_all - 1
    ramp = 2.0 * c2f / a if a > 0.0 else math.inf
    if a > 0.0 and math.isfinite(ramp):  # an infinite ramp (C2 / a past the float range) never ends
        m = min(m, max(1, math.ceil(ramp)))
    elif a == 0.0:
        m = 1
    if cap is not None:
        m = min(m, max(1, int(cap)))
    if m - 1 <= MAX_EXACT_SHIFTS:
        ends = np.arange(1, m, dtype=np.int64)
    else:
        ends = np.unique(np.ceil(np.geomspace(1.0, m - 1, MAX_EXACT_SHIFTS)).astype(np.int64))
        ends = ends[(ends >= 1) & (ends <= m - 1)]
        if ends[-1] != m - 1:
            ends = np.append(ends, m - 1)
    starts = np.concatenate([[0], ends[:-1]]) if ends.size else ends
    # the plateau takes f(T - 1), the largest of f(m..T-1) (f is monotone in floating point too)
    values = np.concatenate([[0.0], f(ends), f(np.array([t_all - 1], dtype=np.int64))])
    counts = np.concatenate([[1], ends - starts, [t_all - m]]).astype(np.int64)
    keep = counts > 0
    return values[keep], counts[keep]


def _sg_table(sample_rate: float, noise_multipliers: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """``eps_SG(q, z_k; alpha_j)`` for each noise multiplier z_k: shape (len(z), len(orders)).

    Non-finite entries (orders the subsampled-Gaussian routine could not evaluate) become +inf, which
    is conservative; the caller reports them as dropped.
    """
    z = np.asarray(noise_multipliers, dtype=float)
    orders = np.asarray(orders, dtype=float)
    return _sg_table_memo(float(sample_rate), z.tobytes(), orders.tobytes())


@functools.lru_cache(maxsize=64)
def _sg_table_memo(sample_rate: float, z_bytes: bytes, orders_bytes: bytes) -> np.ndarray:
    """:func:`_sg_table` memoised (read-only result): the certified and the flush bounds, and the
    audits that report them, ask for the same tables of one configuration."""
    from accounting.rdp import subsampled_gaussian_rdp_steps

    z = np.frombuffer(z_bytes, dtype=float)
    orders = np.frombuffer(orders_bytes, dtype=float)
    q = np.full_like(z, sample_rate)
    table = np.asarray(subsampled_gaussian_rdp_steps(q, z, orders), dtype=float)
    table = table.reshape(z.size, orders.size)
    out = np.where(np.isfinite(table), table, np.inf)
    out.setflags(write=False)
    return out


def _per_step_rdp(
    u: np.ndarray, noise_multiplier: float, orders: np.ndarray, sg_split: np.ndarray, sg_full: np.ndarray
) -> np.ndarray:
    """Per-step RDP bound for each normalised shift ``u`` (shape (G,)) -> (G, n_orders).

    ``sg_split[k, j] = eps_SG(q, z sqrt(1 - lambda_k); alpha_j)``, ``sg_full[j] = eps_SG(q, z; alpha_j)``.
    """
    z2 = noise_multiplier * noise_multiplier  # +inf above ~1e154 (a float product never raises)
    u = np.asarray(u, dtype=float)
    out = np.empty((u.size, orders.size))
    zero = u == 0.0
    out[zero] = sg_full
    if np.any(~zero):
        uu = u[~zero]
        # min over the split grid k of eps_SG at the split noise + the Gaussian RDP of the shift at
        # the rest, orders u^2 / (2 z^2 lambda_k): one (G, J) slice per k with a running minimum --
        # the same roundings as a (G, K, J) array's, without its cache-sized passes.
        num = orders[None, :] * (uu[:, None] ** 2)
        two_z2 = 2.0 * z2
        split = sg_split[0] + num / (two_z2 * SPLIT_GRID[0])
        cand = np.empty_like(split)
        for k in range(1, SPLIT_GRID.size):
            np.divide(num, two_z2 * SPLIT_GRID[k], out=cand)
            cand += sg_split[k]
            np.minimum(split, cand, out=split)
        joint = orders[None, :] * (1.0 + uu[:, None]) ** 2 / (2.0 * z2)
        # each entry is a few roundings of positive terms: 8 ulps keep it above the exact bound
        out[~zero] = np.minimum(split, joint) * up(8)
    return out


def _check_common(sample_rate, noise_multiplier, steps, c1, c2, batch_size, grad_bound):
    q = validate.rate("--sample-rate", sample_rate)
    z = validate.positive("--noise-multiplier", noise_multiplier)
    t = validate.positive_int("--steps", steps)
    c1v = validate.positive("--c1", c1)
    c2v = validate.positive("--c2", c2)
    b = validate.positive("--batch-size", batch_size)
    g = None if grad_bound is None else validate.positive("--grad-bound", grad_bound)
    return q, z, t, c1v, c2v, b, g


def _certified_from_tables(
    u_norm: np.ndarray, noise_multiplier: float, orders: np.ndarray, sg_split: np.ndarray, sg_full: np.ndarray
) -> np.ndarray:
    """Sum of per-step bounds, evaluating each distinct shift once (steps grouped by U_t).

    The sum of n nonnegative products rounds by at most (n + 1) ulps of the total: scaled up by
    that and by the pad of one group, as :mod:`accounting.rdp` scales its composed sums (so at
    U = 0 the two agree exactly)."""
    if isinstance(u_norm, tuple):  # (values, counts) from shift_groups
        raw, raw_counts = u_norm
        values, inverse = np.unique(raw, return_inverse=True)
        counts = np.bincount(inverse.reshape(-1), weights=raw_counts, minlength=values.size)
    else:
        values, counts = np.unique(u_norm, return_counts=True)
    # rows in chunks: the (rows, split grid, orders) temporary stays ~30 MB whatever the groups
    chunk = max(1, 2**22 // max(1, SPLIT_GRID.size * orders.size))
    per = np.concatenate(
        [
            _per_step_rdp(values[i : i + chunk], noise_multiplier, orders, sg_split, sg_full)
            for i in range(0, values.size, chunk)
        ]
    )
    # the second factor is accounting.rdp's pad for adding one group into its total
    return np.sum(per * counts[:, None], axis=0) * up(values.size + 2) * up(2)


def dicesgd_certified_rdp(
    *,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    c1: float,
    c2: float,
    batch_size: float,
    grad_bound: float | None = None,
    orders,
):
    """Certified RDP curve of T steps of DiceSGD (Alg. 2) under add/remove adjacency.

    ``noise_multiplier`` is ``z = sigma1 B / C1`` (sigma1: std of the noise on the averaged update
    v_t; B: expected batch size q N).  ``grad_bound`` is an optional bound G on every per-example
    gradient norm; with ``G <= C1`` the hidden state never differs and the result equals DP-SGD's
    subsampled-Gaussian RDP exactly.  Every step of the bound is derived in docs/hidden-state.md.
    """
    from accounting.rdp import RdpCurve

    q, z, t, c1v, c2v, b, g = _check_common(
        sample_rate, noise_multiplier, steps, c1, c2, batch_size, grad_bound
    )
    orders = np.asarray(orders, dtype=float)
    # RdpCurve copies its arrays, so callers never share (or can mutate) the cached ones.
    rdp, dropped = _certified_rdp_memo(q, z, t, c1v, c2v, b, g, orders.tobytes())
    return RdpCurve(orders=orders, rdp=rdp, dropped=dropped)


@functools.lru_cache(maxsize=64)
def _certified_rdp_memo(
    q: float, z: float, t: int, c1v: float, c2v: float, b: float, g: float | None, orders_bytes: bytes
) -> tuple[np.ndarray, tuple[tuple[float, str], ...]]:
    """The body of :func:`dicesgd_certified_rdp` on validated inputs, memoised.

    It is a pure function of its arguments; the same configuration is evaluated several times
    by one process (an audit and the verification claims that compare against it both ask for
    the certified curve), and each evaluation costs ~0.1-0.5 s.
    """
    orders = np.frombuffer(orders_bytes, dtype=float)
    u_norm = shift_groups(steps=t, c1=c1v, c2=c2v, batch_size=b, grad_bound=g)
    sg_full = _sg_table(q, np.array([z]), orders)[0]
    if np.any(u_norm[0] > 0):
        sg_split = _sg_table(q, z * np.sqrt(1.0 - SPLIT_GRID), orders)
    else:
        sg_split = np.empty((0, orders.size))
    rdp = _certified_from_tables(u_norm, z, orders, sg_split, sg_full)
    dropped = tuple(
        (float(a), "subsampled-Gaussian RDP not evaluable at this order; bound set to +inf")
        for a, v in zip(orders, rdp, strict=True)
        if not np.isfinite(v)
    )
    rdp.setflags(write=False)
    return rdp, dropped


def dicesgd_certified_epsilon(*, delta: float, **kwargs) -> float:
    """(epsilon at delta) of :func:`dicesgd_certified_rdp` via the default RDP -> DP conversion."""
    from accounting.conversion import rdp_to_epsilon

    return float(rdp_to_epsilon(dicesgd_certified_rdp(**kwargs), delta).epsilon)


def largest_c2(
    *,
    noise_multiplier: float,
    delta: float,
    sample_rate: float,
    steps: int,
    c1: float,
    batch_size: float,
    grad_bound: float | None,
    max_noise_ratio: float,
    orders,
) -> float:
    """Largest C2 whose certified DiceSGD noise stays within ``max_noise_ratio`` x DP-SGD's.

    Definition: let ``eps0`` be the epsilon (at ``delta``, same RDP conversion) that DP-SGD reaches
    at ``noise_multiplier``; the certified noise for C2 is the smallest z' with certified DiceSGD
    epsilon(z', C2) <= eps0.  Since the certified epsilon decreases in z' and increases in C2, the
    condition ``z'(C2) <= R z`` is ``eps_cert(R z, C2) <= eps0`` and the largest such C2 is found by
    bisection on log C2 (the returned value always satisfies it).  Returns ``math.inf`` when every
    C2 qualifies (e.g. ``G <= C1``: the hidden state never differs).
    """
    from accounting.conversion import rdp_to_epsilon
    from accounting.rdp import RdpCurve

    r = validate.positive("--max-noise-ratio", max_noise_ratio)
    if r < 1.0:
        raise InvalidParameter("--max-noise-ratio", f"must be >= 1 (got {max_noise_ratio!r})")
    validate.open_unit("--delta", delta)
    q, z, t, c1v, _, b, g = _check_common(
        sample_rate, noise_multiplier, steps, c1, 1.0, batch_size, grad_bound
    )
    orders = np.asarray(orders, dtype=float)
    sg_base = _sg_table(q, np.array([z]), orders)[0]
    eps0 = float(rdp_to_epsilon(RdpCurve(orders=orders, rdp=t * sg_base, dropped=()), delta).epsilon)
    zr = r * z
    sg_full = _sg_table(q, np.array([zr]), orders)[0]
    sg_split = _sg_table(q, zr * np.sqrt(1.0 - SPLIT_GRID), orders)

    def ok(c2v: float) -> bool:
        u = shift_groups(steps=t, c1=c1v, c2=c2v, batch_size=b, grad_bound=g)
        rdp = _certified_from_tables(u, zr, orders, sg_split, sg_full)
        return float(rdp_to_epsilon(RdpCurve(orders=orders, rdp=rdp, dropped=()), delta).epsilon) <= eps0

    if g is not None:
        # Beyond C2 = (T-1) a / 2 the bound min(2 C2, t a) no longer depends on C2.
        a = max(0.0, g - c1v) / b
        if a == 0.0 or ok(max(1.0, (t - 1) * a)):
            return math.inf
    if ok(c1v):
        lo, hi = c1v, c1v * 4.0
        while ok(hi):
            lo, hi = hi, hi * 4.0
            if hi > 1e12 * c1v:
                return math.inf
    else:
        hi, lo = c1v, c1v / 4.0
        while not ok(lo):
            hi, lo = lo, lo / 4.0
            if lo < 1e-12 * c1v:
                raise UnreachableTarget(
                    "--max-noise-ratio",
                    f"no C2 >= {lo:.3g} keeps the certified noise within {r:g}x DP-SGD's "
                    "(use a ratio > 1 or a --grad-bound)",
                )
    for _ in range(60):
        if hi / lo < 1 + 1e-6:
            break
        mid = math.sqrt(lo * hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def dicesgd_certified_epsilon_capped(
    *,
    delta: float,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    c1: float,
    c2: float,
    batch_size: float,
    grad_bound: float | None = None,
    orders,
    failure_share: float = 0.1,
) -> dict:
    """Certified (epsilon, delta) with the *inclusion cap* (docs/hidden-state.md, "Known looseness").

    M~ = DiceSGD that ignores xi' after k inclusions equals DiceSGD except on an event of
    probability ``beta = P[Bin(T, q) > k]`` under D' (and never under D); the per-step bound applies
    to M~ with ``U_t = min(2 C2, min(t, k) (G - C1)/B)``, so DiceSGD is
    ``(eps, delta_rdp + e^eps beta)``-DP.  ``delta_rdp = (1 - failure_share) delta`` and k is the
    smallest cap with ``e^eps beta <= failure_share delta`` (checked for the returned eps).  Only
    helps with a gradient bound G > C1; otherwise (and whenever it does not help) the plain
    certified epsilon at ``delta`` is returned.  Returns ``{"epsilon", "cap", "beta", "delta_rdp"}``.
    """
    from scipy import stats

    from accounting.conversion import rdp_to_epsilon
    from accounting.rdp import RdpCurve

    validate.open_unit("--delta", delta)
    share = validate.open_unit("failure_share", failure_share)
    q, z, t, c1v, c2v, b, g = _check_common(
        sample_rate, noise_multiplier, steps, c1, c2, batch_size, grad_bound
    )
    orders = np.asarray(orders, dtype=float)
    plain = dicesgd_certified_rdp(
        sample_rate=q, noise_multiplier=z, steps=t, c1=c1v, c2=c2v, batch_size=b, grad_bound=g, orders=orders
    )
    best = {
        "epsilon": float(rdp_to_epsilon(plain, delta).epsilon),
        "cap": None,
        "beta": 0.0,
        "delta_rdp": delta,
    }
    if g is None or g <= c1v:
        return best
    sg_full = _sg_table(q, np.array([z]), orders)[0]
    sg_split = _sg_table(q, z * np.sqrt(1.0 - SPLIT_GRID), orders)
    d_rdp = (1.0 - share) * delta
    budget = share * delta
    guess = best["epsilon"]
    for _ in range(4):
        if guess > 700:
            break

        # smallest k with beta(k) e^guess <= budget (sf is P[X > k], nonincreasing in k; 1% safety
        # on beta): integer bisection, no array of length T
        def fits(k: int, guess: float = guess) -> bool:
            return 1.01 * float(stats.binom.sf(k, t, q)) * math.exp(guess) <= budget

        lo_k, hi_k = -1, t  # fits(t) holds (sf = 0)
        while hi_k - lo_k > 1:
            mid = (lo_k + hi_k) // 2
            if fits(mid):
                hi_k = mid
            else:
                lo_k = mid
        k = hi_k
        beta = 1.01 * float(stats.binom.sf(k, t, q)) if k < t else 0.0
        u = shift_groups(steps=t, c1=c1v, c2=c2v, batch_size=b, grad_bound=g, cap=k)
        rdp = _certified_from_tables(u, z, orders, sg_split, sg_full)
        eps_k = float(rdp_to_epsilon(RdpCurve(orders=orders, rdp=rdp, dropped=()), d_rdp).epsilon)
        if eps_k < best["epsilon"] and (beta == 0.0 or math.exp(eps_k) * beta <= budget):
            best = {"epsilon": eps_k, "cap": k, "beta": beta, "delta_rdp": d_rdp}
        if eps_k >= guess - 1e-12:
            break
        guess = eps_k
    return best


# --------------------------------------------------------------------------------------------
# Flush regime (docs/hidden-state.md, "The flush regime")
# --------------------------------------------------------------------------------------------

#: Relative inflation of every computed residual bound rho and of every log-probability (added to
#: the log) -- covers floating-point error in lgamma sums and closed forms; never lowers a bound.
_REL_SLACK = 1e-9
CLIP_MODES = ("flat", "automatic")


def residual_norm_bound(
    *,
    c1: float,
    grad_bound: float | None = None,
    clip_mode: str = "flat",
    gamma: float = 0.01,
    residual_clip: float | None = None,
) -> float | None:
    """rho: a bound on every per-example error increment ``||r_i||`` (None when unbounded).

    * flat clipping ``clip(g, C1) = min(1, C1/||g||) g``: ``||g - clip(g, C1)|| = max(0, ||g|| - C1)``,
      so ``rho = max(0, G - C1)``;
    * automatic clipping ``C1 g / (||g|| + gamma)`` (``dptheory.optim.base.clip_factors``):
      ``||r|| = phi(u) = u |1 - C1/(u + gamma)|`` with ``u = ||g||``, and ``rho = max_{u in [0, G]}
      phi(u)``. On ``u + gamma >= C1``, ``phi = u - C1 u/(u + gamma)`` is increasing (``phi' = 1 -
      C1 gamma/(u + gamma)^2 >= 1 - min(gamma/C1, C1/gamma) >= 0``), so its maximum there is at G. On
      ``u + gamma < C1`` (only when gamma < C1), ``phi = C1 u/(u + gamma) - u`` is concave with its
      maximum at ``u* = sqrt(C1 gamma) - gamma``, where ``phi(u*) = (sqrt(C1) - sqrt(gamma))^2``. So
      rho is the larger of ``phi(G)`` and ``phi(min(G, u*))`` (when ``u* > 0``) -- nonzero even for
      ``G < C1``;
    * the residual clip ``R`` (``r_i = clip(g_i - c_i, R)``, which for flat clipping is
      ``clip(g_i, C1 + R) - clip(g_i, C1)``) gives ``rho = R`` (or the smaller of R and the bound
      from G).
    """
    c1 = validate.positive("--c1", c1)
    if clip_mode not in CLIP_MODES:
        raise InvalidParameter("--clip-mode", f"must be flat or automatic (got {clip_mode!r})")
    rho_g = None
    if grad_bound is not None:
        g = validate.positive("--grad-bound", grad_bound)
        if clip_mode == "flat":
            rho_g = max(0.0, g - c1)
        else:
            gam = validate.positive("--gamma", gamma)

            def phi(u: float) -> float:
                return u * abs(1.0 - c1 / (u + gam))

            cands = [phi(g)]
            ustar = math.sqrt(c1 * gam) - gam
            if ustar > 0:
                cands.append(phi(min(g, ustar)))
            rho_g = max(cands) * (1.0 + _REL_SLACK)
    if residual_clip is not None:
        r = validate.positive("--residual-clip", residual_clip)
        return r if rho_g is None else min(r, rho_g)
    return rho_g


def binomial_log_sf_upper(n: int, q: float, k: int) -> float:
    """An upper bound on ``log P[Bin(n, q) > k]``.

    ``log pmf(j) = lgamma(n+1) - lgamma(j+1) - lgamma(n-j+1) + j log q + (n-j) log(1-q)``, summed by
    log-sum-exp over ``j = k+1..n``.  The lgamma terms are O(n log n) and cancel, so their rounding
    (about n log n ulps) is added as an absolute slack, together with a relative 1e-9; the larger of
    that and scipy's ``binom.logsf`` (inflated the same way) is returned.  The relative 1e-9 slack
    alone is too small from n ~ 1e7 on (5e-8 low in log at n = 1e8).  Beyond
    2e6 terms only scipy's value is used (the explicit sum would need O(n) memory).
    """
    from scipy.special import gammaln, logsumexp
    from scipy.stats import binom

    n = int(n)
    k = int(k)
    if k < 0:
        return 0.0
    if k >= n:
        return -math.inf
    if q >= 1.0:
        return 0.0
    rounding = 64.0 * np.finfo(float).eps * (float(gammaln(n + 1.0)) + n * abs(math.log(q)) + 1.0)
    candidates = [float(binom.logsf(k, n, q))]
    if n - k <= 2_000_000:
        j = np.arange(k + 1, n + 1, dtype=float)
        logpmf = (
            gammaln(n + 1.0)
            - gammaln(j + 1.0)
            - gammaln(n - j + 1.0)
            + j * math.log(q)
            + (n - j) * math.log1p(-q)
        )
        candidates.append(float(logsumexp(logpmf)))
    total = (
        max(c for c in candidates if not math.isnan(c)) if any(not math.isnan(c) for c in candidates) else 0.0
    )
    out = total + _REL_SLACK * (1.0 + abs(total)) + rounding
    return min(0.0, out)


def flush_failure_probability(
    *, rho: float, c2: float, batch_size: float, population: int, sample_rate: float, steps: int
) -> dict:
    """Upper bound on ``P(E^c)``, E = {for every step t: (|S_t| + 1) rho <= B C2}.

    ``|S_t| ~ Bin(population, q)`` is the batch drawn from the examples other than xi'. Under
    add/remove adjacency with a dataset of N examples the others are N (xi' added) or N - 1 (xi'
    removed); Bin(N, q) dominates Bin(N - 1, q), so ``population = N`` is the conservative choice.
    Union bound over the T steps: ``P(E^c) <= T P[Bin(N, q) > k_max]`` with
    ``k_max = max{k : (k + 1) rho <= B C2}``. Returns ``{"p_fail", "log_p_fail", "k_max"}``
    (``k_max`` None when rho = 0: E always holds).
    """
    if rho <= 0.0:
        return {"p_fail": 0.0, "log_p_fail": -math.inf, "k_max": None}
    ratio = float(batch_size) * float(c2) / float(rho)
    if not math.isfinite(ratio) or ratio > float(population) + 2.0:
        # no batch of the others can be that large: E always holds (k_max capped at the population)
        return {"p_fail": 0.0, "log_p_fail": -math.inf, "k_max": int(population)}
    # Largest k with (k + 1) rho <= B C2, rounded *down* (a smaller k only raises the bound).
    k_max = int(math.floor(ratio * (1.0 - 1e-12))) - 1
    if k_max < 0:
        return {"p_fail": 1.0, "log_p_fail": 0.0, "k_max": k_max}
    log_p = binomial_log_sf_upper(int(population), float(sample_rate), k_max) + math.log(int(steps))
    log_p = min(0.0, log_p)
    return {"p_fail": math.exp(log_p), "log_p_fail": log_p, "k_max": k_max}


def dicesgd_flush_rdp(
    *, sample_rate: float, noise_multiplier: float, steps: int, c1: float, rho: float, orders
):
    """RDP of DiceSGD on the event E: T steps of DP-SGD at noise multiplier ``z C1 / (C1 + rho)``.

    (Valid conditionally on the others' bits lying in E; docs/hidden-state.md, "The flush regime".)
    """
    from accounting.rdp import subsampled_gaussian_rdp

    z = validate.positive("--noise-multiplier", noise_multiplier)
    c1 = validate.positive("--c1", c1)
    z_eff = z * c1 / (c1 + float(rho))
    return subsampled_gaussian_rdp(sample_rate, z_eff, np.asarray(orders, dtype=float), steps=int(steps))


def dicesgd_flush_epsilon(
    *,
    delta: float,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    c1: float,
    c2: float,
    batch_size: float,
    population: int,
    rho: float,
    orders,
    conversion: str = "improved",
) -> dict:
    """Certified (eps, delta) of DiceSGD in the flush regime.

    ``delta = delta_RDP + P(E^c)`` with ``delta_RDP = delta - P(E^c)`` (required > 0; else the regime
    does not apply and ``epsilon`` is inf). Returns ``{"epsilon", "order", "p_fail", "k_max",
    "delta_rdp", "noise_multiplier_effective", "warnings"}``.
    """
    from accounting.conversion import rdp_to_epsilon

    delta = validate.open_unit("--delta", delta)
    q = validate.rate("--sample-rate", sample_rate)
    t = validate.positive_int("--steps", steps)
    c1 = validate.positive("--c1", c1)
    c2 = validate.positive("--c2", c2)
    b = validate.positive("--batch-size", batch_size)
    fail = flush_failure_probability(
        rho=rho, c2=c2, batch_size=b, population=population, sample_rate=q, steps=t
    )
    out = {
        "epsilon": math.inf,
        "order": None,
        "p_fail": fail["p_fail"],
        "k_max": fail["k_max"],
        "delta_rdp": None,
        "noise_multiplier_effective": float(noise_multiplier) * c1 / (c1 + float(rho)),
        "warnings": (),
    }
    if not fail["p_fail"] < delta:
        return out
    if fail["log_p_fail"] == -math.inf:  # E is certain (rho = 0, or no batch can overflow the ball)
        d_rdp = delta
    else:  # the 1e-12 covers rounding in the subtraction and a p_fail that underflowed to 0.0
        d_rdp = (delta - fail["p_fail"]) * (1.0 - 1e-12)
    curve = dicesgd_flush_rdp(
        sample_rate=q, noise_multiplier=noise_multiplier, steps=t, c1=c1, rho=rho, orders=orders
    )
    res = rdp_to_epsilon(curve, d_rdp, method=conversion)
    out.update(
        epsilon=float(res.epsilon),
        order=float(res.order) if res.order is not None and math.isfinite(res.order) else None,
        delta_rdp=d_rdp,
        warnings=tuple(getattr(res, "warnings", ()) or ()),
    )
    return out
