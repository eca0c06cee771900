"""Per-algorithm privacy: claimed (the paper's statement) and certified (a proven upper bound).

See ``docs/algorithms.md`` for each mechanism, its noise convention, the reading of the
paper's formula and the certified derivation.
"""

from accounting.algorithms.base import PrivacyParams, PrivacyReport
from accounting.algorithms.registry import ALGO_NAMES, ALGORITHMS, get_algorithm

__all__ = ["ALGORITHMS", "ALGO_NAMES", "PrivacyParams", "PrivacyReport", "get_algorithm"]
