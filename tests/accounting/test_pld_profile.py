"""``delta_for_epsilons`` is dp-accounting's ``get_delta_for_epsilon`` bit for bit, faster."""

from __future__ import annotations

import numpy as np
import pytest

pld_lib = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")

from accounting.audit.pld_profile import delta_for_epsilons  # noqa: E402

# the audit's epsilon grid (dptheory.auditing.tradeoff.SubsampledGaussian) and a point between two
# of its steps; for these mechanisms it reaches past the largest finite loss
GRID = np.unique(np.concatenate([np.linspace(0, 2, 201), np.linspace(2, 60, 581), [0.0137]]))


def _pld(q: float, z: float, steps: int, interval: float = 1e-3):
    return pld_lib.from_gaussian_mechanism(
        standard_deviation=z,
        sampling_prob=q,
        value_discretization_interval=interval,
        pessimistic_estimate=True,
    ).self_compose(steps)


@pytest.mark.parametrize(
    "q,z,steps",
    [
        (0.03561, 1.227, 113),  # the README audit-run's mechanism
        (0.03561, 4.0, 113),
        (0.5, 2.0, 5),
        (1.0, 3.0, 1),  # no subsampling: a symmetric PLD
    ],
)
def test_equals_the_library_bit_for_bit(q, z, steps) -> None:
    pld = _pld(q, z, steps)
    want = np.asarray(pld.get_delta_for_epsilon(GRID))
    got = delta_for_epsilons(pld, GRID)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    # both ends of the loss support: from a real divergence down to the infinity mass alone
    assert want[0] > 1e-3 and want[-1] == pld._pmf_remove._infinity_mass


def test_coarse_and_sparse_pmfs_equal_the_library() -> None:
    pld = pld_lib.from_gaussian_mechanism(
        standard_deviation=1.0, sampling_prob=0.2, value_discretization_interval=0.5, use_connect_dots=False
    )
    eps = np.array([0.0, 0.25, 0.5, 1.0, 2.0])
    assert np.array_equal(delta_for_epsilons(pld, eps), np.asarray(pld.get_delta_for_epsilon(eps)))
    sparse = pld_lib.from_randomized_response(0.1, 4)
    assert np.array_equal(delta_for_epsilons(sparse, eps), np.asarray(sparse.get_delta_for_epsilon(eps)))


def test_unsorted_epsilons_are_refused_as_by_the_library() -> None:
    with pytest.raises(ValueError, match="sorted"):
        delta_for_epsilons(_pld(0.5, 2.0, 1), np.array([1.0, 0.5]))
