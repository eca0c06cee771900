"""Hypothesis strategies for the objects of private optimisation.

Every numeric strategy samples the "Supported range" of docs/cli.md (:data:`ENVELOPE`) in log space and
draws the range's corners with extra weight, because that is where accountants break. Shrinking
goes towards the lower corner of each range (a failing test reports the simplest case).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

#: The documented envelope (docs/cli.md, "Supported range"): (low, high) per quantity.
ENVELOPE: dict[str, tuple[float, float]] = {
    "sample_rate": (1e-9, 1.0),
    "steps": (1, 10**9),
    "delta": (1e-100, 0.5),
    "noise_multiplier": (0.1, 1e4),
    "eps": (1e-3, 1e3),
    "order": (1.01, 1e6),
}


def log_uniform(lo: float, hi: float, *, integer: bool = False) -> st.SearchStrategy:
    """Log-uniform values in [lo, hi], with the two corners drawn often; shrinks towards ``lo``."""
    if not 0 < lo <= hi:
        raise ValueError(f"log_uniform needs 0 < lo <= hi (got {lo}, {hi})")
    a, b = math.log10(lo), math.log10(hi)

    def expo(e: float) -> float:
        return min(max(10.0**e, lo), hi)

    core = st.floats(a, b, allow_nan=False, allow_infinity=False).map(expo)
    s = st.one_of(st.sampled_from([lo, hi]), core)
    if integer:
        return s.map(lambda v: int(min(max(round(v), math.ceil(lo)), math.floor(hi))))
    return s


def _in(name: str, lo: float | None, hi: float | None) -> tuple[float, float]:
    elo, ehi = ENVELOPE[name]
    lo = elo if lo is None else lo
    hi = ehi if hi is None else hi
    if lo < elo or hi > ehi:
        raise ValueError(f"{name}: [{lo}, {hi}] leaves the documented envelope [{elo}, {ehi}]")
    return lo, hi


def sample_rates(lo: float | None = None, hi: float | None = None) -> st.SearchStrategy[float]:
    """Poisson sample rates q in [1e-9, 1]."""
    return log_uniform(*_in("sample_rate", lo, hi))


def steps(lo: int | None = None, hi: int | None = None) -> st.SearchStrategy[int]:
    """Numbers of steps T in [1, 1e9] (integers)."""
    return log_uniform(*_in("steps", lo, hi), integer=True)


def deltas(lo: float | None = None, hi: float | None = None) -> st.SearchStrategy[float]:
    """delta in [1e-100, 0.5]."""
    return log_uniform(*_in("delta", lo, hi))


def noise_multipliers(lo: float | None = None, hi: float | None = None) -> st.SearchStrategy[float]:
    """Noise multipliers sigma in [0.1, 1e4]."""
    return log_uniform(*_in("noise_multiplier", lo, hi))


def epsilons(lo: float | None = None, hi: float | None = None) -> st.SearchStrategy[float]:
    """eps in [1e-3, 1e3]."""
    return log_uniform(*_in("eps", lo, hi))


def orders(max_order: float = 1e6, max_size: int = 8) -> st.SearchStrategy[tuple[float, ...]]:
    """Sorted, distinct Renyi orders in (1, max_order], as a grid an accountant accepts."""
    lo, hi = _in("order", None, max_order)
    return st.lists(log_uniform(lo, hi), min_size=1, max_size=max_size, unique=True).map(
        lambda xs: tuple(sorted(xs))
    )


@dataclass(frozen=True)
class DpParams:
    """One DP-SGD-like setting: Poisson rate, steps, noise multiplier, delta."""

    sample_rate: float
    steps: int
    noise_multiplier: float
    delta: float

    def event(self) -> Any:
        """The mechanism these parameters describe (``SelfComposedEvent`` of a subsampled Gaussian)."""
        from accounting.events import SelfComposedEvent, SubsampledGaussianEvent

        return SelfComposedEvent(SubsampledGaussianEvent(self.sample_rate, self.noise_multiplier), self.steps)


def dp_params(*, max_steps: int = 10**9) -> st.SearchStrategy[DpParams]:
    """:class:`DpParams` over the envelope (``max_steps`` caps T)."""
    return st.builds(
        DpParams,
        sample_rate=sample_rates(),
        steps=steps(hi=max_steps),
        noise_multiplier=noise_multipliers(),
        delta=deltas(),
    )


def noise_schedules(*, max_steps: int = 1000, named: bool = True) -> st.SearchStrategy[np.ndarray]:
    """Per-step noise multipliers (shape (T,), every value in the envelope): one of the named
    schedules of ``accounting.schedules`` (constant, inv-k, inv-sqrt-k, exp) at a random base, or
    an arbitrary sequence."""
    lo, hi = ENVELOPE["noise_multiplier"]
    free = st.lists(log_uniform(lo, hi), min_size=1, max_size=min(max_steps, 64)).map(np.asarray)
    if not named:
        return free

    def build(name: str, base: float, t: int) -> np.ndarray:
        from accounting.schedules import noise_multipliers as nm

        return np.maximum(nm(name, base, t), lo)

    from accounting.schedules import SCHEDULES

    named_s = st.builds(build, st.sampled_from(SCHEDULES), log_uniform(1.0, hi), steps(1, max_steps))
    return st.one_of(named_s, free)


def mechanism_events(*, max_leaves: int = 4, max_count: int = 10**6) -> st.SearchStrategy[Any]:
    """Mechanism events of ``accounting.events``: Gaussian, subsampled Gaussian and schedule
    steps, composed (``ComposedEvent``) and repeated (``SelfComposedEvent``)."""
    from accounting import events as ev

    z = noise_multipliers()
    leaves = st.one_of(
        st.builds(ev.GaussianEvent, z, st.sampled_from([1.0, 2.0])),
        st.builds(ev.SubsampledGaussianEvent, sample_rates(), z),
        st.builds(
            lambda q, zs: ev.ScheduleEvent(q, tuple(float(v) for v in zs)),
            sample_rates(),
            noise_schedules(max_steps=32, named=False),
        ),
    )

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        return st.one_of(
            st.builds(ev.SelfComposedEvent, children, steps(1, max_count)),
            st.lists(children, min_size=1, max_size=3).map(lambda es: ev.ComposedEvent(tuple(es))),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def _rows_at_radii(g: np.ndarray, radii: list[float], c: float) -> np.ndarray:
    """Row i of ``g`` rescaled to L2 norm ``radii[i]`` (zero where the row or the radius is), then
    nudged down until no row's norm exceeds ``c``, however the norm is computed."""
    out = np.zeros_like(g)
    for i in range(g.shape[0]):
        # Direction first, from the row over its largest entry: a row of tiny entries (1e-160)
        # has squares in the subnormal range, so norm(g[i]) itself is off by up to ~1e-4, the
        # scaled row lands that far above the bound, and the ulp steps below would take ~1e11
        # rounds to bring it down.
        top = float(np.max(np.abs(g[i])))
        if top > 0 and radii[i] > 0:
            u = g[i] / top
            out[i] = u * (radii[i] / float(np.linalg.norm(u)))
    # Rounding: a row's norm must not exceed the bound however it is computed. The per-row norm
    # and the batched ``norm(axis=1)`` use different summation orders and can differ by an ulp.
    while True:
        over = (np.linalg.norm(out, axis=1) > c) | np.array([float(np.linalg.norm(r)) > c for r in out])
        if not over.any():
            return out
        out[over] *= 1 - 2**-50


