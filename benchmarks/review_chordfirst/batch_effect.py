"""Documented exception probe: a batch of > 1024 fractional series rows, where the old tree also
ran the tried (huge-noise) rows through the series, so its block widths differ.  Prints the
per-step matrix to OUT.npy.  usage (in each tree): PYTHONPATH=. python batch_effect.py K OUT.npy"""

import sys

import numpy as np

from accounting.orders import DEFAULT_ORDERS
from accounting.rdp import subsampled_gaussian_rdp_steps

K = int(sys.argv[1])
orders = np.unique(np.concatenate([DEFAULT_ORDERS, [150.5, 300.5, 500.5, 1000.5, 1500.5, 1999.5]]))
sig = np.concatenate(
    [10.0 ** np.linspace(11.5, 12.5, K), np.array([0.8, 1.5, 3.0, 10.0, 30.0, 100.0, 1e3, 1e4, 1e5, 1e6])]
)
q = np.full(sig.size, 0.3)
np.save(sys.argv[2], subsampled_gaussian_rdp_steps(q, sig, orders))
