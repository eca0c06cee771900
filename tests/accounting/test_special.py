"""accounting.special (scipy-free gammaln, gammasgn, log_ndtr) against scipy and 40-digit mpmath.

The RDP code's rounding allowances were set with scipy's special functions, so the replacements
must be as accurate over the whole range the RDP code uses: integer orders up to
``orders.MAX_ORDER``, the fractional series' ``alpha - i + 1`` down to ``-_FRAC_MAX_TERMS``,
``log_ndtr`` on ``(-40, 10)`` -- and the extremes beyond.
"""

from __future__ import annotations

import functools

import mpmath
import numpy as np
import pytest
from scipy import special as sp

import accounting._log_a_frac as log_a_frac
import accounting._log_a_int as log_a_int
import accounting._log_phi as log_phi
import accounting._rdp_evaluate as rdp_evaluate
import accounting.rdp as rdp
import accounting.sigma_grid as sigma_grid
from accounting import special
from accounting.orders import DEFAULT_ORDERS

RNG = np.random.default_rng(20261123)


def _ulps(err: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|err| in units of the spacing of ``max(1, |ref|)``: absolute near lgamma's zeros at 1, 2."""
    return np.abs(err) / np.spacing(np.maximum(1.0, np.abs(ref)))


@functools.cache
def _mp_lgamma(v: float) -> float:
    with mpmath.workdps(40):
        return float(mpmath.log(abs(mpmath.gamma(mpmath.mpf(v)))))


@functools.cache
def _mp_log_ndtr(v: float) -> float:
    with mpmath.workdps(40):
        return float(mpmath.log(mpmath.ncdf(mpmath.mpf(v))))


def _gammaln_args() -> np.ndarray:
    """Everything rdp.py passes (integer orders, the fractional tables), plus wide random ranges."""
    frac = DEFAULT_ORDERS[DEFAULT_ORDERS != np.round(DEFAULT_ORDERS)]
    i = np.arange(rdp_evaluate._FRAC_MAX_TERMS + 1, dtype=float)
    parts = [
        np.arange(0.0, 3000.0) + 1.0,
        np.array([1e4, 1e5, 1e6, 1e6 + 1, 2.0**40, 1e300]),
        (frac[:, None] - i[None, :] + 1.0).ravel(),
        frac + 1.0,
        np.array([1.5, 2.5, 5000.5, 1e6 + 0.5]) + 1.0,
        np.exp(RNG.uniform(np.log(1e-300), np.log(1e300), 4000)),
        -np.exp(RNG.uniform(np.log(1e-300), np.log(1e6), 4000)),
        RNG.uniform(-20.0, 20.0, 4000),
        np.array([12.999999999999998, 13.0, 13.000000000000002, -12.5, -13.5]),
    ]
    return np.concatenate(parts)


def test_gammaln_matches_scipy_on_the_whole_used_range() -> None:
    x = _gammaln_args()
    ours, ref = special.gammaln(x), sp.gammaln(x)
    assert np.array_equal(np.isfinite(ours), np.isfinite(ref))
    fin = np.isfinite(ref)
    # Measured maximum 4 ulp (math.gamma on |x| < 13 is ~2 ulp less precise than Cephes there).
    assert _ulps(ours[fin] - ref[fin], ref[fin]).max() <= 6.0


def test_gammaln_integer_arguments_match_scipy_closely() -> None:
    """Integer orders only use integer arguments: exact factorials below 13, Cephes' formula above."""
    n = np.arange(1.0, 200_001.0)
    ours, ref = special.gammaln(n), sp.gammaln(n)
    assert _ulps(ours - ref, ref).max() <= 2.0
    assert special.gammaln(np.array([1.0, 2.0])).tolist() == [0.0, 0.0]


def test_gammaln_accuracy_against_mpmath_is_scipys() -> None:
    """Max error over samples of each range, in ulp of max(1, |lgamma|): ours <= scipy's + 3 and <= 5."""
    ranges = [(1e-30, 1e-10), (0.01, 0.5), (0.5, 1.5), (1.5, 2.5), (2.5, 13.0), (13.0, 60.0)]
    ranges += [(60.0, 5000.0), (5000.0, 1e6), (-13.0, -0.01), (-60.0, -13.0), (-4100.0, -60.0)]
    for lo, hi in ranges:
        x = RNG.uniform(lo, hi, 300)
        ref = np.array([_mp_lgamma(v) for v in x.tolist()])
        ours = _ulps(special.gammaln(x) - ref, ref).max()
        theirs = _ulps(sp.gammaln(x) - ref, ref).max()
        assert ours <= min(theirs + 3.0, 5.0), (lo, hi, ours, theirs)


def test_gammaln_edges_follow_scipy() -> None:
    x = np.array([0.0, -0.0, -1.0, -2.0, -14.0, -1e300, np.inf, -np.inf, np.nan, 1e306, 3e305])
    np.testing.assert_array_equal(special.gammaln(x), sp.gammaln(x))
    # scipy returns inf below the smallest normal; the true value is -log(x), finite.
    assert special.gammaln(1e-310) == pytest.approx(-np.log(1e-310), rel=1e-15)
    assert special.gammaln(3.5).shape == ()


def test_gammasgn_equals_scipy() -> None:
    x = np.concatenate(
        [
            _gammaln_args(),
            -np.arange(0.0, 50.0),
            np.array([-0.0, 1e-310, -1e-310, -1e300, np.inf, -np.inf, np.nan, -0.5, -1.5, -2.5]),
        ]
    )
    np.testing.assert_array_equal(special.gammasgn(x), sp.gammasgn(x))


def test_log_ndtr_against_scipy_and_mpmath() -> None:
    # (range, relative tolerance against 40 digits): erfc's relative accuracy at large arguments
    # limits both libraries to ~1.5e-14 where log Phi = -Q(x) is tiny.
    for lo, hi, tol in [(-45.0, -20.0, 2e-15), (-20.0, -1.0, 2e-15), (-1.0, 6.0, 2e-14), (6.0, 10.0, 3e-14)]:
        x = np.concatenate([RNG.uniform(lo, hi, 400), [lo, hi]])
        ref = np.array([_mp_log_ndtr(v) for v in x.tolist()])
        ours, theirs = special.log_ndtr(x), sp.log_ndtr(x)
        assert (np.abs(ours - ref) / np.abs(ref)).max() <= tol, (lo, hi)
        assert (np.abs(ours - theirs) / np.abs(theirs)).max() <= 2 * tol, (lo, hi)


def test_log_ndtr_large_arrays_agree_with_the_loop() -> None:
    x = RNG.uniform(-45.0, 10.0, special.NDTR_LOOP_MAX + 1)
    big = special.log_ndtr(x)  # scipy's vectorised branch: the array is above the loop's size
    np.testing.assert_array_equal(big, sp.log_ndtr(x))
    loop = special.log_ndtr(x[:5000])
    assert (np.abs(loop - big[:5000]) / np.abs(big[:5000])).max() <= 3e-14


def test_log_ndtr_path_depends_on_the_input_alone() -> None:
    """Same input, same bits, whatever the process did before (scipy loaded, large calls made)."""
    x = RNG.uniform(-45.0, 10.0, 300)
    first = special.log_ndtr(x)
    special.log_ndtr(RNG.uniform(-45.0, 10.0, special.NDTR_LOOP_MAX + 1))  # takes scipy's path
    assert not np.array_equal(first, sp.log_ndtr(x))  # the loop's bits differ from scipy's here
    np.testing.assert_array_equal(special.log_ndtr(x), first)
    np.testing.assert_array_equal(special.log_ndtr(x[:1])[0], first[0])  # size 1: the loop too


def test_log_ndtr_edges() -> None:
    x = np.array([-np.inf, np.inf, np.nan, 0.0, -1.0, -20.0, -1e200, 40.0])
    np.testing.assert_allclose(special.log_ndtr(x), sp.log_ndtr(x), rtol=1e-15, atol=0.0)


def _scipy_log_ndtr_upper(x: np.ndarray) -> np.ndarray:
    """``accounting._log_phi.log_ndtr_upper`` with scipy's ``log_ndtr`` on (-40, 10), unraised."""
    out = log_phi.log_ndtr_upper(x)
    mid = (x > -40.0) & (x < log_phi.NDTR_ONE)
    out[mid] = sp.log_ndtr(x[mid])
    return out


def _clear_rdp_caches() -> None:
    for fn in (
        log_a_int._int_tables,
        log_a_int._int_dense_tables,
        log_a_frac._frac_tables,
        log_a_frac.frac_tables_stacked,
    ):
        fn.cache_clear()
    sigma_grid.GRID_CACHE.clear()


@pytest.mark.parametrize(
    "q, sigma",
    [(0.02, 1.0093), (0.01, 0.3), (1e-6, 1e4), (4.4e-7, 1e4), (0.5, 0.7), (0.999, 5.0), (0.01, 60.0)],
)
def test_rdp_unchanged_against_scipy_special(monkeypatch: pytest.MonkeyPatch, q: float, sigma: float) -> None:
    """The whole RDP curve (every default order, extremes included) equals the one computed with
    scipy's functions to rounding."""
    extra = [1.01, 1.5, 20000.0] + ([5000.5] if q < 1e-6 else [])  # 5000.5: a past review's case
    orders = np.concatenate([DEFAULT_ORDERS, extra])
    _clear_rdp_caches()
    ours = rdp.subsampled_gaussian_rdp(q, sigma, orders, steps=1000)
    for mod in (log_a_int, log_a_frac):  # the modules that call accounting.special
        monkeypatch.setattr(mod, "special", sp)
    monkeypatch.setattr(log_a_frac, "log_ndtr_upper", _scipy_log_ndtr_upper)  # the series' log Phi
    _clear_rdp_caches()
    try:
        ref = rdp.subsampled_gaussian_rdp(q, sigma, orders, steps=1000)
    finally:
        _clear_rdp_caches()
    assert ours.dropped == ref.dropped
    # Per-step log A = rdp (alpha - 1) / T.  Near A = 1 its rounding is absolute (a few ulp of 1,
    # see rdp._FRAC_ROUNDING = 1e-14, the allowance added on top), so compare absolutely there.
    log_a_ours, log_a_ref = ours.rdp * (orders - 1) / 1000, ref.rdp * (orders - 1) / 1000
    np.testing.assert_allclose(log_a_ours, log_a_ref, rtol=1e-12, atol=1e-15)