def gradient_sets(
    *, norm_bound: float = 1.0, max_examples: int = 32, max_dim: int = 16
) -> st.SearchStrategy[np.ndarray]:
    """Per-example gradients, shape (n, d), every row of L2 norm <= ``norm_bound`` (exactly: rows at
    the bound, zero rows and tiny rows are drawn on purpose)."""
    c = float(norm_bound)
    if not c > 0:
        raise ValueError("norm_bound must be > 0")

    radius = st.one_of(st.sampled_from([c, 0.0]), st.floats(0.0, c), log_uniform(c * 1e-12, c))

    @st.composite
    def sets(draw: Any) -> np.ndarray:
        n = draw(st.integers(1, max_examples))
        d = draw(st.integers(1, max_dim))
        raw = draw(st.lists(st.floats(-1.0, 1.0), min_size=n * d, max_size=n * d))
        radii = draw(st.lists(radius, min_size=n, max_size=n))
        return _rows_at_radii(np.asarray(raw, dtype=float).reshape(n, d), radii, c)

    return sets()


@dataclass(frozen=True)
class ToyProblem:
    """A toy problem by name with its options and seed; :meth:`build` makes it (imports torch)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def build(self) -> Any:
        import torch

        from dptheory.problems import get_problem

        torch.manual_seed(self.seed)
        opts = dict(self.options)
        if self.name in ("stochastic-quadratic", "quadratic", "logreg-nonconvex"):
            opts.setdefault("seed", self.seed)
        return get_problem(self.name, **opts)


def toy_problems(names: tuple[str, ...] | None = None) -> st.SearchStrategy[ToyProblem]:
    """The project's toy problems with parameters drawn from the ranges their builders accept."""
    seeds = st.integers(0, 2**16)
    per_name = {
        "clip21-example1": st.fixed_dictionaries(
            {"a": st.floats(0.5, 10.0), "L": log_uniform(0.1, 10.0), "x0": st.floats(-5.0, 5.0)}
        ),
        "dicesgd-b1": st.fixed_dictionaries({"c": log_uniform(0.1, 10.0), "x0": st.floats(-5.0, 5.0)}),
        "stochastic-quadratic": st.fixed_dictionaries(
            {"d": st.integers(1, 8), "clients": st.integers(1, 4), "L": log_uniform(0.1, 10.0)}
        ),
        "quadratic": st.fixed_dictionaries(
            {"d": st.integers(1, 8), "n_samples": st.integers(4, 64), "mu": log_uniform(0.01, 1.0)}
        ),
    }
    chosen = names or tuple(per_name)
    unknown = [n for n in chosen if n not in per_name]
    if unknown:
        raise ValueError(f"toy_problems: unknown {unknown} (allowed: {', '.join(per_name)})")
    return st.one_of(*[st.builds(ToyProblem, st.just(n), per_name[n], seeds) for n in chosen])
