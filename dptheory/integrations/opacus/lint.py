"""Setup lint: a training setup checked against the accountant's assumptions (Poisson sampling,
certified noise scale, gradient accumulation, samplers that change the rate, loss reduction)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from accounting.errors import InvalidParameter


class SetupError(ValueError):
    """A setup the accountant cannot certify (one line)."""


class SetupWarning(UserWarning):
    """A setup that is certified but probably not what was meant (one line)."""


@dataclass(frozen=True)
class SetupIssue:
    level: str  # "error" | "warning"
    check: str  # "sampling" | "noise-scale" | "accumulation" | "sampler" | "reduction"
    message: str


def lint_setup(
    data_loader: Any = None,
    *,
    resampled: bool = False,
    sample_rate: float | None = None,
    accumulation_steps: int = 1,
    noise_std: float | None = None,
    noise_on: str = "mean",
    batch_size: float | None = None,
    report: Any = None,
    criterion: Any = None,
    loss_reduction: str | None = None,
    strict: bool = True,
) -> list[SetupIssue]:
    """Check a training setup against the accounting assumptions; one line per problem.

    * ``data_loader``: the accountant assumes Poisson sampling. A loader that is not Opacus's Poisson
      ``DPDataLoader`` (shuffled or sequential fixed-size batches) is an error, and so is a sampler
      that changes inclusion probabilities (``WeightedRandomSampler``, a subset sampler). With
      ``resampled=True`` (``make_private(poisson_sampling=True)`` will replace the loader by a
      ``DPDataLoader`` over the whole dataset) fixed-size batches are fine, and such a sampler is a
      warning: it is silently dropped.
    * ``accumulation_steps`` k > 1: one noisy step covers k batches, so the effective rate is k q
      while the calibration used q: an error (calibrate with ``sample_rate = k q``, ``steps = T / k``).
    * ``noise_std`` (the std actually added, ``noise_on="mean"`` for the averaged update or ``"sum"``
      for the summed gradients) against ``report.noise_std`` (the certified std on the averaged
      update, ``report.parameters['batch_size']`` = B): less noise than certified is an error (e.g.
      noise calibrated for the mean added to the sum), and B times more (noise calibrated for the
      sum added to the mean) is a warning: private, but wasteful.
    * ``criterion.reduction`` against ``make_private``'s ``loss_reduction``: a warning (Opacus then
      scales per-sample gradients by the batch size or its inverse; private, but clipped wrongly).

    ``strict=True`` raises :class:`SetupError` on the first error and emits warnings; otherwise all
    issues are returned (warnings are emitted either way).
    """
    issues: list[SetupIssue] = []
    q = sample_rate
    if data_loader is not None:
        from opacus.data_loader import DPDataLoader
        from opacus.utils.uniform_sampler import UniformWithReplacementSampler
        from torch.utils.data import RandomSampler, SequentialSampler

        sampler = getattr(data_loader, "sampler", None)
        batch_sampler = getattr(data_loader, "batch_sampler", None)
        is_poisson = isinstance(data_loader, DPDataLoader) or isinstance(
            batch_sampler, UniformWithReplacementSampler
        )
        if q is None and is_poisson:
            q = getattr(batch_sampler, "sample_rate", None)
        odd = sampler is not None and not isinstance(sampler, (RandomSampler, SequentialSampler))
        if not is_poisson and odd and resampled:
            issues.append(
                SetupIssue(
                    "warning",
                    "sampler",
                    f"{type(sampler).__name__} is dropped: poisson_sampling=True samples every example at "
                    "the same rate q = 1/len(data_loader)",
                )
            )
        elif not is_poisson and odd:
            issues.append(
                SetupIssue(
                    "error",
                    "sampler",
                    f"{type(sampler).__name__} changes each example's inclusion probability, so no single "
                    "sample rate q describes it; use Poisson sampling (DPDataLoader) over the whole dataset",
                )
            )
        elif not is_poisson and not resampled:
            kind = "shuffled" if isinstance(sampler, RandomSampler) else "sequential"
            issues.append(
                SetupIssue(
                    "error",
                    "sampling",
                    f"the data loader draws {kind} fixed-size batches but the accountant assumes Poisson "
                    "sampling; use poisson_sampling=True (Opacus DPDataLoader)",
                )
            )
    if accumulation_steps != 1:
        k = int(accumulation_steps)
        rate = f"{k} x q = {k * q:.4g}" if q is not None else f"{k} x q"
        issues.append(
            SetupIssue(
                "error",
                "accumulation",
                f"{k} batches are accumulated per noisy step, so the effective sample rate is {rate}, not "
                "the q the noise was calibrated for; calibrate with sample_rate = k q and steps = T / k",
            )
        )
    if noise_std is not None and report is not None:
        b = float(batch_size if batch_size is not None else (report.parameters or {}).get("batch_size") or 0)
        if noise_on not in ("mean", "sum"):
            raise InvalidParameter("noise_on", f"must be 'mean' or 'sum' (got {noise_on!r})")
        if b <= 0:
            raise InvalidParameter("--batch-size", "the noise-scale check needs the expected batch size B")
        added_mean = float(noise_std) / (b if noise_on == "sum" else 1.0)
        want = float(report.noise_std)
        ratio = added_mean / want
        if ratio < 1 - 1e-9:
            if math.isclose(ratio, 1.0 / b, rel_tol=1e-6):
                what = (
                    "noise calibrated for the mean is added to the sum (B times too little)"
                    if noise_on == "sum"
                    else "the noise on the mean is B times too small (divided by B twice?)"
                )
            else:
                what = f"the noise added is {ratio:.4g}x the certified noise"
            issues.append(
                SetupIssue("error", "noise-scale", f"{what}: certified std on the mean is {want:.4g}")
            )
        elif math.isclose(ratio, b, rel_tol=1e-6) and b > 1:
            what = (
                "noise calibrated for the sum is added to the mean"
                if noise_on == "mean"
                else "the noise on the sum is B times the certified noise"
            )
            issues.append(
                SetupIssue(
                    "warning",
                    "noise-scale",
                    f"{what}: B = {b:g} times more noise than certified (private, but the model learns less)",
                )
            )
    if criterion is not None and loss_reduction is not None:
        red = getattr(criterion, "reduction", None)
        if red in ("mean", "sum") and red != loss_reduction:
            issues.append(
                SetupIssue(
                    "warning",
                    "reduction",
                    f"the criterion reduces by {red!r} but make_private(loss_reduction={loss_reduction!r}): "
                    "per-sample gradients are scaled by the batch size or its inverse before clipping",
                )
            )
    for i in issues:
        if i.level == "warning":
            warnings.warn(SetupWarning(i.message), stacklevel=2)
    if strict:
        for i in issues:
            if i.level == "error":
                raise SetupError(i.message)
    return issues
