"""Domains, readings and the adversarial search that a deciding check must run before confirming.

A universal claim ("for all parameters in D, LHS <= RHS") is only as well checked as the part of D
that was looked at. This module makes that part explicit and searches it adversarially:

* :class:`Param` / :class:`Domain` -- each parameter with its range *as the paper states it*
  (``stated``) and the box the search covers (``lo``, ``hi``; log-uniform for open or wide
  ranges), plus the constraints between parameters, as data;
* :class:`Reading` -- one plausible reading of an ambiguous or flattened formula, with why;
* :func:`adversarial_search` -- corners, face centres and log-uniform samples of the box,
  then :func:`scipy.optimize.differential_evolution` maximising the *violation ratio*
  (LHS/RHS, measured/bound; > 1 is a counterexample). Its :class:`SearchResult` records what
  a confirmation needs: the decades spanned per parameter by the feasible points evaluated,
  the number of evaluations, and the largest ratio found and where.

The ratio function is vectorised: it receives ``{name: ndarray}`` (one entry per point) and
returns an ``ndarray`` of ratios; ``nan`` means "undefined here" and counts as infeasible.
Points that break a constraint are never evaluated.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np

RatioFn = Callable[[dict[str, np.ndarray]], np.ndarray]

#: (factor, results) while :func:`mutated` is active: every ratio is multiplied by ``factor``
_MUTATION: contextvars.ContextVar[tuple[float, list] | None] = contextvars.ContextVar(
    "mutation", default=None
)


@contextlib.contextmanager
def mutated(tighten: float = 0.1) -> Iterator[list[SearchResult]]:
    """Run searches against a mutated statement: the claimed bound's constant tightened by ``tighten``.

    Every ratio is LHS/RHS of the statement, so tightening its constant (RHS -> (1 - tighten) RHS)
    divides every ratio by ``1 - tighten``. Yields the list of the searches run meanwhile: a search
    with power to find a counterexample refutes the mutant (``tests/verification/test_mutation.py``).
    """
    results: list[SearchResult] = []
    token = _MUTATION.set((1.0 / (1.0 - tighten), results))
    try:
        yield results
    finally:
        _MUTATION.reset(token)


@dataclass(frozen=True)
class Param:
    """One parameter of a claim's domain.

    ``stated`` is the range exactly as the paper writes it ("(0, inf)" where it gives no bound);
    ``lo``/``hi`` is the box searched (for an open range, a wide finite box: the evidence reports
    the decades actually covered).
    """

    name: str
    stated: str
    lo: float
    hi: float
    log: bool = True
    integer: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        if not self.hi >= self.lo:
            raise ValueError(f"{self.name}: empty box [{self.lo}, {self.hi}]")
        if self.log and self.lo <= 0:
            raise ValueError(f"{self.name}: a log-uniform range needs lo > 0")

    def from_unit(self, u: np.ndarray) -> np.ndarray:
        u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        if self.log:
            v = np.exp(math.log(self.lo) + u * (math.log(self.hi) - math.log(self.lo)))
        else:
            v = self.lo + u * (self.hi - self.lo)
        if self.integer:
            v = np.clip(np.round(v), math.ceil(self.lo), math.floor(self.hi))
        return v


@dataclass(frozen=True)
class Constraint:
    """A relation between parameters the statement imposes, e.g. eta <= (sigma^2/2) log(1/q)."""

    text: str
    holds: Callable[[dict[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class Domain:
    """The domain of a statement: parameters, constraints, and what was fixed (and why)."""

    params: tuple[Param, ...]
    constraints: tuple[Constraint, ...] = ()
    fixed: dict[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def point(self, units: np.ndarray) -> dict[str, np.ndarray]:
        """Map an (n, k) array of unit-cube coordinates to parameter arrays."""
        units = np.atleast_2d(units)
        return {p.name: p.from_unit(units[:, j]) for j, p in enumerate(self.params)}

    def feasible(self, pts: dict[str, np.ndarray]) -> np.ndarray:
        n = len(next(iter(pts.values())))
        ok = np.ones(n, dtype=bool)
        for c in self.constraints:
            ok &= np.asarray(c.holds(pts), dtype=bool)
        return ok

    def contains(self, point: dict[str, float]) -> bool:
        """Whether a single point satisfies every constraint (the box is not required)."""
        pts = {k: np.array([float(v)]) for k, v in point.items()}
        return bool(self.feasible(pts)[0])

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "params": {
                p.name: {
                    "stated": p.stated,
                    "searched": [p.lo, p.hi],
                    "sampling": ("log-uniform" if p.log else "uniform") + (", integer" if p.integer else ""),
                    **({"note": p.note} if p.note else {}),
                }
                for p in self.params
            },
            "constraints": [c.text for c in self.constraints],
            "fixed": dict(self.fixed),
        }


@dataclass(frozen=True)
class Reading:
    """One plausible reading of an ambiguous formula; ``headline`` marks the proof-supported one."""

    name: str
    why: str
    headline: bool = False


@dataclass
class SearchResult:
    """What an adversarial search covered and the worst point it found."""

    domain: Domain
    evaluations: int
    feasible: int
    max_ratio: float
    argmax: dict[str, float] | None
    decades: dict[str, Any]
    tol: float
    phases: dict[str, int]

    @property
    def counterexample(self) -> dict[str, float] | None:
        """The worst point if its ratio exceeds 1 + tol (a candidate to verify exactly), else None."""
        if self.argmax is not None and self.max_ratio > 1.0 + self.tol:
            return self.argmax
        return None

    def details(self) -> dict[str, Any]:
        return {
            "domain": self.domain.describe(),
            "evaluations": self.evaluations,
            "feasible_evaluations": self.feasible,
            "evaluations_by_phase": self.phases,
            "decades_spanned": self.decades,
            "max_violation_ratio": _num(self.max_ratio),
            "at": {k: _num(v) for k, v in (self.argmax or {}).items()},
            "tolerance": self.tol,
            "method": (
                "corners + face centres + log-uniform samples of the box, then scipy "
                "differential_evolution maximising log(violation ratio); infeasible points rejected"
            ),
        }

    def summary(self) -> str:
        where = ", ".join(f"{k}={_num(v):.4g}" for k, v in (self.argmax or {}).items())
        return (
            f"max violation ratio {_num(self.max_ratio):.4g} at {where} over {self.evaluations} evaluations "
            f"({self.feasible} feasible) spanning "
            + ", ".join(
                f"{k} [{v['min']:.3g}, {v['max']:.3g}]"
                + (f" ({v['decades']:.1f} decades)" if "decades" in v else "")
                for k, v in self.decades.items()
            )
        )


def _num(x: float) -> float:
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return x
    return float(f"{x:.8g}")


def pointwise(fn: Callable[..., float]) -> RatioFn:
    """Vectorise a scalar ratio function ``fn(**params) -> float``."""

    def vec(pts: dict[str, np.ndarray]) -> np.ndarray:
        n = len(next(iter(pts.values())))
        return np.array([fn(**{k: float(v[i]) for k, v in pts.items()}) for i in range(n)], dtype=float)

    return vec


def _corner_units(k: int, max_corners: int = 1024) -> np.ndarray:
    """All 2^k corners (capped), the 2k face centres and the centre of the unit cube."""
    pts = []
    if 2**k <= max_corners:
        pts += [list(c) for c in product((0.0, 1.0), repeat=k)]
    for j in range(k):
        for v in (0.0, 1.0):
            c = [0.5] * k
            c[j] = v
            pts.append(c)
    pts.append([0.5] * k)
    return np.array(pts, dtype=float)


def adversarial_search(
    domain: Domain,
    ratio: RatioFn,
    *,
    samples: int = 512,
    seed: int = 0,
    maxiter: int = 40,
    popsize: int = 12,
    tol: float = 1e-9,
    extra_points: Sequence[dict[str, float]] = (),
) -> SearchResult:
    """Search ``domain`` for the largest ``ratio`` (> 1 + tol is a violation).

    Phases: the cube's corners and face centres, ``extra_points`` (deliberate probes named by
    the caller, e.g. extreme regimes the box's corners do not reach), ``samples`` uniform draws of
    the unit cube (log-uniform in every ``log`` parameter), then differential evolution started
    from the best feasible points found so far.
    """
    from scipy.optimize import differential_evolution

    mutation = _MUTATION.get()
    if mutation is not None:  # a mutated statement (tests/verification/test_mutation.py): every ratio scaled
        ratio = _scaled(ratio, mutation[0])
    k = len(domain.params)
    rng = np.random.default_rng(seed)
    seen: list[tuple[np.ndarray, np.ndarray]] = []  # (units, ratios) of feasible points
    best = {"ratio": -math.inf, "u": None}
    counts = {"corners": 0, "probes": 0, "samples": 0, "differential_evolution": 0}
    n_eval = [0]

    def evaluate(units: np.ndarray, phase: str) -> np.ndarray:
        units = np.atleast_2d(units)
        pts = domain.point(units)
        ok = domain.feasible(pts)
        out = np.full(units.shape[0], np.nan)
        if ok.any():
            sub = {kk: v[ok] for kk, v in pts.items()}
            with np.errstate(all="ignore"):
                r = np.asarray(ratio(sub), dtype=float).reshape(-1)
            out[ok] = r
        n_eval[0] += units.shape[0]
        counts[phase] += units.shape[0]
        good = ~np.isnan(out)
        if good.any():
            seen.append((units[good], out[good]))
            i = int(np.nanargmax(np.where(good, out, -np.inf)))
            if out[i] > best["ratio"]:
                best["ratio"] = float(out[i])
                best["u"] = units[i].copy()
        return out

    evaluate(_corner_units(k), "corners")
    if extra_points:
        units = np.array([[_to_unit(p, point[p.name]) for p in domain.params] for point in extra_points])
        evaluate(units, "probes")
    if samples:
        evaluate(rng.random((samples, k)), "samples")

    if maxiter > 0 and seen:
        all_u = np.concatenate([u for u, _ in seen])
        all_r = np.concatenate([r for _, r in seen])
        n_pop = max(5, popsize * k)
        order = np.argsort(-all_r)[:n_pop]
        init = all_u[order]
        if init.shape[0] < n_pop:  # pad with fresh random points
            init = np.concatenate([init, rng.random((n_pop - init.shape[0], k))])

        def objective(u_t: np.ndarray) -> np.ndarray:
            u = np.atleast_2d(u_t.T) if u_t.ndim == 2 else u_t[None, :]
            r = evaluate(u, "differential_evolution")
            with np.errstate(all="ignore"):
                val = -np.log(np.maximum(r, 1e-300))
            return np.where(np.isnan(r), 1e6, np.minimum(val, 1e6))

        differential_evolution(
            objective,
            [(0.0, 1.0)] * k,
            init=init,
            maxiter=maxiter,
            seed=int(rng.integers(2**31)),
            vectorized=True,
            updating="deferred",
            polish=False,
            tol=0,
            atol=0,
        )

    feasible_u = np.concatenate([u for u, _ in seen]) if seen else np.zeros((0, k))
    decades: dict[str, Any] = {}
    if feasible_u.shape[0]:
        vals = domain.point(feasible_u)
        for p in domain.params:
            v = vals[p.name]
            if p.log:
                lo, hi = float(v.min()), float(v.max())
                decades[p.name] = {"min": _num(lo), "max": _num(hi), "decades": round(math.log10(hi / lo), 2)}
            else:
                decades[p.name] = {"min": _num(float(v.min())), "max": _num(float(v.max()))}
    argmax = None
    if best["u"] is not None:
        argmax = {kk: float(v[0]) for kk, v in domain.point(best["u"][None, :]).items()}
    result = SearchResult(
        domain=domain,
        evaluations=n_eval[0],
        feasible=int(feasible_u.shape[0]),
        max_ratio=best["ratio"],
        argmax=argmax,
        decades=decades,
        tol=tol,
        phases=counts,
    )
    if mutation is not None:
        mutation[1].append(result)
    return result


def _scaled(ratio: RatioFn, factor: float) -> RatioFn:
    def vec(pts: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(ratio(pts), dtype=float) * factor

    return vec


def _to_unit(p: Param, value: float) -> float:
    if p.log:
        return (math.log(value) - math.log(p.lo)) / (math.log(p.hi) - math.log(p.lo)) if p.hi > p.lo else 0.0
    return (value - p.lo) / (p.hi - p.lo) if p.hi > p.lo else 0.0
