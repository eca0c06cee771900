"""One-run canary audits of a training run (Steinke et al. 2023; Mahloujifar et al. 2024).

``CanaryScoreAuditor`` (numpy/scipy) turns canary scores into epsilon lower bounds;
:mod:`dptheory.auditing.canaries` (torch, imported on demand) inserts canaries into training and
scores them.  See docs/audits.md ("Run audits").
"""

from __future__ import annotations

from dptheory.auditing.auditor import Bonferroni, CanaryScoreAuditor, FixedRule, GuessGrid
from dptheory.auditing.tradeoff import ApproxDP, GaussianDP, SubsampledGaussian, TradeoffFamily

__all__ = [
    "CanaryScoreAuditor",
    "GuessGrid",
    "Bonferroni",
    "FixedRule",
    "TradeoffFamily",
    "ApproxDP",
    "GaussianDP",
    "SubsampledGaussian",
]
