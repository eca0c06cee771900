"""Audit of DiceSGD (Alg. 2) on a one-dimensional worst-case instance with a hidden error state.

Instance (add/remove pair D, D' = D + {xi'}), linear losses in one dimension:

* every example of D has ``f(x; xi) = 0`` (zero gradient); xi' has ``f(x; xi') = G x``, G > C1;
* under D the error state stays ``e_t = 0`` and the released update is ``y_t = v_t + w_t = w_t``;
* under D', with ``b_t ~ Bern(q)`` xi''s (hidden) Poisson bit and ``a = (G - C1) / B``:
  ``y_t = b_t C1/B + clip(e'_t, C2) + w_t`` and ``e'_{t+1} = e'_t - clip(e'_t, C2) + b_t a``.

(Releasing ``x_{t+1} = x_t - eta (v_t + w_t)`` is the same as releasing ``y_t``: a bijection given
the public past.)  We choose ``a`` on a lattice so that ``e'_t`` takes finitely many values:
``a <= C2`` keeps ``e'_t in {0, a}`` (the state is the previous bit); ``a > C2`` is rounded *down*
to ``K C2`` (so the instance's gradient ``C1 + B K C2`` still respects a user bound G) and
``e'_t = m_t C2`` with ``m_{t+1} = max(m_t - 1, 0) + K b_t``, capped at the number of steps left
(beyond it the future emissions no longer depend on m).  Without ``--grad-bound`` the instance takes
``K = T`` (one inclusion keeps ``clip(e', C2) = C2`` until the end: a large but finite gradient,
allowed by Assumption 3.5, which Theorem 3.7 says may be arbitrarily large).

Exact likelihood ratio: ``log p_{D'}(y) / p_D(y)`` is a forward pass (HMM) over (m_t, b_t) with
Gaussian emissions, in log space.  Trajectories are sampled under both neighbours, and
:func:`accounting.audit.stats.mc_epsilon_lower` turns each sample of privacy losses into a rigorous
lower confidence bound on epsilon(delta) (Bernoulli-ised hockey-stick estimator + Clopper-Pearson);
the two directions share the confidence budget (union bound).  With ``G <= C1`` the hidden state
never moves and the instance is exactly DP-SGD's, audited by the deterministic PLD lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.audit.stats import mc_epsilon_lower

__all__ = ["DiceInstance", "dice_instance", "sample_losses", "dicesgd_epsilon_lower"]


@dataclass(frozen=True)
class DiceInstance:
    """The 1-D lattice instance (all quantities in averaged-update units)."""

    sample_rate: float
    steps: int
    c1: float
    c2: float
    batch_size: float
    sigma: float  # noise std on the averaged update, sigma1 = z C1 / B
    grad: float  # gradient norm of xi' (the instance's G)
    unit: float  # e' = m * unit
    jump: int  # K: an inclusion adds K units to e'

    @property
    def increment(self) -> float:
        return self.jump * self.unit

    def describe(self) -> str:
        return (
            f"1-D linear losses: N examples with zero gradient, xi' with gradient G={self.grad:.6g} "
            f"(a=(G-C1)/B={self.increment:.6g}); e'_t on the lattice {self.unit:.6g}*m; "
            f"T={self.steps}, q={self.sample_rate:.6g}, B={self.batch_size:.6g}, C1={self.c1:g}, "
            f"C2={self.c2:g}, sigma1={self.sigma:.6g}"
        )


def dice_instance(
    *,
    sample_rate: float,
    steps: int,
    c1: float,
    c2: float,
    batch_size: float,
    noise_multiplier: float,
    grad_bound: float | None,
) -> DiceInstance:
    """Build the lattice instance; its gradient never exceeds ``grad_bound`` when one is given."""
    sigma = noise_multiplier * c1 / batch_size
    if grad_bound is None:
        jump, unit = steps, c2
    else:
        a = max(0.0, grad_bound - c1) / batch_size
        if a == 0.0:
            jump, unit = 0, c2
        elif a <= c2:
            jump, unit = 1, a
        else:
            jump, unit = min(int(math.floor(a / c2 * (1 + 1e-12))), steps), c2
    grad = c1 + batch_size * jump * unit
    return DiceInstance(sample_rate, steps, c1, c2, batch_size, sigma, grad, unit, jump)


def _transitions(inst: DiceInstance) -> tuple[int, np.ndarray]:
    """Number of states and, per step t, the next-state maps for b = 0, 1 (shape (T, 2, S))."""
    if inst.unit <= inst.c2 and inst.jump == 1 and inst.unit < inst.c2:
        n_states = 2  # e' in {0, a}: fully drained by the next clip
    else:
        n_states = min(inst.jump * inst.steps, inst.steps) + 1
    m = np.arange(n_states)
    nxt = np.empty((inst.steps, 2, n_states), dtype=np.int64)
    for t in range(inst.steps):
        cap = max(inst.steps - t - 1, 0)
        if n_states == 2 and inst.unit < inst.c2:
            nxt[t, 0] = 0
            nxt[t, 1] = 1
        else:
            base = np.maximum(m - 1, 0)
            nxt[t, 0] = np.minimum(base, cap)
            nxt[t, 1] = np.minimum(base + inst.jump, cap)
    return n_states, nxt


def _shift(inst: DiceInstance, n_states: int) -> np.ndarray:
    """clip(e', C2) for each state m (shape (S,))."""
    m = np.arange(n_states, dtype=float)
    return np.minimum(m * inst.unit, inst.c2)


def _simulate(inst: DiceInstance, world: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Released y (n, T) under D (``"D"``) or D' (``"D'"``)."""
    noise = rng.standard_normal((n, inst.steps)) * inst.sigma
    if world == "D":
        return noise
    n_states, nxt = _transitions(inst)
    shift = _shift(inst, n_states)
    bits = rng.random((n, inst.steps)) < inst.sample_rate
    # Step-major copies so that each step reads and writes contiguous memory.
    bits_by_step = np.ascontiguousarray(bits.T)
    m = np.zeros(n, dtype=np.int64)
    mean_by_step = np.empty((inst.steps, n))
    for t in range(inst.steps):
        b = bits_by_step[t]
        mean_by_step[t] = b * (inst.c1 / inst.batch_size) + shift[m]
        m = nxt[t, b.astype(np.int64), m]
    return np.ascontiguousarray(mean_by_step.T) + noise


def log_likelihood_ratio(inst: DiceInstance, y: np.ndarray) -> np.ndarray:
    """Exact ``log p_{D'}(y) - log p_D(y)`` for each row of y (forward pass over hidden states).

    While at most :data:`_FEW_STATES` states are reachable (every instance with ``a <= C2`` or with
    ``K = T``: two per step) the pass runs on one contiguous array per state
    (:func:`_llr_few_states`), several times faster than the general pass and bit-for-bit equal to
    it; rows it cannot finish (a non-finite intermediate) and wider state sets take the general pass.
    """
    out = _llr_few_states(inst, y)
    if out is None:
        return _llr_general(inst, y)
    bad = ~np.isfinite(out)
    if bad.any():
        out[bad] = _llr_general(inst, y[bad])
    return out


def _llr_setup(inst: DiceInstance) -> tuple[np.ndarray, np.ndarray, float]:
    """Next-state maps (T, 2, S), emission means mu[b, m] (2, S), and log P(b) (2,)."""
    n_states, nxt = _transitions(inst)
    shift = _shift(inst, n_states)
    q = inst.sample_rate
    logp = np.array([math.log1p(-q) if q < 1 else -math.inf, math.log(q)])
    mu = np.stack([shift, shift + inst.c1 / inst.batch_size])  # (2, S)
    return nxt, mu, logp


def _llr_general(inst: DiceInstance, y: np.ndarray) -> np.ndarray:
    """The forward pass on an (n, reachable states) array, any number of states."""
    n, steps = y.shape
    nxt, mu, logp = _llr_setup(inst)
    s2 = inst.sigma * inst.sigma  # +inf above ~1e154 (a float product, never OverflowError)
    # Only reachable states are carried (with K = T they are {0, steps left}: two per step).
    states = np.array([0])
    log_a = np.zeros((n, 1))
    for t in range(steps):
        yt = y[:, t][:, None, None]
        m = mu[:, states]  # (2, R)
        # (n, 2, R): log P(b) + log N(y; mu, s2) - log N(y; 0, s2)
        contrib = log_a[:, None, :] + logp[None, :, None] + (yt * m[None] - 0.5 * m[None] ** 2) / s2
        targets = nxt[t][:, states].reshape(-1)
        flat = contrib.reshape(n, -1)
        order = np.argsort(targets, kind="stable")
        sorted_t = targets[order]
        starts = np.flatnonzero(np.r_[True, sorted_t[1:] != sorted_t[:-1]])
        vals = flat[:, order]
        mx = np.maximum.reduceat(vals, starts, axis=1)
        safe = np.where(np.isfinite(mx), mx, 0.0)
        rep = np.repeat(safe, np.diff(np.r_[starts, vals.shape[1]]), axis=1)
        with np.errstate(invalid="ignore"):
            sums = np.add.reduceat(np.exp(vals - rep), starts, axis=1)
        with np.errstate(divide="ignore"):
            log_a = np.where(np.isfinite(mx), safe + np.log(sums), -np.inf)
        states = sorted_t[starts]
    mx = np.max(log_a, axis=1, keepdims=True)
    return (mx + np.log(np.sum(np.exp(log_a - mx), axis=1, keepdims=True)))[:, 0]


# Up to 4 reachable states a target collects at most 8 terms, which numpy's add.reduceat sums as
# first + (((second + third) + ...)) (pairwise summation starts at 9): the order reproduced below.
_FEW_STATES = 4


def _llr_few_states(inst: DiceInstance, y: np.ndarray) -> np.ndarray | None:
    """The general pass's arithmetic, operation for operation, on one (n,) array per state.

    Same values in the same order, so bit-for-bit the same results, without the general pass's
    per-step argsort, gathers and strided column reads.  It omits the general pass's guards for
    non-finite values: a group whose terms are all -inf gives NaN here, which propagates to the
    row's result (max and sums propagate NaN), and the caller recomputes such rows.  Returns None
    as soon as more than :data:`_FEW_STATES` states are reachable.
    """
    n, steps = y.shape
    nxt, mu, logp = _llr_setup(inst)
    s2 = inst.sigma * inst.sigma  # +inf above ~1e154 (a float product, never OverflowError)
    y_by_step = np.ascontiguousarray(y.T)  # row t = y[:, t], contiguous
    logp0, logp1 = float(logp[0]), float(logp[1])
    states = [0]
    log_a = [np.zeros(n)]
    with np.errstate(invalid="ignore", over="ignore"):
        for t in range(steps):
            yt = y_by_step[t]
            terms = []
            for b, lp in ((0, logp0), (1, logp1)):
                for r, s in enumerate(states):
                    m = mu[b, s]
                    base = log_a[r] + lp
                    if m != 0.0:  # m = 0 adds (y*0 - 0)/s2 = +-0, which leaves base unchanged
                        base += (yt * m - 0.5 * (m * m)) / s2
                    terms.append(base)
            targets = nxt[t][:, states].reshape(-1).tolist()
            order = sorted(range(len(targets)), key=targets.__getitem__)  # stable, as argsort
            states, log_a = [], []
            i = 0
            while i < len(order):
                j = i
                while j < len(order) and targets[order[j]] == targets[order[i]]:
                    j += 1
                group = [terms[k] for k in order[i:j]]
                states.append(targets[order[i]])
                if len(group) == 1:
                    log_a.append(group[0] + 0.0)  # exp(v - v) = 1, log 1 = 0
                else:
                    mx = np.maximum(group[0], group[1])
                    for v in group[2:]:
                        np.maximum(mx, v, out=mx)
                    rest = np.exp(group[1] - mx)
                    for v in group[2:]:
                        rest += np.exp(v - mx)
                    total = np.exp(group[0] - mx)
                    total += rest
                    log_a.append(mx + np.log(total))
                i = j
            if len(states) > _FEW_STATES:
                return None
        stacked = np.stack(log_a, axis=1)
        mx = np.max(stacked, axis=1, keepdims=True)
        return (mx + np.log(np.sum(np.exp(stacked - mx), axis=1, keepdims=True)))[:, 0]


def sample_losses(
    inst: DiceInstance, world: str, n: int, rng: np.random.Generator, *, chunk: int = 1000, progress=None
) -> np.ndarray:
    """Privacy losses ``log p_{D'}/p_D`` of n trajectories drawn under ``world``."""
    out = np.empty(n)
    done = 0
    while done < n:
        k = min(chunk, n - done)
        y = _simulate(inst, world, k, rng)
        out[done : done + k] = log_likelihood_ratio(inst, y)
        done += k
        if progress is not None:
            progress.update(k)
    return out


def dicesgd_epsilon_lower(
    inst: DiceInstance, delta: float, *, samples: int, confidence: float, seed: int, progress=None
) -> tuple[float, dict]:
    """Lower confidence bound on epsilon(delta) of DiceSGD on ``inst``; returns (eps, details)."""
    rng = np.random.default_rng(seed)
    beta = (1.0 - confidence) / 2.0  # union bound over the two directions
    loss_add = sample_losses(inst, "D'", samples, rng, progress=progress)  # L ~ P_{D'}
    loss_rem = sample_losses(inst, "D", samples, rng, progress=progress)  # L ~ P_D
    b_add = mc_epsilon_lower(loss_add, delta, beta, rng)
    b_rem = mc_epsilon_lower(-loss_rem, delta, beta, rng)
    details = {
        "direction_add": b_add.epsilon,
        "direction_remove": b_rem.epsilon,
        "order_statistic_needed": b_add.needed,
        "loss_quantiles_add": [float(x) for x in np.quantile(loss_add, [0.5, 0.9, 0.99])],
    }
    return max(b_add.epsilon, b_rem.epsilon), details
