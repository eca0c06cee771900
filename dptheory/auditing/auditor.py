"""``CanaryScoreAuditor``: epsilon lower bounds from the scores of held-in and held-out canaries.

Same inputs and method names as jax_privacy 2.x's ``CanaryScoreAuditor`` (``in_canary_scores``,
``out_canary_scores``; ``epsilon_one_run``, ``epsilon_one_run_fdp``, ``epsilon_clopper_pearson``,
``tpr_at_given_fpr``), so a user can move between the two.  Convention: held-in canaries are
expected to score *higher* (negate a loss before passing it).

Why each estimate is a lower bound at confidence ``1 - significance``:

1. *A test per guessing rule.*  A rule is ``(k_plus, k_minus)``: guess "in" for the ``k_plus``
   highest scores, "out" for the ``k_minus`` lowest, abstain on the rest (ties broken by a seeded
   permutation drawn independently of who is in, so the guesses depend on the output only).  For
   a fixed rule, :mod:`dptheory.auditing.one_run` gives a test of each claim (eps, delta)-DP
   (Steinke et al. 2023, Thm 5.2) or f_theta-DP (Mahloujifar et al. 2024) with false-rejection
   probability <= its level when the claim is true.
2. *Monotone claims.*  A larger eps (theta) is a weaker claim: every rejection of it is also a
   rejection of each smaller one.  So the reported ``sup`` of the rejected claims exceeds the
   truth only if the true claim itself was rejected.
3. *Abstention chosen from a grid, paid for.*  The rules are a grid fixed by ``m`` alone (the
   default :class:`GuessGrid`: four guess counts; or :class:`Bonferroni`, every shape on a
   geometric grid); each test runs at ``significance / len(grid)`` and the best rule is reported:
   by the union bound the chance that *any* rule rejects a true claim is at most
   ``significance``.  The grid is only a choice of tests made before the data: a smaller grid
   pays less (``significance / 4`` instead of ``/ 66`` at m = 5000), and four guess fractions
   cover where one-run audits have power (a few percent to a quarter of the canaries: fewer
   guesses leave too few trials for the binomial-type tail, more guesses add canaries whose
   scores barely separate).  Validity never depends on the grid's quality, only power does.
The theorems need each canary included independently with probability 1/2 (the helpers in
:mod:`dptheory.auditing.canaries` do this); the f-DP estimate is a lower bound on epsilon
*within the audited family* (the run's true curve is a member), Steinke's needs no family.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from scipy import special, stats

from accounting.errors import InvalidParameter
from dptheory.auditing import one_run
from dptheory.auditing.tradeoff import ApproxDP, GaussianDP, TradeoffFamily

__all__ = ["CanaryScoreAuditor", "GuessGrid", "Bonferroni", "FixedRule"]


@dataclasses.dataclass(frozen=True)
class GuessGrid:
    """Default: one rule per guess count ``r = round(f m)``, ``f`` in ``fractions``, each test at
    ``significance / len(fractions)``.  One-sided, the ``r`` highest scores are guessed "in";
    two-sided, the ``r // 2`` highest "in" and the ``r - r // 2`` lowest "out" (both tails, at
    the same total count).  On Gaussian scores the symmetric rule beats the one-tailed one and
    halving the grid beats adding shapes (tests/api/test_auditing.py, benchmarks/audit_power.py):
    with 5000 ideal mu = 0.5 scores it is the difference between f-DP medians 0.98 (66 rules)
    and 1.1 (these 4)."""

    fractions: tuple[float, ...] = (1 / 4, 1 / 8, 1 / 16, 1 / 32)

    def counts(self, m: int) -> list[int]:
        if not self.fractions or not all(0 < f <= 1 for f in self.fractions):
            raise InvalidParameter("fractions", f"must be non-empty, each in (0, 1], got {self.fractions!r}")
        return sorted({min(m, max(1, round(f * m))) for f in self.fractions})


@dataclasses.dataclass(frozen=True)
class Bonferroni:
    """Try every rule on a geometric grid of guess counts (ratio ``grid_ratio``), each at
    ``significance / len(grid)``.  The grid depends on the canary count only."""

    grid_ratio: float = 1.5

    def counts(self, m: int) -> np.ndarray:
        if not self.grid_ratio > 1:
            raise InvalidParameter("grid_ratio", f"must be > 1, got {self.grid_ratio!r}")
        n = int(math.ceil(math.log(max(m, 2)) / math.log(self.grid_ratio))) + 1
        return np.unique(np.clip(np.round(np.geomspace(1, m, n)).astype(int), 1, m))


@dataclasses.dataclass(frozen=True)
class FixedRule:
    """One rule fixed before the scores are seen: guess "in" for the ``k_plus`` highest scores
    and "out" for the ``k_minus`` lowest.  No correction is needed (a single test)."""

    k_plus: int
    k_minus: int = 0


Strategy = GuessGrid | Bonferroni | FixedRule


def _check_scores(name: str, scores: Sequence[float]) -> np.ndarray:
    a = np.asarray(scores, dtype=float).ravel()
    if a.size == 0:
        raise InvalidParameter(name, "must be non-empty")
    if not np.all(np.isfinite(a)):
        raise InvalidParameter(name, "must be finite numbers (no NaN or inf)")
    return a


def _check_significance(significance: float) -> float:
    if not (isinstance(significance, (int, float)) and 0 < significance < 0.5):
        raise InvalidParameter("significance", f"must be in (0, 0.5), got {significance!r}")
    return float(significance)


def _check_delta(delta: float, *, zero_ok: bool = False) -> float:
    ok = isinstance(delta, (int, float)) and (0 <= delta < 1 if zero_ok else 0 < delta < 1)
    if not ok:
        allowed = "[0, 1)" if zero_ok else "(0, 1)"
        raise InvalidParameter("delta", f"must be in {allowed}, got {delta!r}")
    return float(delta)


class CanaryScoreAuditor:
    """Privacy lower bounds from attack scores of held-in and held-out canaries.

    ``in_canary_scores``: scores of the canaries that were included; ``out_canary_scores``: of
    those left out.  Higher means "more likely in".  ``seed`` fixes the tie-breaking permutation.
    """

    def __init__(
        self, in_canary_scores: Sequence[float], out_canary_scores: Sequence[float], *, seed: int = 0
    ) -> None:
        self._in = _check_scores("in_canary_scores", in_canary_scores)
        self._out = _check_scores("out_canary_scores", out_canary_scores)
        scores = np.concatenate([self._in, self._out])
        is_in = np.concatenate([np.ones(self._in.size, bool), np.zeros(self._out.size, bool)])
        tie = np.random.default_rng(seed).permutation(scores.size)
        order = np.lexsort((tie, -scores))  # descending score, ties by the label-blind permutation
        ranked = is_in[order]
        self._m = scores.size
        # correct guesses of the top-k "in" rule and of the bottom-k "out" rule, k = 0..m
        self._top_in = np.concatenate([[0], np.cumsum(ranked)])
        self._bottom_out = np.concatenate([[0], np.cumsum(~ranked[::-1])])

    @property
    def canaries(self) -> int:
        return self._m

    def _rules(self, one_sided: bool, strategy: Strategy) -> list[tuple[int, int]]:
        if isinstance(strategy, GuessGrid):
            ks = strategy.counts(self._m)
            return [(k, 0) if one_sided or k < 2 else (k // 2, k - k // 2) for k in ks]
        if isinstance(strategy, FixedRule):
            kp, km = int(strategy.k_plus), int(strategy.k_minus)
            if kp < 0 or km < 0 or kp + km < 1 or kp + km > self._m:
                raise InvalidParameter(
                    "threshold_strategy", f"FixedRule needs 1 <= k_plus + k_minus <= {self._m}"
                )
            return [(kp, km)]
        ks = [int(k) for k in strategy.counts(self._m)]
        rules = [(k, 0) for k in ks]
        if not one_sided:
            rules += [(0, k) for k in ks] + [(k, k) for k in ks if 2 * k <= self._m]
        return rules

    def _counts(self, rules: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """(guesses, correct) of each rule, most precise first (good rules prune the rest)."""
        out = [(kp + km, int(self._top_in[kp] + self._bottom_out[km])) for kp, km in rules]
        return sorted(out, key=lambda rv: -rv[1] / rv[0])

    def epsilon_one_run(
        self,
        significance: float,
        delta: float,
        one_sided: bool = True,
        *,
        threshold_strategy: Strategy = GuessGrid(),
    ) -> float:
        """Steinke, Nasr & Jagielski (2023, Thm 5.2) lower bound on epsilon at ``delta``.

        ``one_sided=False`` lets rules guess "out" on the lowest scores too (k_minus > 0): both
        tails at once with the default :class:`GuessGrid`, every shape with :class:`Bonferroni`.
        Lower bound at confidence ``1 - significance`` (module docstring:
        per-rule test, monotone in eps, Bonferroni over the rule grid).  Rounded down (bisection
        keeps the rejected end, to 1e-6)."""
        significance, delta = _check_significance(significance), _check_delta(delta, zero_ok=True)
        rules = self._rules(one_sided, threshold_strategy)
        level = significance / len(rules)
        best = 0.0
        for r, v in self._counts(rules):
            if v / r <= special.expit(best):  # cannot reject eps = best (binomial median argument)
                continue

            def rejects(eps: float, r=r, v=v) -> bool:
                return one_run.steinke_rejects(self._m, r, v, eps, delta, level)

            best = _sup_rejected(rejects, best, 100.0, tol=1e-6)
        return best

    def epsilon_one_run_fdp(
        self,
        significance: float,
        delta: float,
        one_sided: bool = True,
        *,
        curve: str | TradeoffFamily = "gdp",
        threshold_strategy: Strategy = GuessGrid(),
    ) -> float:
        """Mahloujifar, Melis & Chaudhuri (2024) lower bound on epsilon at ``delta``.

        ``curve``: ``"gdp"`` (:class:`~.tradeoff.GaussianDP`, as jax_privacy), ``"approx-dp"``
        (the (eps, delta) curve: no family assumption), or any :class:`~.tradeoff.TradeoffFamily`,
        e.g. ``SubsampledGaussian(q, steps)``, the exact curve of a DP-SGD run.  Returns the
        epsilon at ``delta`` of the least private member whose claim is rejected at confidence
        ``1 - significance`` (module docstring), rounded down.

        What it refutes is "the run is f-DP for a member of ``curve``'s family at least this
        private"; it is a lower bound on the run's epsilon only if the run's true trade-off curve
        belongs to that family.  On canaries that are not Gaussian (e.g. randomized response at
        epsilon = 2, 10^4 canaries) the default ``"gdp"`` reports above the true epsilon; use
        ``"approx-dp"`` (no family assumption) or :meth:`epsilon_one_run` where the family is in
        doubt."""
        significance, delta = _check_significance(significance), _check_delta(delta)
        family = _family(curve, delta)
        rules = self._rules(one_sided, threshold_strategy)
        level = significance / len(rules)
        best = 0.0
        for r, v in self._counts(rules):
            if v / r <= 0.5:  # no more correct than a coin: rejects nothing
                continue

            def rejects(theta: float, r=r, v=v) -> bool:
                return theta > 0 and one_run.fdp_rejects(self._m, r, v, family.g_inv(theta), level)

            best = _sup_rejected(rejects, best, family.theta_max, tol=1e-4 * max(best, 1e-2))
        return family.epsilon(best, delta) if best > 0 else 0.0

    def epsilon_clopper_pearson(
        self, significance: float, delta: float = 0.0, one_sided: bool = True
    ) -> float:
        """Many-run lower bound: each score comes from its own run (in-scores from runs with the
        canary, out-scores from runs without, all independent).

        Thresholds at the out-scores' order statistics (a grid fixed by the counts): at the
        ``j``-th highest out-score the false-positive rate is Beta(j, n - j + 1)-distributed, so
        the one-sided Clopper-Pearson bound of ``j - 1`` of ``n`` bounds it exactly, and the
        in-scores, independent of the threshold, give a Clopper-Pearson lower bound on the TPR.
        (eps, delta)-DP forces ``TPR <= e^eps FPR + delta``; each threshold's two bounds hold at
        ``significance / (2 G)`` (Bonferroni over the ``G`` thresholds, doubled when not
        ``one_sided``: the reversed rule on negated scores), so
        ``eps >= log((TPR_lo - delta) / FPR_hi)`` at confidence ``1 - significance``."""
        significance, delta = _check_significance(significance), _check_delta(delta, zero_ok=True)
        sides = [(self._in, self._out)] + ([] if one_sided else [(-self._in, -self._out)])
        js = Bonferroni().counts(self._out.size)
        level = significance / (2 * len(js) * len(sides))
        best = 0.0
        for ins, outs in sides:
            outs_desc = np.sort(outs)[::-1]
            for j in js:
                t = outs_desc[j - 1]  # "in" when score > t: j - 1 out-scores above t
                fpr_hi = float(stats.beta.ppf(1 - level, j, outs.size - j + 1))
                tp = int(np.sum(ins > t))
                tpr_lo = float(stats.beta.ppf(level, tp, ins.size - tp + 1)) if tp > 0 else 0.0
                if tpr_lo > delta and fpr_hi > 0:
                    best = max(best, math.log(tpr_lo - delta) - math.log(fpr_hi))
        return math.nextafter(best, 0.0) if best > 0 else 0.0

    def tpr_at_given_fpr(self, fpr: float | Sequence[float]) -> float | np.ndarray:
        """Largest TPR at false-positive rate ``fpr`` over threshold rules (randomising between
        two thresholds: the upper concave hull of the empirical ROC).  A point estimate, not a
        bound."""
        f = np.asarray(fpr, dtype=float)
        if not np.all((f >= 0) & (f <= 1)):
            raise InvalidParameter("fpr", f"must be in [0, 1], got {fpr!r}")
        n_in, n_out = self._in.size, self._out.size
        thr = np.unique(np.concatenate([self._in, self._out]))[::-1]
        tps = np.searchsorted(np.sort(-self._in), -thr, side="right") / n_in
        fps = np.searchsorted(np.sort(-self._out), -thr, side="right") / n_out
        x, y = _upper_hull(np.concatenate([[0.0], fps, [1.0]]), np.concatenate([[0.0], tps, [1.0]]))
        out = np.interp(f, x, y)
        return float(out) if out.ndim == 0 else out


def _family(curve: str | TradeoffFamily, delta: float) -> TradeoffFamily:
    if isinstance(curve, TradeoffFamily):
        return curve
    if curve == "gdp":
        return GaussianDP()
    if curve == "approx-dp":
        return ApproxDP(delta)
    raise InvalidParameter("curve", f"must be 'gdp', 'approx-dp' or a TradeoffFamily, got {curve!r}")


def _sup_rejected(rejects, lo: float, cap: float, *, tol: float) -> float:
    """Largest point known rejected in ``[lo, cap]`` given that rejection is downward closed;
    ``lo`` itself when ``lo`` (or, for ``lo = 0``, the first probe) is not rejected."""
    probe = lo if lo > 0 else tol
    if not rejects(probe):
        return lo
    lo, hi = probe, max(2 * probe, 1.0)
    while hi < cap and rejects(hi):
        lo, hi = hi, 2 * hi
    if hi >= cap:
        if rejects(cap):
            return cap
        hi = cap
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if rejects(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _upper_hull(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper concave hull of points sorted by x (monotone chain)."""
    order = np.lexsort((y, x))
    hx: list[float] = []
    hy: list[float] = []
    for xi, yi in zip(x[order], y[order], strict=True):
        while len(hx) >= 2 and (hx[-1] - hx[-2]) * (yi - hy[-2]) - (hy[-1] - hy[-2]) * (xi - hx[-2]) >= 0:
            hx.pop()
            hy.pop()
        hx.append(float(xi))
        hy.append(float(yi))
    return np.asarray(hx), np.asarray(hy)
