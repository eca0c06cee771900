"""The one-dimensional dominating pair of DiceSGD's conservation law
(accounting/hidden_state_dominating.py, docs/hidden-state.md C1-C5) and its place in the certified
minimum (regime ``conservation-pair``)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import special, stats

import accounting.hidden_state_conservation as hsc
import accounting.hidden_state_dominating as hsd
from accounting.algorithms.base import PrivacyParams
from accounting.algorithms.registry import get_algorithm
from accounting.audit.dicesgd_storage import dicesgd_storage_epsilon_lower
from accounting.errors import InvalidParameter
from accounting.orders import DEFAULT_ORDERS
from tests.accounting.test_dicesgd_conservation import _adaptive, _flush, _stored_then_drained

DICE = get_algorithm("dicesgd")
PAPER = dict(sample_rate=0.02, dataset_size=50_000, batch_size=1000.0, steps=150, c1=1.0)


def _delta(eps, **kw):
    base = dict(sample_rate=0.02, noise_multiplier=20.0, steps=150, c1=1.0, rho=2.0)
    base.update(kw)
    return hsd.dominating_pair_delta(eps, **base)


def _eps(delta=1e-5, **kw):
    base = dict(sample_rate=0.02, noise_multiplier=20.0, steps=150, c1=1.0, rho=2.0)
    base.update(kw)
    return hsd.dominating_pair_epsilon(delta, **base)


def _certified(**kw):
    base = dict(PAPER, delta=1e-5, noise_multiplier=300.0, c2=1.0, grad_bound=3.0)
    base.update(kw)
    return DICE.epsilon(PrivacyParams(algo="dicesgd", **base), "certified")


def _pair_quadrature(eps, q, z, t, r, lim=40.0, points=100_001):
    """Both hockey-stick divergences of the pair by a plain Riemann sum (float, no outward rounding)."""
    mu = hsd.shifts(z, t, 1.0, r)
    w = stats.binom.pmf(np.arange(t + 1), t, q)
    x = np.linspace(-lim, lim + float(mu[-1]), points)
    dx = x[1] - x[0]
    q0 = stats.norm.pdf(x)
    p = (w[:, None] * stats.norm.pdf(x[None, :] - mu[:, None])).sum(0)
    g = math.exp(eps)
    return max(np.maximum(p - g * q0, 0).sum() * dx, np.maximum(q0 - g * p, 0).sum() * dx)


def _gdp_convexity_delta(eps, q, z, t, r):
    """The weaker bound by joint convexity alone: ``sum_n Bin(n; T, q) delta_Gauss(eps; mu_n)``."""
    mu = hsd.shifts(z, t, 1.0, r)[1:]
    w = stats.binom.pmf(np.arange(1, t + 1), t, q)
    dg = special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2)
    return float((w * dg).sum())


# -- the pair's numbers against independent computations ----------------------------------------


@pytest.mark.parametrize("eps", [0.0, 0.3, 2.0, 8.0])
@pytest.mark.parametrize("z, t, r", [(3.0, 5, 0.0), (10.0, 150, 2.0), (0.7, 1, 4.0)])
def test_q_one_is_the_gaussian_mechanism(eps, z, t, r):
    """q = 1: every step includes xi', P* = N(mu_T, 1), the Gaussian mechanism's exact curve."""
    mu = float(hsd.shifts(z, t, 1.0, r)[-1])
    exact = special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2)
    got = _delta(eps, sample_rate=1.0, noise_multiplier=z, steps=t, rho=r)
    assert got >= exact and got == pytest.approx(exact, rel=1e-6, abs=1e-300)


@given(
    q=st.floats(0.01, 0.9),
    z=st.floats(0.5, 60.0),
    t=st.integers(1, 60),
    r=st.floats(0.0, 12.0),
    eps=st.floats(0.0, 3.0),
)
@settings(max_examples=15, deadline=None)
def test_equals_a_quadrature_of_the_pair(q, z, t, r, eps):
    """The tail-sum formula at the threshold L = gamma against the divergence integrated directly (the
    Riemann sum's own error, at the kink of ``(p - gamma q)_+``, is up to about 1e-7 here)."""
    got = _delta(eps, sample_rate=q, noise_multiplier=z, steps=t, rho=r)
    ref = _pair_quadrature(eps, q, z, t, r)
    assert got >= ref - 1e-7 and got == pytest.approx(ref, rel=1e-4, abs=1e-7)


@given(
    q=st.floats(0.002, 0.5),
    z=st.floats(1.0, 400.0),
    t=st.integers(1, 300),
    r=st.floats(0.0, 15.0),
    eps=st.floats(0.0, 6.0),
)
@settings(max_examples=40, deadline=None)
def test_never_above_the_gdp_convexity_bound(q, z, t, r, eps):
    """Convex order beats joint convexity: the comonotone pair is below ``sum_n pi_n delta_Gauss(mu_n)``
    (equal at T = 1) up to the outward rounding: about 1e-9 relative at eps = 2; at eps = 0 with a tiny
    q, delta is a difference of two tails near 1/2 taken at the two ends of the bracketed threshold,
    which costs up to about 2e-10 absolute."""
    got = _delta(eps, sample_rate=q, noise_multiplier=z, steps=t, rho=r)
    assert got <= _gdp_convexity_delta(eps, q, z, t, r) * (1 + 1e-6) + 1e-9


@given(
    q=st.floats(0.002, 0.3),
    z=st.floats(1.0, 400.0),
    t=st.integers(2, 300),
    r=st.floats(0.0, 15.0),
    log_delta=st.floats(-12.0, -2.0),
)
@settings(max_examples=20, deadline=None)
def test_never_above_the_conservation_rdp(q, z, t, r, log_delta):
    """Same budget, no Renyi detour: at every z never above the RDP conservation bound's epsilon."""
    delta = 10.0**log_delta
    rdp = float(
        hsc.conservation_epsilon(
            delta=delta, sample_rate=q, noise_multiplier=z, steps=t, c1=1.0, rho=r, orders=DEFAULT_ORDERS
        ).epsilon
    )
    assert _eps(delta, sample_rate=q, noise_multiplier=z, steps=t, rho=r) <= rdp


# -- never below the truth ------------------------------------------------------------------------


def _grid_hockey(steps, q, c2, policy, lim, eps, h=0.2):
    """Exact hockey-stick divergences (both directions) of a small 1-D DiceSGD run (sigma1 = 1), by a
    tensor Riemann sum on ``[-lim, lim]^T``; ``policy`` as in test_dicesgd_conservation's Renyi grid
    (the others' residual common to both worlds, xi''s clipped gradient and residual). h = 0.2 agrees
    with h = 0.1 to 1e-5 on the stored instances."""
    g = np.arange(-lim, lim + h / 2, h)
    ys = [g.reshape((-1,) + (1,) * (steps - 1 - t)) for t in range(steps)]
    shape = (g.size,) * steps

    def loglik(bits):
        e, ll = 0.0, 0.0
        for t in range(steps):
            o, cx, rx = policy(t, ys[:t])
            ll = ll - 0.5 * (ys[t] - (np.clip(e, -c2, c2) + bits[t] * cx)) ** 2
            e = e - np.clip(e, -c2, c2) + o + bits[t] * rx
        return np.broadcast_to(ll, shape)

    norm = steps * (math.log(h) - 0.5 * math.log(2 * math.pi))
    dq = np.exp(loglik((0,) * steps) + norm)
    dp = np.zeros(shape)
    for bits in itertools.product((0, 1), repeat=steps):
        k = sum(bits)
        dp += q**k * (1 - q) ** (steps - k) * np.exp(loglik(bits) + norm)
    gamma = math.exp(eps)
    return float(np.maximum(dp - gamma * dq, 0).sum()), float(np.maximum(dq - gamma * dp, 0).sum())


def _sqrt_n_budget(z, t, c1, r):
    """A deliberately false shift ``sqrt(n) (1 + r)/z``, i.e. the budget ``n (c + a)^2`` (n in place of
    n^2 for the stored residuals): real runs that store and then release must beat it."""
    return np.sqrt(np.arange(t + 1.0)) * (1.0 + r / c1) / z


@pytest.mark.parametrize(
    "name, steps, q, c, a, c2, policy, lim",
    [
        ("flush", 2, 0.9, 0.5, 0.5, 1.0, _flush(0.5, 0.5), 8.0),
        ("adaptive", 2, 0.9, 0.5, 0.5, 1.0, _adaptive(0.5, 0.5, 1.0), 10.0),
        ("stored", 3, 0.9, 0.1, 0.5, 1.0, _stored_then_drained(0.1, 0.5, 1.0), 9.5),
        ("stored-q-half", 3, 0.5, 0.2, 0.8, 2.0, _stored_then_drained(0.2, 0.8, 2.0), 11.0),
    ],
)
def test_never_below_the_exact_hockey_stick_of_small_runs(name, steps, q, c, a, c2, policy, lim, monkeypatch):
    """Real 1-D runs (adaptive, stored-then-released) at eps = 0, 0.5, 1: the exact delta in both
    directions is below the pair's; the stored run beats the false ``n (c + a)^2`` budget at every
    eps, so this comparison has power."""
    kw = dict(sample_rate=q, noise_multiplier=1.0 / c, steps=steps, c1=1.0, rho=a / c)
    exact = {eps: _grid_hockey(steps, q, c2, policy, lim, eps) for eps in (0.0, 0.5, 1.0)}
    for eps, (pq, qp) in exact.items():
        bound = hsd.dominating_pair_delta(eps, **kw)
        assert 0 < pq <= bound and 0 < qp <= bound, (eps, pq, qp, bound)
        assert max(pq, qp) > 0.05 * bound  # not trivially far below
    monkeypatch.setattr(hsd, "shifts", _sqrt_n_budget)
    beaten = [max(exact[eps]) > hsd.dominating_pair_delta(eps, **kw) for eps in exact]
    assert all(beaten) if name == "stored" else True


@pytest.mark.parametrize("q, z, t", [(0.02, 1.0, 150), (0.3, 2.5, 7), (0.05, 0.8, 40), (1.0, 4.0, 3)])
def test_rho_zero_never_below_dpsgd_exact_curve(q, z, t, monkeypatch):
    """rho = 0: DP-SGD's own T steps are one instance, so the pair is never below their epsilon
    (dp-accounting's optimistic PLD, a lower bound; DP-SGD is an instance for every rho >= 0); dropping
    the sqrt(n) term (the clipped gradients' shift) would be, so the check has power."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    one = pld_lib.from_gaussian_mechanism(
        standard_deviation=z, sampling_prob=q, pessimistic_estimate=False, value_discretization_interval=1e-3
    )
    lower = one.self_compose(t).get_epsilon_for_delta(1e-5)
    kw = dict(sample_rate=q, noise_multiplier=z, steps=t, rho=0.0)
    assert _eps(**kw) >= lower > 0.05
    if q < 1:
        assert _eps(**kw) > 1.05 * lower  # the lost amplification of each step's bit
    monkeypatch.setattr(hsd, "shifts", lambda z_, t_, c1, r: np.arange(t_ + 1.0) * (r / c1) / z_)
    assert _eps(**{**kw, "rho": 0.01}) < lower


@given(
    n=st.integers(1000, 3000),
    q=st.floats(0.03, 0.1),
    steps=st.integers(12, 25),
    g=st.floats(2.0, 12.0),
    c2_share=st.floats(0.3, 0.6),
    log_z=st.floats(math.log(3.0), math.log(100.0)),
)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_never_below_the_storage_and_lattice_audits_on_random_instances(n, q, steps, g, c2_share, log_z):
    from accounting.audit import run_audit

    b, z = q * n, math.exp(log_z)
    c2 = c2_share * (g - 1.0)  # inside the storage audit's range
    low, det = dicesgd_storage_epsilon_lower(
        sample_rate=q, noise_multiplier=z, steps=steps, delta=1e-5, c1=1.0, c2=c2, batch_size=b,
        grad_bound=g, dataset_size=n,
    )  # fmt: skip
    p = PrivacyParams(
        algo="dicesgd", noise_multiplier=z, delta=1e-5, sample_rate=q, dataset_size=n, steps=steps,
        batch_size=b, c1=1.0, c2=c2, grad_bound=g,
    )  # fmt: skip
    lattice = run_audit(p, samples=10_000, confidence=0.95, seed=0).epsilon_lower
    assert det["applicable"] and low > 0
    assert max(low, lattice) <= _eps(sample_rate=q, noise_multiplier=z, steps=steps, rho=g - 1.0)


def test_never_below_the_storage_audit_on_the_widest_grid_cell():
    """G = 11 C1, C2 = C1/2, where the storage audit is strongest, at the pair's own z for eps = 2."""
    from dptheory import api

    rep = api.calibrate(defaults="paper", eps=2.0, delta=1e-5, algo="dicesgd", grad_bound=11.0, c2=0.5)
    assert rep.details["regime"] == "conservation-pair"
    z = float(rep.noise_multiplier)
    assert _eps(noise_multiplier=z, rho=10.0) <= 2.0 < _eps(noise_multiplier=z * (1 - 1e-5), rho=10.0)
    low, _ = dicesgd_storage_epsilon_lower(
        sample_rate=0.02, noise_multiplier=z, steps=150, delta=1e-5, c1=1.0, c2=0.5, batch_size=1000.0,
        grad_bound=11.0, dataset_size=50_000,
    )  # fmt: skip
    assert 0.3 < low < 2.0


# -- monotonicity and the product path ------------------------------------------------------------


def test_monotone_in_z_rho_and_eps():
    zs = [5.0, 20.0, 80.0, 320.0]
    rhos = [0.0, 0.25, 1.0, 4.0, 10.0]
    table = np.array([[_eps(noise_multiplier=z, rho=r) for r in rhos] for z in zs])
    assert np.all(np.diff(table, axis=0) <= 0) and np.all(np.diff(table, axis=1) >= 0)
    deltas = [_delta(e, noise_multiplier=20.0) for e in (0.0, 0.5, 1.0, 2.0, 4.0)]
    assert all(x >= y for x, y in zip(deltas, deltas[1:], strict=False))


def test_independent_of_c2_and_in_the_minimum():
    vals = {c2: _certified(c2=c2).details["regimes"]["conservation-pair"] for c2 in (0.1, 0.5, 1.0, 8.0)}
    assert len(set(vals.values())) == 1
    got = _certified()
    assert got.details["regime"] == "conservation-pair"
    assert got.epsilon == min(got.details["regimes"].values()) < got.details["regimes"]["conservation"]
    gs = [_certified(grad_bound=g).epsilon for g in (1.5, 2.0, 3.0, 6.0, 11.0)]
    assert all(x <= y for x, y in zip(gs, gs[1:], strict=False))
    with hsc.left_out():
        assert "conservation-pair" not in _certified().details["regimes"]


def test_flush_cell_keeps_the_flush_value():
    """At the flush regime's calibrated z the pair (no amplification per bit) is far above it."""
    got = _certified(noise_multiplier=1.514, grad_bound=1.5, c2=1.0)
    assert got.details["regime"] == "flush" and got.epsilon <= 2.0
    assert got.details["regimes"]["conservation-pair"] > 5 * got.epsilon


def test_calibration_bisects_the_minimum():
    from dptheory import api

    rep = api.calibrate(defaults="paper", eps=2.0, delta=1e-5, algo="dicesgd", grad_bound=3.0, c2=1.0)
    assert rep.details["regime"] == "conservation-pair" and rep.epsilon <= 2.0
    z = float(rep.noise_multiplier)
    assert 18.6 < z < 18.8
    assert _eps(noise_multiplier=z) <= 2.0 < _eps(noise_multiplier=z * (1 - 1e-5))


# -- numerics and input checks ----------------------------------------------------------------------


def test_edges_never_crash_and_never_give_a_wrong_finite_number():
    # no noise to speak of: every shift overflows, delta 1, eps inf
    assert _eps(noise_multiplier=1e-300) == math.inf and _delta(1.0, noise_multiplier=1e-300) == 1.0
    # shifts up to 1e149: finite, and at least mu_1^2 / 2 = 5e295 (one inclusion has probability
    # 0.15 > delta, and a Gaussian mechanism's eps at small delta exceeds mu^2 / 2)
    assert 5e295 <= _eps(noise_multiplier=1e-148, rho=0.0) < math.inf
    # huge noise: nothing leaks
    assert _eps(noise_multiplier=1e300) < 1e-10 and _delta(1e-6, noise_multiplier=1e300) < 1e-290
    assert _eps(noise_multiplier=1e200, delta=1e-300) < 1e-6
    # beyond MAX_STEPS the pair is not evaluated
    assert _eps(steps=hsc.MAX_STEPS + 1) == math.inf
    # tiny delta and delta near 1
    tiny = _eps(delta=1e-300)
    assert math.isfinite(tiny) and tiny > _eps(delta=1e-10) > _eps() > _eps(delta=0.5) >= 0.0
    assert _eps(delta=1 - 1e-16) == 0.0
    # q = 1 and rho = 0 together: the Gaussian mechanism with mu = sqrt(T)/z
    assert _eps(sample_rate=1.0, rho=0.0, noise_multiplier=1.0, steps=1) == pytest.approx(
        _gaussian_eps(1.0, 1e-5), rel=1e-6
    )
    assert _delta(math.inf) == 0.0


def _gaussian_eps(mu, delta):
    from scipy.optimize import brentq

    f = lambda e: special.ndtr(-e / mu + mu / 2) - math.exp(e) * special.ndtr(-e / mu - mu / 2) - delta  # noqa: E731
    return brentq(f, 0.0, 100.0, xtol=1e-14)


def test_one_epsilon_is_fast_enough_for_calibration():
    import time

    start = time.process_time()
    for z in (10.0, 20.0, 40.0):
        _eps(noise_multiplier=z)
    assert (time.process_time() - start) / 3 < 0.25  # ~5 ms here; generous for a loaded machine


@pytest.mark.parametrize(
    "name, value",
    [("sample_rate", 0.0), ("noise_multiplier", -1.0), ("steps", 0), ("c1", math.nan), ("rho", -0.1)],
)
def test_bad_input_names_the_parameter(name, value):
    with pytest.raises(InvalidParameter, match=name):
        _eps(**{name: value})
    with pytest.raises(InvalidParameter, match=name):
        _delta(1.0, **{name: value})
    with pytest.raises(InvalidParameter, match="delta"):
        _eps(delta=1.5)
    with pytest.raises(InvalidParameter, match="eps"):
        _delta(-0.5)


def _mp_delta(eps, q, z, t, r):
    """The pair's delta at 60 digits (threshold by mpmath root finding; same float shifts)."""
    import mpmath as mp

    mp.mp.dps = 60
    mu = [mp.mpf(float(m)) for m in hsd.shifts(z, t, 1.0, r)]
    pi = [mp.binomial(t, n) * mp.mpf(q) ** n * (1 - mp.mpf(q)) ** (t - n) for n in range(t + 1)]
    gamma = mp.e ** mp.mpf(eps)

    def ratio(x):
        return mp.fsum(p * mp.e ** (m * x - m * m / 2) for p, m in zip(pi, mu, strict=True))

    def root(target):  # L is increasing: bisection in 60 digits
        lo, hi = mp.mpf(-500), mp.mpf(500)
        for _ in range(260):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if ratio(mid) < target else (lo, mid)
        return lo

    xg = root(gamma)
    fwd = mp.fsum(p * mp.ncdf(m - xg) for p, m in zip(pi, mu, strict=True)) - gamma * mp.ncdf(-xg)
    rev = mp.mpf(0)
    if pi[0] < 1 / gamma:
        xr = root(1 / gamma)
        rev = mp.ncdf(xr) - gamma * mp.fsum(p * mp.ncdf(xr - m) for p, m in zip(pi, mu, strict=True))
    return max(fwd, rev)


@pytest.mark.parametrize(
    "eps, q, z, t, r",
    [
        (20.0, 0.3, 1.0, 3, 1.0),
        (40.0, 1.0, 0.5, 2, 0.0),
        (8.0, 0.02, 2.0, 150, 2.0),
        (2.0, 0.5, 3.0, 10, 0.5),
        (30.0, 0.1, 3.0, 20, 1.0),
    ],
)
def test_deep_tails_against_mpmath(eps, q, z, t, r):
    """Where delta is far below any quadrature (down to ~1e-38): above a 60-digit evaluation and within
    1e-8 relative of it."""
    got = _delta(eps, sample_rate=q, noise_multiplier=z, steps=t, rho=r)
    ref = float(_mp_delta(eps, q, z, t, r))
    assert got >= ref > 0 and got == pytest.approx(ref, rel=1e-8)


@pytest.mark.parametrize("q, z, t, r, eps", [(0.02, 300.0, 20_000, 2.0, 1.0), (0.5, 40.0, 3000, 0.0, 0.0)])
def test_dropping_negligible_binomial_terms_changes_nothing_visible(q, z, t, r, eps, monkeypatch):
    """Terms below e^-750 of the largest are charged in full instead of summed: the delta stays above
    the all-terms value and within 1e-9 of it."""
    kept = _delta(eps, sample_rate=q, noise_multiplier=z, steps=t, rho=r)
    monkeypatch.setattr(hsd, "_DROP_BELOW", math.inf)
    full = _delta(eps, sample_rate=q, noise_multiplier=z, steps=t, rho=r)
    assert kept >= full and kept == pytest.approx(full, rel=1e-9)


def test_delta_below_the_float_range_is_the_smallest_double_not_zero():
    """The truth is positive for every finite eps (the pair's likelihood ratio is unbounded)."""
    assert _delta(50.0, sample_rate=1e-3, noise_multiplier=116.2, steps=1, rho=2.0) == 5e-324
    assert _delta(2.0, sample_rate=0.02, noise_multiplier=171.7, steps=500, rho=0.0) == 5e-324
    # shifts near 1e-300: the computed log-bound is -inf, the truth is still positive
    assert _delta(1.0, noise_multiplier=1e300, rho=0.5) == 5e-324


def test_monotone_in_g_across_rho_zero_and_never_below_the_exact_gaussian():
    """G <= C1 (rho = 0) must not report more than G just above C1: the pair is evaluated at rho = 0 too.
    At q = 1 it is DP-SGD's exact curve (T Gaussian releases, mu = sqrt(T)/z), so it may undercut the
    RDP-converted DP-SGD number but never the exact one (closed form, eps found by bisection)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    kw = dict(noise_multiplier=5.0, delta=1e-5, sample_rate=1.0, dataset_size=1000, steps=5)

    def dice(g):
        params = PrivacyParams(algo="dicesgd", batch_size=1000.0, c1=1.0, c2=1.0, grad_bound=g, **kw)
        return DICE.epsilon(params, "certified")

    below, above = dice(0.7), dice(1.000001)
    dp = get_algorithm("dpsgd").epsilon(PrivacyParams(algo="dpsgd", **kw), "certified")
    assert below.epsilon <= above.epsilon
    assert below.details["regime"] == "conservation-pair" and below.epsilon < dp.epsilon
    mu = 5**0.5 / 5.0
    exact = brentq(
        lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - 1e-5, 0.0, 50.0
    )
    assert exact <= below.epsilon <= exact * (1 + 1e-6)


def test_the_report_names_the_pair_when_it_gives_the_number() -> None:
    """The pair's number is an (eps, delta) statement, not an RDP conversion: the report's
    accountant says so (it said ``rdp``, next to an empty Renyi order); RDP regimes keep ``rdp``."""
    from accounting.algorithms.dicesgd import PAIR_ACCOUNTANT
    from dptheory import api

    pair = api.epsilon(algo="dicesgd", noise_multiplier=79.72, delta=1e-5, grad_bound=11.0, defaults="paper")
    assert pair.details["regime"] == "conservation-pair"
    assert pair.accountant == PAIR_ACCOUNTANT and pair.order is None
    flush = api.epsilon(algo="dicesgd", noise_multiplier=4.0, delta=1e-5, grad_bound=1.05, defaults="paper")
    assert flush.details["regime"] == "flush" and flush.accountant == "rdp" and flush.order is not None
