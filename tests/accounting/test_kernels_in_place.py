"""Kernels rewritten in place for speed give the bits of their plain array formulas.

``_per_step_rdp`` takes its minimum over the split grid one (shifts, orders) slice at a time, and
the far tail's Mills series runs in place.  Both must equal, bit for bit, the one-expression forms
they replaced (written out below), including at infinities, NaNs and under/overflowing inputs.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting._log_a_frac import _mills
from accounting.hidden_state import SPLIT_GRID, _per_step_rdp
from accounting.rounding import up


def _per_step_rdp_reference(u, noise_multiplier, orders, sg_split, sg_full):
    """The (G, K, J) form: eps_SG at the split noise + the shift's Gaussian RDP, min over K."""
    z2 = noise_multiplier * noise_multiplier
    out = np.empty((u.size, orders.size))
    zero = u == 0.0
    out[zero] = sg_full
    if np.any(~zero):
        uu = u[~zero]
        shift = orders[None, None, :] * (uu[:, None, None] ** 2) / (2.0 * z2 * SPLIT_GRID[None, :, None])
        split = np.min(sg_split[None, :, :] + shift, axis=1)
        joint = orders[None, :] * (1.0 + uu[:, None]) ** 2 / (2.0 * z2)
        out[~zero] = np.minimum(split, joint) * up(8)
    return out


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(
        np.all((a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b)))
    )


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    log_z=st.floats(-160, 160),
    n_orders=st.integers(1, 12),
    n_u=st.integers(1, 9),
)
def test_per_step_rdp_equals_the_three_dimensional_minimum(seed, log_z, n_orders, n_u) -> None:
    rng = np.random.default_rng(seed)
    orders = np.sort(rng.choice([1.25, 2.0, 3.0, 10.5, 64.0, 1e4, 1e6], n_orders))
    sg = np.abs(rng.normal(size=(SPLIT_GRID.size, n_orders))) * 10.0 ** rng.uniform(-20, 20)
    mark = rng.random(sg.shape)
    sg[mark < 0.05], sg[mark > 0.98] = np.inf, np.nan
    full = np.abs(rng.normal(size=n_orders))
    u = 10.0 ** rng.uniform(-200, 200, n_u) * rng.choice([0.0, 1.0, 1.0], n_u)
    u[rng.random(n_u) < 0.1] = np.inf
    z = 10.0**log_z
    with np.errstate(all="ignore"):
        want = _per_step_rdp_reference(u, z, orders, sg, full)
        got = _per_step_rdp(u, z, orders, sg, full)
    assert _same_bits(got, want)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    log_hi=st.floats(-300, 300),
    rows=st.integers(1, 50),
    cols=st.integers(1, 70),
)
def test_mills_in_place_equals_the_nested_formula(seed, log_hi, rows, cols) -> None:
    rng = np.random.default_rng(seed)
    r = rng.uniform(-1.0, 1.0, (rows, cols)) * 10.0**log_hi
    r.flat[rng.integers(r.size)] = np.inf
    with np.errstate(all="ignore"):
        want = 1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r))))
        got = _mills(r)
    assert _same_bits(got, want)
