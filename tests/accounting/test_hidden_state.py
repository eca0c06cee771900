"""Certified DiceSGD hidden-state accountant (accounting/hidden_state.py, docs/hidden-state.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from accounting.errors import InvalidParameter
from accounting.hidden_state import (
    SPLIT_GRID,
    _per_step_rdp,
    _sg_table,
    dicesgd_certified_rdp,
    hidden_state_shift_bounds,
    largest_c2,
)
from accounting.rdp import subsampled_gaussian_rdp

ORDERS = np.array([1.25, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 64.0])


def _cert(**kw):
    base = dict(
        sample_rate=0.02, noise_multiplier=2.0, steps=40, c1=1.0, c2=1.0, batch_size=100.0, orders=ORDERS
    )
    base.update(kw)
    return dicesgd_certified_rdp(**base).rdp


@pytest.mark.parametrize("g", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("q,z,t", [(0.02, 0.8, 150), (0.1, 3.0, 7), (1.0, 2.0, 5)])
def test_reduces_to_dpsgd_when_grad_bound_below_c1(g, q, z, t):
    cert = dicesgd_certified_rdp(
        sample_rate=q,
        noise_multiplier=z,
        steps=t,
        c1=1.0,
        c2=5.0,
        batch_size=100.0,
        grad_bound=g,
        orders=ORDERS,
    )
    ref = subsampled_gaussian_rdp(q, z, ORDERS, steps=t)
    np.testing.assert_allclose(cert.rdp, ref.rdp, rtol=1e-12, atol=0)


def test_shift_bounds_units():
    u = hidden_state_shift_bounds(steps=5, c1=1.0, c2=2.0, batch_size=10.0)
    np.testing.assert_array_equal(u, [0, 4, 4, 4, 4])
    # G = 3, C1 = 1, B = 10: each past inclusion adds (G - C1)/B = 0.2, capped at 2 C2 = 1.
    u = hidden_state_shift_bounds(steps=8, c1=1.0, c2=0.5, batch_size=10.0, grad_bound=3.0)
    np.testing.assert_allclose(u, [0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.0, 1.0])


def test_monotone_in_c2():
    vals = [_cert(c2=c2) for c2 in (1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0)]
    for a, b in zip(vals, vals[1:], strict=False):
        assert np.all(b >= a)
    assert np.all(vals[-1] > vals[0])


def test_monotone_in_noise():
    vals = [_cert(noise_multiplier=z) for z in (0.7, 1.0, 2.0, 5.0, 50.0, 500.0)]
    for a, b in zip(vals, vals[1:], strict=False):
        assert np.all(b <= a)


def test_monotone_in_steps():
    vals = [_cert(steps=t) for t in (1, 2, 3, 10, 50)]
    for a, b in zip(vals, vals[1:], strict=False):
        assert np.all(b >= a)
    # a single step has U_0 = 0: exactly DP-SGD's one-step RDP
    np.testing.assert_allclose(vals[0], subsampled_gaussian_rdp(0.02, 2.0, ORDERS).rdp, rtol=1e-12)


def test_grad_bound_interpolates_between_dpsgd_and_no_bound():
    ref = subsampled_gaussian_rdp(0.02, 2.0, ORDERS, steps=40).rdp
    free = _cert()
    prev = ref
    for g in (1.0, 1.001, 1.01, 1.1, 2.0, 1e3):
        cur = _cert(grad_bound=g)
        assert np.all(cur >= prev * (1 - 1e-14))  # monotone up to rounding (relative)
        assert np.all(cur <= free + 1e-12)
        prev = cur
    np.testing.assert_allclose(_cert(grad_bound=1e9), free, rtol=1e-12)


def _exact_component_rdp(alpha: float, q: float, z: float, u: float, cos: float, direction: str) -> float:
    """Exact D_alpha of (1-q) N(u_vec, z^2 I) + q N(u_vec + e1, z^2 I) vs N(0, z^2 I) in 2-D.

    u_vec has norm u and angle arccos(cos) with the per-example contribution e1 (norm 1); the
    orthogonal directions factor out.  Integrated on a fine 2-D grid in log space (the integrand
    is smooth and the grid covers +-14 standard deviations beyond every mean).
    """
    ux, uy = u * cos, u * math.sqrt(max(0.0, 1 - cos * cos))
    lim = 14 * z + u + 1
    xs = np.linspace(-lim, lim, 1401)
    x, y = np.meshgrid(xs, xs, indexing="ij")
    s2 = 2 * z * z
    lr = -(x**2 + y**2) / s2
    l0 = -((x - ux) ** 2 + (y - uy) ** 2) / s2
    l1 = -((x - ux - 1) ** 2 + (y - uy) ** 2) / s2
    lp = np.logaddexp(math.log1p(-q) + l0, math.log(q) + l1)
    if direction == "add":
        lf = alpha * lp + (1 - alpha) * lr
    else:
        lf = alpha * lr + (1 - alpha) * lp
    dx = xs[1] - xs[0]
    log_int = special.logsumexp(lf) + 2 * math.log(dx) - math.log(math.pi * s2)
    return log_int / (alpha - 1)


# The default suite covers every u and every cos once (the diagonal); the other six pairs are slow.
@pytest.mark.parametrize(
    "u,cos",
    [
        pytest.param(u, cos, marks=() if i == j else pytest.mark.slow)
        for i, u in enumerate([0.3, 1.0, 3.0])
        for j, cos in enumerate([1.0, 0.0, -1.0])
    ],
)
def test_per_step_bound_dominates_exact_component_divergence(u, cos):
    """Noise splitting (Step 5) upper-bounds the exact shifted-mixture divergence at every angle."""
    q, z = 0.2, 2.0
    orders = np.array([2.0, 4.0])
    sg_full = _sg_table(q, np.array([z]), orders)[0]
    sg_split = _sg_table(q, z * np.sqrt(1.0 - SPLIT_GRID), orders)
    bound = _per_step_rdp(np.array([u]), z, orders, sg_split, sg_full)[0]
    for j, a in enumerate(orders):
        for direction in ("add", "remove"):
            exact = _exact_component_rdp(a, q, z, u, cos, direction)
            assert exact <= bound[j] * (1 + 1e-6), (a, direction, exact, bound[j])


@settings(max_examples=25, deadline=None)
@given(
    q=st.floats(min_value=0.001, max_value=1.0),
    z=st.floats(min_value=0.5, max_value=200.0),
    t=st.integers(min_value=1, max_value=300),
    c2=st.floats(min_value=1e-3, max_value=10.0),
    g=st.one_of(st.none(), st.floats(min_value=0.1, max_value=100.0)),
)
def test_bound_properties_random(q, z, t, c2, g):
    kw = dict(
        sample_rate=q, noise_multiplier=z, steps=t, c1=1.0, batch_size=50.0, grad_bound=g, orders=ORDERS
    )
    cur = dicesgd_certified_rdp(c2=c2, **kw).rdp
    ref = subsampled_gaussian_rdp(q, z, ORDERS, steps=t).rdp
    ok = np.isfinite(ref)  # orders the subsampled-Gaussian routine drops stay dropped (+inf) here
    assert np.all(np.isfinite(cur[ok]))
    assert np.all(~np.isfinite(cur[~ok]))
    # step 0 is exactly DP-SGD's step; later steps are at least the (possibly loose, at small
    # fractional orders) subsampled-Gaussian value or the plain Gaussian one, whichever is smaller
    gauss = ORDERS / (2 * z * z)
    low = ref / t + (t - 1) * np.minimum(ref / t, gauss)
    assert np.all(cur[ok] >= low[ok] * (1 - 1e-12))
    bigger = dicesgd_certified_rdp(c2=c2 * 1.5, **kw).rdp
    assert np.all(bigger[ok] >= cur[ok])
    # never worse than DP-SGD's step where u_t = 0, else the unamplified Gaussian of sensitivity 1 + u_t
    u = hidden_state_shift_bounds(steps=t, c1=1.0, c2=c2, batch_size=50.0, grad_bound=g) * 50.0
    fallback = sum(ref / t if ui == 0 else ORDERS * (1 + ui) ** 2 / (2 * z * z) for ui in u[1:])
    assert np.all(cur[ok] <= (ref / t + fallback)[ok] * (1 + 1e-12) + 1e-12)


def test_largest_c2():
    pytest.importorskip("accounting.conversion")
    from accounting.conversion import rdp_to_epsilon

    kw = dict(
        noise_multiplier=1.0, delta=1e-5, sample_rate=0.02, steps=50, c1=1.0, batch_size=100.0, orders=ORDERS
    )
    c2 = largest_c2(grad_bound=None, max_noise_ratio=1.5, **kw)
    assert 0 < c2 < math.inf
    eps0 = rdp_to_epsilon(subsampled_gaussian_rdp(0.02, 1.0, ORDERS, steps=50), 1e-5).epsilon

    def eps_cert(c):
        curve = dicesgd_certified_rdp(
            sample_rate=0.02, noise_multiplier=1.5, steps=50, c1=1.0, c2=c, batch_size=100.0, orders=ORDERS
        )
        return rdp_to_epsilon(curve, 1e-5).epsilon

    assert eps_cert(c2) <= eps0
    assert eps_cert(c2 * 1.01) > eps0
    assert largest_c2(grad_bound=0.9, max_noise_ratio=1.1, **kw) == math.inf
    # a larger allowed ratio allows a larger C2
    assert largest_c2(grad_bound=None, max_noise_ratio=3.0, **kw) > c2


@pytest.mark.parametrize(
    "kw,option",
    [
        (dict(noise_multiplier=0.0), "--noise-multiplier"),
        (dict(sample_rate=1.5), "--sample-rate"),
        (dict(steps=0), "--steps"),
        (dict(c2=-1.0), "--c2"),
        (dict(c1=float("nan")), "--c1"),
        (dict(grad_bound=0.0), "--grad-bound"),
    ],
)
def test_bad_input(kw, option):
    with pytest.raises(InvalidParameter) as info:
        _cert(**kw)
    assert info.value.option == option


def test_largest_c2_bad_ratio():
    with pytest.raises(InvalidParameter) as info:
        largest_c2(
            noise_multiplier=1.0,
            delta=1e-5,
            sample_rate=0.02,
            steps=5,
            c1=1.0,
            batch_size=10.0,
            grad_bound=None,
            max_noise_ratio=0.5,
            orders=ORDERS,
        )
    assert info.value.option == "--max-noise-ratio"


def test_inclusion_cap_is_valid_and_tighter():
    from accounting.hidden_state import dicesgd_certified_epsilon, dicesgd_certified_epsilon_capped

    kw = dict(sample_rate=0.02, steps=150, c1=1.0, c2=1.0, batch_size=1000.0, orders=ORDERS)
    for z in (250.0, 1134.0):
        r = dicesgd_certified_epsilon_capped(delta=1e-5, noise_multiplier=z, grad_bound=1.5, **kw)
        plain = dicesgd_certified_epsilon(delta=1e-5, noise_multiplier=z, grad_bound=1.5, **kw)
        assert r["cap"] is not None and r["epsilon"] < plain
        # delta_rdp + e^eps beta <= delta
        assert r["delta_rdp"] + math.exp(r["epsilon"]) * r["beta"] <= 1e-5 * (1 + 1e-12)
    # no gradient bound or G <= C1: the cap cannot help, the plain number is returned
    r = dicesgd_certified_epsilon_capped(delta=1e-5, noise_multiplier=5.0, grad_bound=None, **kw)
    assert r["cap"] is None
    assert r["epsilon"] == dicesgd_certified_epsilon(delta=1e-5, noise_multiplier=5.0, **kw)
    r = dicesgd_certified_epsilon_capped(delta=1e-5, noise_multiplier=1.0, grad_bound=1.0, **kw)
    from accounting.conversion import rdp_to_epsilon

    ref = rdp_to_epsilon(subsampled_gaussian_rdp(0.02, 1.0, ORDERS, steps=150), 1e-5).epsilon
    assert r["epsilon"] == pytest.approx(ref, rel=1e-12)


def test_shift_groups_with_a_ramp_past_the_float_range():
    """2 C2 / a overflows to inf (C2 = 1e300, a tiny): the ramp never ends within T, no OverflowError,
    and every grouped shift is at least the exact one, t a B / C1."""
    from accounting.hidden_state import shift_groups

    values, counts = shift_groups(steps=10**6, c1=1.0, c2=1e300, batch_size=1e3, grad_bound=1.0 + 1e-15)
    assert int(counts.sum()) == 10**6
    ends = np.cumsum(counts) - 1  # the last step t of each group
    a = ((1.0 + 1e-15) - 1.0) / 1e3
    assert np.all(values >= ends * a * 1e3 / 1.0 * (1 - 1e-15))
