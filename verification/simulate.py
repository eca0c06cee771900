"""Small numpy reference simulations of the papers' updates on low-dimensional toy problems.

They are written line by line from the papers (cited per function), vectorised over seeds, and
expose internal state (DiceSGD's error e_t and clipping factors, Clip21's clipping activity)
that the theorems' constants need. Where :mod:`dptheory.runner` is available the checks
cross-check these references against it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

GradFn = Callable[[np.ndarray], np.ndarray]  # x of shape (S,) -> per-sample grads (S, N)


def _clip_scalar(g: np.ndarray, c: float) -> np.ndarray:
    return np.clip(g, -c, c)


def dicesgd_1d(
    grads: GradFn,
    n: int,
    *,
    x0: float,
    eta: float,
    steps: int,
    c1: float,
    c2: float,
    sigma1: float,
    batch: int,
    seeds: int,
    seed: int,
) -> dict[str, np.ndarray]:
    """DiceSGD, Alg. 2 of Zhang et al. (2311.14632), d = 1, minibatch of size B drawn uniformly.

    v = (1/B) sum_{i in B} clip(g_i, C1) + clip(e, C2);  x <- x - eta (v + w), w ~ N(0, sigma1^2);
    e <- e + (1/B) sum_{i in B} g_i - v.   Returns x_t (S, T+1), and alpha_e^t = min(1, C2/|e_t|).
    """
    rng = np.random.default_rng(seed)
    x = np.full(seeds, float(x0))
    e = np.zeros(seeds)
    xs = np.empty((seeds, steps + 1))
    alpha_e = np.empty((seeds, steps))
    xs[:, 0] = x
    for t in range(steps):
        g = grads(x)  # (S, N)
        if batch < n:
            keys = rng.random((seeds, n))
            idx = np.argsort(keys, axis=1)[:, :batch]
            gb = np.take_along_axis(g, idx, axis=1)
        else:
            gb = g
        abs_e = np.abs(e)
        alpha_e[:, t] = np.where(abs_e <= c2, 1.0, c2 / np.maximum(abs_e, 1e-300))
        v = _clip_scalar(gb, c1).mean(axis=1) + _clip_scalar(e, c2)
        w = rng.normal(0.0, sigma1, seeds) if sigma1 > 0 else 0.0
        x = x - eta * (v + w)
        e = e + gb.mean(axis=1) - v
        xs[:, t + 1] = x
    return {"x": xs, "alpha_e": alpha_e}


def dpsgd_gc_1d(
    grads: GradFn,
    n: int,
    *,
    x0: float,
    eta: float,
    steps: int,
    c: float,
    sigma1: float,
    seeds: int,
    seed: int,
) -> np.ndarray:
    """DPSGD-GC, Alg. 1 of Zhang et al., full batch: x <- x - (eta/N)(sum clip(g_i, C) + w)."""
    rng = np.random.default_rng(seed)
    x = np.full(seeds, float(x0))
    xs = np.empty((seeds, steps + 1))
    xs[:, 0] = x
    for t in range(steps):
        g = grads(x)
        w = rng.normal(0.0, sigma1, seeds) if sigma1 > 0 else 0.0
        x = x - (eta / n) * (_clip_scalar(g, c).sum(axis=1) + w)
        xs[:, t + 1] = x
    return xs


def clip_vec(v: np.ndarray, tau: float) -> np.ndarray:
    """Row-wise clip_tau(v) = min(1, tau/||v||) v."""
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return v * np.minimum(1.0, tau / np.maximum(norms, 1e-300))


def clip21sgd2m_deterministic(
    client_grads: list[Callable[[np.ndarray], np.ndarray]],
    *,
    x0: np.ndarray,
    gamma: float,
    beta: float,
    beta_hat: float,
    tau: float,
    steps: int,
) -> dict[str, np.ndarray]:
    """Clip21-SGD2M with full gradients and no DP noise (equations in docs/algorithms.md).

    x <- x - gamma g;  v_i <- (1-beta) v_i + beta grad f_i(x);  c_i = clip_tau(v_i - g_i);
    g_i <- g_i + beta_hat c_i;  g <- g + (beta_hat/n) sum c_i.   Start v_i = g_i = g = 0.
    Returns x_t, the full-gradient norms and, per step and client, whether clipping was active.
    """
    n = len(client_grads)
    x = np.asarray(x0, dtype=float).copy()
    d = x.size
    v = np.zeros((n, d))
    gi = np.zeros((n, d))
    g = np.zeros(d)
    xs, gradsq, active = [x.copy()], [], []
    grads = np.empty((n, d))
    # Hot loop of the clip21 searches: the same arithmetic as np.stack / .mean / clip_vec (mean is
    # add.reduce then a division by n; the clip norms are the ones computed for ``active``), without
    # their per-call overhead, so the values are bit-identical.
    # ``client_grads.all_at(x)``, where given, is every client's gradient at once, bit for bit the
    # per-client calls (verification.claims.clip21._references.QuadClients).
    all_at = getattr(client_grads, "all_at", None)
    for _ in range(steps):
        x = x - gamma * g
        if all_at is not None:
            grads[:] = all_at(x)
        else:
            for i, f in enumerate(client_grads):
                grads[i] = f(x)
        gradsq.append(float(np.sum((np.add.reduce(grads, axis=0) / n) ** 2)))
        v = (1 - beta) * v + beta * grads
        diff = v - gi
        norms = np.linalg.norm(diff, axis=1)
        active.append(norms > tau)
        c = diff * np.minimum(1.0, tau / np.maximum(norms[:, None], 1e-300))
        gi = gi + beta_hat * c
        g = g + beta_hat * (np.add.reduce(c, axis=0) / n)
        xs.append(x.copy())
    return {"x": np.array(xs), "grad_sq": np.array(gradsq), "clip_active": np.array(active)}


def clip_gd(
    client_grads: list[Callable[[np.ndarray], np.ndarray]],
    *,
    x0: np.ndarray,
    gamma: float,
    tau: float,
    steps: int,
) -> np.ndarray:
    """Clip-GD: x <- x - gamma (1/n) sum_i clip_tau(grad f_i(x)) (no noise)."""
    x = np.asarray(x0, dtype=float).copy()
    xs = [x.copy()]
    for _ in range(steps):
        grads = np.stack([f(x) for f in client_grads])
        x = x - gamma * clip_vec(grads, tau).mean(axis=0)
        xs.append(x.copy())
    return np.array(xs)


def d2p2sgd_quadratic(
    samples: np.ndarray,
    *,
    x1: np.ndarray,
    alpha: float,
    steps: int,
    p: int,
    sigma_a: float,
    gamma: float,
    sigma_eps: float,
    schedule: str,
    batch: int,
    seeds: int,
    seed: int,
) -> np.ndarray:
    """D2P2-SGD, Alg. 1 of Jiang et al., on f(x) = (1/n) sum_s ||x - s||^2 / 2 (per-sample grad x - s).

    g_k = (1/B) sum_s g_s/(||g_s|| + gamma);  g~ = A_k (A_k^T g_k / sqrt(p) + eps_k),
    eps_k ~ N(0, sigma_{eps,k}^2 I_p), A_k d x p fresh with N(0, sigma_A^2) entries;
    x_{k+1} = x_k - alpha g~.  ``schedule``: "inv-k" (sigma_k^2 = sigma^2/k, text),
    "inv-sqrt-k" (sigma^2/sqrt(k), Table 3) or "constant".  Returns x_k for k = 1..K, shape (S, K, d).
    """
    rng = np.random.default_rng(seed)
    n, d = samples.shape
    x = np.tile(np.asarray(x1, dtype=float), (seeds, 1))
    out = np.empty((seeds, steps, d))
    for k in range(1, steps + 1):
        out[:, k - 1] = x
        idx = np.argsort(rng.random((seeds, n)), axis=1)[:, :batch]
        gs = x[:, None, :] - samples[idx]  # (S, B, d)
        norms = np.linalg.norm(gs, axis=2, keepdims=True)
        gk = (gs / (norms + gamma)).mean(axis=1)  # (S, d)
        if schedule == "inv-k":
            var = sigma_eps**2 / k
        elif schedule == "inv-sqrt-k":
            var = sigma_eps**2 / math.sqrt(k)
        else:
            var = sigma_eps**2
        A = rng.normal(0.0, sigma_a, (seeds, d, p))
        proj = np.einsum("sdp,sd->sp", A, gk) / math.sqrt(p) + rng.normal(0.0, math.sqrt(var), (seeds, p))
        x = x - alpha * np.einsum("sdp,sp->sd", A, proj)
    return out
