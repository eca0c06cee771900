"""Hockey-stick divergences of a dp-accounting PLD at many epsilons, in array operations.

dp-accounting 0.6's ``get_delta_for_epsilon(array)`` on a dense PMF walks the loss grid in a Python
loop (one iteration per loss value and per epsilon), which costs ~0.1 s per profile at the audit's
``1e-3`` discretisation.  The same sums, for each epsilon ``e``,

    delta(e) = m_inf + sum_{l_j > e} p_j - e^e sum_{l_j > e} p_j e^{-l_j},

are here suffix sums taken with ``np.cumsum`` from the largest loss down: the same additions, in the
same order, from the same starting value ``m_inf`` as the library's loop, so each delta is the very
float the library returns (the tests compare them bit for bit).  Sparse PMFs, whose loop order
differs, are left to the library.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def delta_for_epsilons(pld: Any, epsilons: np.ndarray) -> np.ndarray:
    """``pld.get_delta_for_epsilon(epsilons)`` for a ``PrivacyLossDistribution``: the larger of the
    remove and add PMFs' divergences (the remove one alone when the PLD is symmetric).
    ``epsilons`` must be sorted ascending, as the library requires."""
    eps = np.asarray(epsilons, dtype=float)
    if eps.ndim != 1 or np.any(np.diff(eps) < 0):
        raise ValueError("epsilons must be a 1-D array sorted in ascending order")
    remove = _pmf_delta(pld._pmf_remove, eps)
    if pld._symmetric:
        return remove
    return np.maximum(remove, _pmf_delta(pld._pmf_add, eps))


def _pmf_delta(pmf: Any, eps: np.ndarray) -> np.ndarray:
    from dp_accounting.pld.pld_pmf import DensePLDPmf

    if not isinstance(pmf, DensePLDPmf) or np.isposinf(eps).any():
        return np.asarray(pmf.get_delta_for_epsilon(eps), dtype=float)
    probs = np.asarray(pmf._probs, dtype=float)
    losses = (np.arange(probs.size) + pmf._lower_loss) * pmf._discretization
    inf_mass = float(pmf._infinity_mass)
    # upper[k] = m_inf + p_{n-1} + ... + p_{n-k}: the loop's running sums after k steps
    upper = np.cumsum(np.concatenate([[inf_mass], probs[::-1]]))
    lower = np.cumsum(np.concatenate([[0.0], (probs * np.exp(-losses))[::-1]]))
    # the loop has added exactly the losses > e when it writes delta(e)
    k = probs.size - np.searchsorted(losses, eps, side="right")
    return upper[k] - np.exp(eps) * lower[k]
