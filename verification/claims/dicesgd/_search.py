"""One adversarial-search check shape shared by the appendix claims, and exact Gaussian-mixture RDP."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from verification.claim import Context, Outcome, Verdict
from verification.search import Domain, RatioFn, adversarial_search


def search_check(
    domain_fn: Callable[[], Domain],
    ratio: RatioFn,
    *,
    method: str,
    ratio_text: str,
    quick: tuple[int, int, int] = (96, 4, 5),
    full: tuple[int, int, int] = (2048, 40, 10),
    tol: float = 1e-9,
    extra_points: Sequence[dict[str, float]] = (),
    replay: Callable[[dict[str, float]], tuple[bool, dict]] | None = None,
    quick_domain_fn: Callable[[], Domain] | None = None,
) -> Callable[[Context], Outcome]:
    """A check: search ``domain`` for ratio > 1 + tol; refuted only if ``replay`` (when given) agrees.

    ``quick``/``full`` are (samples, differential-evolution iterations, population per parameter).
    ``replay(point) -> (violated, details)`` re-evaluates the worst point independently (exact
    arithmetic or closed form), so a float artefact of the vectorised ratio cannot refute.
    ``quick_domain_fn`` (optional) is a smaller box for ``--quick`` (the evidence reports which).
    """

    def check(ctx: Context) -> Outcome:
        samples, maxiter, popsize = quick if ctx.quick else full
        dom = quick_domain_fn() if ctx.quick and quick_domain_fn is not None else domain_fn()
        res = adversarial_search(
            dom,
            ratio,
            samples=samples,
            maxiter=maxiter,
            popsize=popsize,
            seed=ctx.seed,
            tol=tol,
            extra_points=extra_points,
        )
        details = res.details()
        details["ratio"] = ratio_text
        cx = res.counterexample
        if cx is not None:
            if replay is not None:
                bad, rep = replay(cx)
                details["replay_at_worst_point"] = rep
                if not bad:
                    return Outcome(
                        Verdict.INCONCLUSIVE,
                        "the float search found ratio "
                        f"{res.max_ratio:.6g} but the exact replay does not confirm it: " + res.summary(),
                        method,
                        details,
                    )
            return Outcome(Verdict.REFUTED, "counterexample: " + res.summary(), method, details)
        return Outcome(
            Verdict.CONFIRMED, "confirmed on the searched domain: " + res.summary(), method, details
        )

    return check


def log_mix_rdp(alpha: np.ndarray, p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact ``D_alpha((1-p) N(a, 1) + p N(b, 1) || N(0, 1))`` at integer alpha >= 2 (vectorised).

    ``E_{N(0,1)}[L^alpha]`` with ``L = (1-p) e^{a x - a^2/2} + p e^{b x - b^2/2}`` expands by the
    binomial theorem into Gaussian moment generating functions:
    ``sum_k C(alpha, k) (1-p)^(alpha-k) p^k exp(((alpha-k) a + k b)^2/2 - ((alpha-k) a^2 + k b^2)/2)``,
    summed in log space.
    """
    from scipy.special import gammaln

    alpha = np.asarray(alpha, dtype=float)
    p, a, b = (np.asarray(v, dtype=float) for v in (p, a, b))
    amax = int(np.max(alpha))
    k = np.arange(amax + 1, dtype=float)[None, :]
    al = alpha[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_c = gammaln(al + 1) - gammaln(k + 1) - gammaln(al - k + 1)
        lp = np.where(k > 0, k * np.log(p[:, None]), 0.0)
        l1p = np.where(al - k > 0, (al - k) * np.log1p(-p[:, None]), 0.0)
        s = (al - k) * a[:, None] + k * b[:, None]
        expo = s * s / 2 - ((al - k) * a[:, None] ** 2 + k * b[:, None] ** 2) / 2
        terms = np.where(k <= al, log_c + lp + l1p + expo, -np.inf)
    m = np.max(terms, axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.sum(np.exp(terms - m), axis=1))
    return lse / (alpha - 1.0)


def gaussian_log_delta(eps: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``log delta(eps)`` of the Gaussian mechanism with sensitivity/std ``mu`` (Balle & Wang 2018)."""
    from scipy.special import log_ndtr

    eps, mu = np.asarray(eps, dtype=float), np.asarray(mu, dtype=float)
    la = log_ndtr(-eps / mu + mu / 2)
    lb = eps + log_ndtr(-eps / mu - mu / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return la + np.log1p(-np.exp(np.minimum(lb - la, 0.0)))


def finite(x: float) -> float:
    return float(x) if math.isfinite(float(x)) else float("nan")
