"""The names of the algorithms, in the order the CLI lists them: the one definition.

Kept apart from :mod:`accounting.algorithms` (whose package imports numpy and the shared
algorithm code) so that ``dptheory --help`` can list them without importing anything.
"""

from __future__ import annotations

__all__ = ["ALGO_NAMES"]

#: The ALGO names in the order the CLI lists them.
ALGO_NAMES: tuple[str, ...] = ("dpsgd", "dicesgd", "d2p2sgd", "d2psgd", "dp2sgd", "clip21sgd2m")
