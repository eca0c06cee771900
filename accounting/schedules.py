"""Per-step noise-multiplier schedules (D2P-SGD, DP2-SGD, D2P2-SGD and dynamic DP-SGD).

``base`` is the base noise multiplier sigma; step k = 1..T gets sigma_k:

* ``constant``:   sigma_k = sigma (DP2-SGD, plain DP-SGD);
* ``inv-k``:      sigma_k^2 = sigma^2 / k -- D2P2-SGD's text (Sec. 3, "sigma_{eps,k} = sigma_eps/sqrt(k)")
  and its Theorem 1;
* ``inv-sqrt-k``: sigma_k^2 = sigma^2 / sqrt(k) -- D2P2-SGD's Table 3 ("sigma^2_eps / sqrt(k)") and
  the authors' released code;
* ``exp``:        sigma_k = sigma * rho^(-k/T) -- the exponentially decaying noise of dynamic
  DP-SGD (Du et al. 2021, arXiv:2111.00173, cited by D2P2-SGD as involving "an exponential
  function").  Neither the D2P2-SGD text nor this repository's sources give a value for rho,
  so the default ``rho = 2`` (the last step's noise is half the first's, sigma_T = sigma/rho)
  is *our* documented choice; pass ``rho`` explicitly to reproduce a specific experiment.

Decreasing noise spends more privacy per step late in training; every schedule here is
accounted exactly by composing the per-step RDP (:mod:`accounting.rdp`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter

__all__ = [
    "DEFAULT_RHO",
    "EXACT_STEPS",
    "PLD_MAX_CLASSES",
    "SCHEDULES",
    "check_representable",
    "noise_classes",
    "noise_multipliers",
    "read_schedule_file",
    "schedule_blocks",
]

SCHEDULES: tuple[str, ...] = ("constant", "inv-k", "inv-sqrt-k", "exp")
DEFAULT_RHO = 2.0


def noise_multipliers(name: str, base: float, steps: int, *, rho: float = DEFAULT_RHO) -> np.ndarray:
    """Per-step noise multipliers ``sigma_1..sigma_T`` (shape ``(T,)``) of schedule ``name``.

    Args:
        name: one of :data:`SCHEDULES` (``constant``, ``inv-k``, ``inv-sqrt-k``, ``exp``).
        base: the base noise multiplier sigma (> 0).
        steps: the number of steps T (>= 1).
        rho: the ``exp`` schedule's ratio, ``sigma_k = sigma rho^(-k/T)``.

    Returns:
        An array of shape ``(T,)``.

    Raises:
        InvalidParameter: an unknown ``name`` or an out-of-range ``base``, ``steps`` or ``rho``.
    """
    if name not in SCHEDULES:
        raise InvalidParameter("--schedule", f"must be one of {', '.join(SCHEDULES)} (got {name!r})")
    sigma = validate.positive("--noise-multiplier", base)
    t = validate.positive_int("--steps", steps)
    k = np.arange(1, t + 1, dtype=float)
    if name == "constant":
        return np.full(t, sigma)
    r = validate.positive("--rho", rho) if name == "exp" else DEFAULT_RHO
    check_representable(name, sigma, t, r)
    if name == "inv-k":
        return sigma / np.sqrt(k)
    if name == "inv-sqrt-k":
        return sigma / k**0.25
    return sigma * np.exp(-(k / t) * math.log(r))


#: Schedules up to this many steps are materialised step by step; longer ones are blocked.
EXACT_STEPS = 1_000_000
#: Within one block the noise varies by at most this factor.
BLOCK_RATIO = 1.0005


def _sigma_at(name: str, sigma: float, k: np.ndarray, t: int, rho: float) -> np.ndarray:
    if name == "constant":
        return np.full(k.shape, sigma)
    if name == "inv-k":
        return sigma / np.sqrt(k)
    if name == "inv-sqrt-k":
        return sigma / k**0.25
    return sigma * np.exp(-(k / t) * math.log(rho))


def check_representable(name: str, sigma: float, t: int, rho: float) -> None:
    """Refuse a schedule whose noise multiplier underflows to 0 or overflows to inf at some step.

    Every schedule here is monotone in k, so its extremes are at k = 1 and k = T, computed by the
    same expression as the steps themselves.  A step with zero noise has no finite privacy
    guarantee, and accounting with it would report +inf at best (and some routes divide by it);
    an infinite one is not a number the accountants take.  Either way the cause is the pair of
    options, named in one line, rather than ``--noise-multiplier: must be > 0 (got 0.0)`` for a
    value the user never gave.  Only ``exp`` can reach either end from a normal base (the power
    laws divide by at most 2^26.5 at T <= 2^53)."""
    ends = _sigma_at(name, sigma, np.array([1.0, float(t)]), t, rho)
    if np.all(ends > 0.0) and np.all(np.isfinite(ends)):
        return
    zero = not np.all(ends > 0.0)
    step = 1 if not (ends[0] > 0.0 and np.isfinite(ends[0])) else t
    what = "underflows to 0 (no noise)" if zero else "overflows to inf"
    if name == "exp":
        fix = "a --schedule-rho closer to 1" + (" or a larger --noise-multiplier" if zero else "")
        raise InvalidParameter(
            "--schedule-rho",
            f"the exp schedule's noise multiplier sigma rho^(-k/T) {what} at step {step} of {t} "
            f"(--noise-multiplier {sigma:g}, --schedule-rho {rho:g}); use {fix}",
        )
    raise InvalidParameter(
        "--noise-multiplier",
        f"the {name} schedule's noise multiplier {what} at step {step} of {t} (base {sigma:g}); "
        "use a larger --noise-multiplier",
    )


def schedule_blocks(
    name: str,
    base: float,
    steps: int,
    *,
    rho: float = DEFAULT_RHO,
    rounding: str = "down",
    exact_steps: int = EXACT_STEPS,
) -> tuple[np.ndarray, np.ndarray]:
    """``(values, counts)`` describing ``sigma_1..sigma_T`` in O(min(T, #blocks)) memory.

    Up to ``exact_steps`` (default :data:`EXACT_STEPS`) steps this is the exact schedule (every count
    1).  Beyond, the steps are cut into consecutive blocks within which sigma_k (monotone in k for
    every schedule here) varies by at most :data:`BLOCK_RATIO`, and each block is represented by its smallest
    sigma (``rounding="down"``: the per-step RDP is non-increasing in sigma, so an upper bound on
    epsilon stays an upper bound) or its largest (``"up"``: for lower bounds, where extra noise
    is post-processing).  inv-k at T = 1e9 gives ~2.1e4 blocks.
    """
    if name not in SCHEDULES:
        raise InvalidParameter("--schedule", f"must be one of {', '.join(SCHEDULES)} (got {name!r})")
    if rounding not in ("down", "up"):
        raise ValueError("rounding must be 'down' or 'up'")
    sigma = validate.positive("--noise-multiplier", base)
    t = validate.positive_int("--steps", steps)
    r = validate.positive("--rho", rho) if name == "exp" else DEFAULT_RHO
    check_representable(name, sigma, t, r)
    if name == "constant":
        return np.array([sigma]), np.array([t], dtype=np.int64)
    if t <= exact_steps:
        return noise_multipliers(name, sigma, t, rho=r), np.ones(t, dtype=np.int64)
    # block starts: geometric in k for the power laws (sigma_a / sigma_b = (b/a)^power), evenly
    # spaced for exp (sigma_a / sigma_b = rho^((b-a)/T)).
    if name == "exp":
        width = max(1, int(t * math.log(BLOCK_RATIO) / abs(math.log(r)))) if r != 1 else t
        starts = np.arange(1, t + 1, width, dtype=np.int64)
    else:
        power = 0.5 if name == "inv-k" else 0.25
        growth = BLOCK_RATIO ** (1.0 / power)
        n_single = int(math.ceil(1.0 / (growth - 1.0)))  # below this every step is its own block
        head = np.arange(1, min(n_single, t) + 1, dtype=np.int64)
        if n_single >= t:
            starts = head
        else:
            m = int(math.ceil(math.log(t / n_single) / math.log(growth))) + 2
            tail = np.unique(np.floor(n_single * growth ** np.arange(1, m + 1)).astype(np.int64))
            starts = np.concatenate([head, tail[(tail > n_single) & (tail <= t)]])
    ends = np.append(starts[1:] - 1, t)
    counts = ends - starts + 1
    first = _sigma_at(name, sigma, starts.astype(float), t, r)
    last = _sigma_at(name, sigma, ends.astype(float), t, r)
    values = np.minimum(first, last) if rounding == "down" else np.maximum(first, last)
    return values, counts


#: Documented envelope: schedule files of up to this many values.
MAX_SCHEDULE_LINES = 10_000_000
_MAX_SCHEDULE_BYTES = 512 * 1024 * 1024


def _read_text(path: str | Path, opt: str) -> str:
    """The file's text (``-`` is standard input), refusing what would block or never end."""
    import os
    import stat
    import sys

    if str(path) == "-":
        data = sys.stdin.buffer.read(_MAX_SCHEDULE_BYTES + 1)
    else:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise InvalidParameter(opt, f"cannot read {str(path)!r}: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):  # a FIFO without a writer would block forever
            raise InvalidParameter(opt, f"{str(path)!r} is not a regular file (use '-' for standard input)")
        if st.st_size > _MAX_SCHEDULE_BYTES:
            raise InvalidParameter(opt, f"{str(path)!r} is larger than {_MAX_SCHEDULE_BYTES >> 20} MiB")
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InvalidParameter(opt, f"cannot read {str(path)!r}: {exc.strerror}") from None
    if len(data) > _MAX_SCHEDULE_BYTES:
        raise InvalidParameter(opt, f"more than {_MAX_SCHEDULE_BYTES >> 20} MiB of input")
    try:
        return data.decode("utf-8-sig")  # a byte-order mark is not part of the first number
    except UnicodeDecodeError:
        raise InvalidParameter(opt, f"{str(path)!r} is not UTF-8 text") from None


def read_schedule_file(path: str | Path) -> np.ndarray:
    """Read one positive noise multiplier per line; blank lines and ``#`` comments are ignored.

    ``-`` reads standard input.  A UTF-8 byte-order mark is skipped.  Raises
    ``InvalidParameter('--schedule-file', ...)`` for an unreadable, non-regular (FIFO, device,
    directory), oversized or empty file, more than :data:`MAX_SCHEDULE_LINES` values, and any
    entry that is not a finite number > 0 (the message names the line).
    """
    opt = "--schedule-file"
    text = _read_text(path, opt)
    if "#" not in text:  # fast path: numpy parses 10^7 values in about a second
        tokens = text.split()
        if len(tokens) == len([ln for ln in text.splitlines() if ln.strip()]):
            try:
                arr = np.array(tokens, dtype=float)
            except ValueError:
                arr = None
            if arr is not None and (arr.size == 0 or (np.all(np.isfinite(arr)) and np.all(arr > 0))):
                if arr.size > MAX_SCHEDULE_LINES:
                    raise InvalidParameter(opt, f"more than {MAX_SCHEDULE_LINES} values")
                if arr.size:
                    return arr
    values: list[float] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        item = raw.split("#", 1)[0].strip()
        if not item:
            continue
        try:
            v = float(item)
        except ValueError:
            raise InvalidParameter(opt, f"line {lineno}: {item!r} is not a number") from None
        if not math.isfinite(v) or v <= 0:
            raise InvalidParameter(
                opt, f"line {lineno}: noise multipliers must be finite and > 0 (got {item})"
            )
        values.append(v)
        if len(values) > MAX_SCHEDULE_LINES:
            raise InvalidParameter(opt, f"more than {MAX_SCHEDULE_LINES} values")
    if not values:
        raise InvalidParameter(opt, f"{str(path)!r} contains no noise multipliers (one number per line)")
    return np.asarray(values, dtype=float)


#: PLD on a schedule: at most this many noise classes (each one self-composed PLD).
PLD_MAX_CLASSES = 32
#: ... with neighbouring classes at least this ratio apart in noise.
PLD_CLASS_RATIO = 1.02


def noise_classes(
    values: np.ndarray,
    counts: np.ndarray,
    *,
    max_classes: int = PLD_MAX_CLASSES,
    ratio: float = PLD_CLASS_RATIO,
    rounding: str = "down",
) -> tuple[np.ndarray, np.ndarray, float]:
    """Group a schedule into at most ``max_classes`` noise classes, rounding noise *down*.

    Classes are geometric in the noise multiplier, ``r = max(ratio, (max/min)^(1/max_classes))``
    apart; each class takes the *smallest* noise multiplier of its members, so every step is
    replaced by one with no more noise.  A Poisson-subsampled Gaussian with noise ``s' <= s`` is
    at least as leaky as the one with ``s`` (the latter is the former plus independent Gaussian
    noise, a post-processing), so the composition of the class mechanisms dominates the
    schedule's, and any upper bound on its privacy loss (e.g. a pessimistic PLD) bounds the
    schedule's.  ``rounding="up"`` takes each class's *largest* noise instead: by the same
    argument the schedule then dominates the classes, whose optimistic PLD is a lower bound
    (used by tests and benchmarks to bracket the truth).  Returns ``(class values, class
    counts, r)``.
    """
    if rounding not in ("down", "up"):
        raise ValueError(f"rounding must be 'down' or 'up' (got {rounding!r})")
    v = np.asarray(values, dtype=float).reshape(-1)
    c = np.asarray(counts, dtype=np.int64).reshape(-1)
    lo, hi = float(v.min()), float(v.max())
    r = max(float(ratio), (hi / lo) ** (1.0 / max_classes)) if hi > lo else float(ratio)
    idx = np.minimum(np.floor(np.log(v / lo) / math.log(r)).astype(np.int64), max_classes - 1)
    idx = np.maximum(idx, 0)
    used = np.unique(idx)
    pick = np.min if rounding == "down" else np.max
    cls_val = np.array([pick(v[idx == k]) for k in used])
    cls_cnt = np.array([int(c[idx == k].sum()) for k in used], dtype=np.int64)
    return cls_val, cls_cnt, r
