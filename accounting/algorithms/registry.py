"""Name -> :class:`~accounting.algorithms.base.Algorithm` for every ALGO the CLI accepts."""

from __future__ import annotations

from accounting.algorithms.base import Algorithm
from accounting.algorithms.clip21 import Clip21SGD2M
from accounting.algorithms.d2p2 import D2P2SGD, D2PSGD, DP2SGD
from accounting.algorithms.dicesgd import DiceSGD
from accounting.algorithms.dpsgd import DPSGD
from accounting.errors import InvalidParameter

ALGORITHMS: dict[str, Algorithm] = {
    a.name: a for a in (DPSGD(), DiceSGD(), D2P2SGD(), D2PSGD(), DP2SGD(), Clip21SGD2M())
}

#: The ALGO names in the order the CLI lists them.
ALGO_NAMES: tuple[str, ...] = ("dpsgd", "dicesgd", "d2p2sgd", "d2psgd", "dp2sgd", "clip21sgd2m")


def get_algorithm(name: str) -> Algorithm:
    """The algorithm called ``name``; InvalidParameter('--algo', ...) for an unknown name."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise InvalidParameter("--algo", f"must be one of {', '.join(ALGO_NAMES)} (got {name!r})") from None
