"""Name -> :class:`~accounting.algorithms.base.Algorithm` for every ALGO the CLI accepts.

Each algorithm's module is imported the first time the algorithm is asked for, so a
``dptheory calibrate --algo dpsgd`` does not load (or, without cached bytecode, compile) the
DiceSGD, D2P2 and Clip21 modules (start-up time).  One instance per name, so that the
algorithms' own caches are shared by every caller.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from accounting.algo_names import ALGO_NAMES as ALGO_NAMES  # the one list of names, re-exported
from accounting.algorithms.base import Algorithm
from accounting.errors import InvalidParameter

#: name -> (module, class) of its implementation.
_WHERE: dict[str, tuple[str, str]] = {
    "dpsgd": ("accounting.algorithms.dpsgd", "DPSGD"),
    "dicesgd": ("accounting.algorithms.dicesgd", "DiceSGD"),
    "d2p2sgd": ("accounting.algorithms.d2p2", "D2P2SGD"),
    "d2psgd": ("accounting.algorithms.d2p2", "D2PSGD"),
    "dp2sgd": ("accounting.algorithms.d2p2", "DP2SGD"),
    "clip21sgd2m": ("accounting.algorithms.clip21", "Clip21SGD2M"),
}
_INSTANCES: dict[str, Algorithm] = {}


class _LazyRegistry(Mapping[str, Algorithm]):
    """Read-only mapping over :data:`ALGO_NAMES` that builds each algorithm on first access."""

    def __getitem__(self, name: str) -> Algorithm:
        algo = _INSTANCES.get(name) if isinstance(name, str) else None
        if algo is None:
            if name not in _WHERE:
                raise KeyError(name)
            module, cls = _WHERE[name]
            algo = _INSTANCES[name] = getattr(importlib.import_module(module), cls)()
        return algo

    def __iter__(self) -> Iterator[str]:
        return iter(ALGO_NAMES)

    def __len__(self) -> int:
        return len(ALGO_NAMES)

    def __repr__(self) -> str:
        return f"ALGORITHMS({', '.join(ALGO_NAMES)})"


ALGORITHMS: Mapping[str, Algorithm] = _LazyRegistry()


def get_algorithm(name: str) -> Algorithm:
    """The algorithm called ``name``; InvalidParameter('--algo', ...) for an unknown name."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise InvalidParameter("--algo", f"must be one of {', '.join(ALGO_NAMES)} (got {name!r})") from None
