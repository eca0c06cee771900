"""Envelope soundness sweep: our certified epsilon against a rigorous lower bound.

16 corners plus 400 log-uniform cases of (q, sigma, T, delta) over the documented envelope
(q in [1e-9, 1], sigma in [0.1, 1e4], T in [1, 1e9], delta in [1e-100, 0.1]).  For each, the
RDP epsilon of T Poisson-subsampled Gaussian steps is compared with the sum-test lower bound
of ``accounting.audit.sum_test``; the ratio must never fall below 1.

Run: ``python benchmarks/envelope_sweep.py [--cases N] [--seed S]`` (about 12 s for 416 cases).

``--algos`` (issue 18) sweeps every algorithm with a certified path: for each, corners plus
``--audit-cases`` log-uniform cases over the envelope, the certified epsilon of the mechanism the
audit runs on against the audit's lower bound (``accounting.audit.run_audit``: exact PLD of a
worst-case instance, rounded down; DiceSGD with G > C1 by Monte Carlo at confidence 0.99), per
algorithm the worst ratio (must be >= 1) and the largest T reached.  Varying schedules (d2psgd,
d2p2sgd) compose up to 2e5 steps' PLD per case, so their T is drawn up to 1e6; a case still running
after ``--case-timeout`` seconds is counted as skipped, never as passed.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np

from accounting.audit.sum_test import sum_test_epsilon_lower
from accounting.conversion import rdp_to_epsilon
from accounting.orders import DEFAULT_ORDERS
from accounting.rdp import subsampled_gaussian_rdp

LOW = np.array([-9.0, -1.0, 0.0, -100.0])  # log10 of q, sigma, T, delta
HIGH = np.array([0.0, 4.0, 9.0, -1.0])


#: log10 upper bound of T per algorithm in the audit sweep (see the module docstring)
T_MAX_LOG10 = {"dpsgd": 9.0, "clip21sgd2m": 9.0, "dp2sgd": 9.0, "dicesgd": 9.0, "d2psgd": 6.0, "d2p2sgd": 6.0}


def _audit_case(algo: str, q: float, sigma: float, steps: int, delta: float, grad_bound: float | None):
    """(certified eps of the audited mechanism, audit lower bound, confidence)."""
    from accounting.audit import run_audit
    from dptheory import api

    kw: dict = {"rounds": steps} if algo == "clip21sgd2m" else {"sample_rate": q, "steps": steps}
    if algo == "dicesgd" and grad_bound is not None:
        kw["grad_bound"] = grad_bound
    p = api.build_params(algo=algo, delta=delta, noise_multiplier=sigma, **kw)
    r = run_audit(p, samples=2000, seed=0)
    return r.epsilon_certified, r.epsilon_lower, r.confidence


def audit_sweep(algos: list[str], cases: int, seed: int, case_timeout: float) -> bool:
    """Print, per algorithm, the worst certified / lower ratio and the largest T; True if sound."""
    import signal

    class _Slow(Exception):
        pass

    def _alarm(signum, frame):  # noqa: ARG001
        raise _Slow()

    signal.signal(signal.SIGALRM, _alarm)
    rng = np.random.default_rng(seed)
    sound = True
    for algo in algos:
        hi = HIGH.copy()
        hi[2] = T_MAX_LOG10[algo]
        corners = [np.array(c) for c in itertools.product(*zip(LOW, hi, strict=True))][::3]
        draws = corners + [rng.uniform(LOW, hi) for _ in range(cases)]
        worst, where, n_pos, n_skip, n_inf, t_max, t0 = math.inf, None, 0, 0, 0, 0, time.perf_counter()
        for i, (lq, ls, lt, ld) in enumerate(draws):
            q, sigma, steps, delta = 10**lq, 10**ls, max(1, round(10**lt)), 10**ld
            # DiceSGD: alternate the exact path (G <= C1: the state never differs) and Monte Carlo
            g = (0.5 if i % 2 else None) if algo == "dicesgd" else None
            if algo == "dicesgd" and g is None:
                steps = min(steps, 200)  # Monte Carlo over the whole trajectory: keep it short
            signal.setitimer(signal.ITIMER_REAL, case_timeout)
            try:
                cert, lower, conf = _audit_case(algo, q, sigma, steps, delta, g)
            except _Slow:
                n_skip += 1
                continue
            except ValueError as exc:  # InvalidParameter: outside what this algorithm accepts
                print(f"  {algo}: refused q={q:.3g} sigma={sigma:.3g} T={steps} delta={delta:.3g}: {exc}")
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if cert is None or not math.isfinite(cert):
                n_inf += 1
                t_max = max(t_max, steps)
                continue
            t_max = max(t_max, steps)
            if lower <= 0:
                continue
            n_pos += 1
            if cert / lower < worst:
                worst = cert / lower
                vals = dict(
                    q=q, sigma=sigma, steps=steps, delta=delta, eps=cert, lower=lower, confidence=conf
                )
                where = {k: float(f"{float(v):.6g}") for k, v in vals.items()}
        print(
            f"{algo}: {len(draws)} cases ({n_pos} with a positive lower bound, {n_inf} with eps = inf, "
            f"{n_skip} skipped after {case_timeout:g} s), largest T {t_max:.3g}, "
            f"{time.perf_counter() - t0:.0f} s; worst eps / lower = {worst:.6g} at {where}"
        )
        sound = sound and worst >= 1
    return sound


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--algos", help="comma list (or 'all') for the per-algorithm audit sweep")
    ap.add_argument("--audit-cases", type=int, default=12, help="random cases per algorithm (12)")
    ap.add_argument("--case-timeout", type=float, default=30.0, help="seconds per audited case (30)")
    args = ap.parse_args()
    if args.algos:
        algos = list(T_MAX_LOG10) if args.algos == "all" else args.algos.split(",")
        if not audit_sweep(algos, args.audit_cases, args.seed, args.case_timeout):
            raise SystemExit("UNSOUND: a certified epsilon below an audit's lower bound")
        return
    rng = np.random.default_rng(args.seed)
    corners = [np.array(c) for c in itertools.product(*zip(LOW, HIGH, strict=True))]
    cases = corners + [rng.uniform(LOW, HIGH) for _ in range(args.cases)]
    worst, where, positive = math.inf, None, 0
    t0 = time.perf_counter()
    for lq, ls, lt, ld in cases:
        q, sigma, steps, delta = 10**lq, 10**ls, max(1, round(10**lt)), 10**ld
        eps = rdp_to_epsilon(subsampled_gaussian_rdp(q, sigma, DEFAULT_ORDERS, steps=steps), delta).epsilon
        lower = sum_test_epsilon_lower(q, sigma, steps, delta, thresholds=200)
        if lower <= 0:
            continue
        positive += 1
        if eps / lower < worst:
            worst, where = eps / lower, dict(q=q, sigma=sigma, steps=steps, delta=delta, eps=eps, lower=lower)
    print(f"{len(cases)} cases, {positive} with a positive lower bound, {time.perf_counter() - t0:.1f} s")
    print(f"worst eps / lower bound = {worst:.6g} at {where}")
    if worst < 1:
        raise SystemExit("UNSOUND: an epsilon below the rigorous lower bound")


if __name__ == "__main__":
    main()
