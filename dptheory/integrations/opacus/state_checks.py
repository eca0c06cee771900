"""Checks on what a :class:`~.accountant.DptheoryAccountant` is given: DP-SGD history entries,
a DiceSGD / D2P2 mechanism dict, and the digest that seals a checkpoint.

Why each exists (every one was an epsilon-lowering input):

* a history count is an exact integer: ``int(2.7)`` or ``int(Fraction(1, 2))`` silently dropped
  steps, so a count that is not an ``int`` is refused, never rounded;
* a certified mechanism's fields feed the certified bound directly (DiceSGD's ``c2 = 1e-9`` gave
  0.13 instead of 242713), so each is typed and range-checked and unknown keys are refused;
* the checkpoint digest (SHA-256 of a canonical JSON of the state without the digest) refuses a
  state in which a single field was edited.  It is not a signature: whoever edits the state can
  recompute it (docs/api.md, "Checkpoints").
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from accounting import validate
from accounting.errors import InvalidParameter

#: The key of the digest inside the state's ``"dptheory"`` entry.
DIGEST = "digest"
#: Fields of each certified mechanism (what the optimizers' ``dptheory_mechanism()`` return).
DICESGD_FIELDS = ("algo", "sample_rate", "dataset_size", "batch_size", "c1", "c2", "grad_bound")
D2P2_FIELDS = ("algo", "sample_rate", "batch_size", "projection", "layers", "fixed_factor")
PROJECTIONS = ("fresh", "fixed", "none")


def count(option: str, value: Any, minimum: int = 0) -> int:
    """An exact integer count >= ``minimum`` (an ``int`` or numpy integer; not ``bool``, not a
    float however integral-looking: a count is never rounded)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise InvalidParameter(option, f"counts must be integers >= {minimum} (got {value!r:.60})")
    n = int(value)
    if n < minimum or n > validate.MAX_COUNT:
        raise InvalidParameter(
            option, f"counts must be integers in [{minimum}, 2**53] (got {n if n < 10**20 else '> 10**20'})"
        )
    return n


def history_entries(option: str, entries: Any, minimum: int = 0) -> list[tuple[float, float, int]]:
    """Opacus's ``[(noise_multiplier, sample_rate, count), ...]``: z >= 0, q in (0, 1], count an
    exact integer >= ``minimum``."""
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, list | tuple):
        raise InvalidParameter(option, f"must be a list of (z, q, count) (got {type(entries).__name__})")
    out = []
    for entry in entries:
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise InvalidParameter(
                option, f"entries are (noise_multiplier, sample_rate, count) (got {entry!r:.80})"
            )
        z, q, n = entry
        try:
            out.append((validate.nonnegative("noise_multiplier", z), validate.rate("sample_rate", q)))
        except InvalidParameter as err:
            raise InvalidParameter(option, f"{err.option} {err.message}") from None
        out[-1] += (count(option, n, minimum),)
    return out


def mechanism(option: str, raw: Any) -> dict[str, Any]:
    """A certified mechanism dict, validated and normalised to plain Python numbers."""
    if not isinstance(raw, Mapping):
        raise InvalidParameter(option, f"must be a dict (got {type(raw).__name__})")
    algo = raw.get("algo")
    fields = {"dicesgd": DICESGD_FIELDS, "d2p2sgd": D2P2_FIELDS, "d2psgd": D2P2_FIELDS}.get(algo)  # type: ignore[arg-type]
    if fields is None:
        raise InvalidParameter(option, f"'algo' must be dicesgd, d2p2sgd or d2psgd (got {algo!r:.40})")
    if set(raw) != set(fields):
        missing, extra = sorted(set(fields) - set(raw)), sorted(map(str, set(raw) - set(fields)))
        raise InvalidParameter(
            option, f"{algo} needs exactly the keys {', '.join(fields)} (missing {missing}, unknown {extra})"
        )
    try:
        out: dict[str, Any] = {"algo": algo, "sample_rate": validate.rate("sample_rate", raw["sample_rate"])}
        out["batch_size"] = validate.positive("batch_size", raw["batch_size"])  # q N: may be fractional
        if algo == "dicesgd":
            out["dataset_size"] = n = validate.positive_int("dataset_size", raw["dataset_size"])
            if not math.isclose(out["sample_rate"], out["batch_size"] / n, rel_tol=1e-9):
                raise InvalidParameter("sample_rate", "must equal batch_size / dataset_size")
            out["c1"] = validate.positive("c1", raw["c1"])
            out["c2"] = validate.positive("c2", raw["c2"])
            g = raw["grad_bound"]
            out["grad_bound"] = None if g is None else validate.positive("grad_bound", g)
            return out
        projection = raw["projection"]
        if projection not in PROJECTIONS:
            raise InvalidParameter("projection", f"must be fresh, fixed or none (got {projection!r:.40})")
        out["projection"] = projection
        layers = raw["layers"]
        if not isinstance(layers, list | tuple) or not all(
            isinstance(x, list | tuple) and len(x) == 2 for x in layers
        ):
            raise InvalidParameter("layers", "must be a list of [projection_dim, sigma_a]")
        out["layers"] = [
            [validate.positive_int("layers", p), validate.positive("layers", s)] for p, s in layers
        ]
        if projection == "fresh" and not out["layers"]:
            raise InvalidParameter("layers", "a fresh projection needs its layers")
        f = raw["fixed_factor"]
        out["fixed_factor"] = None if f is None else validate.positive("fixed_factor", f)
        if projection == "fixed" and f is None:
            raise InvalidParameter("fixed_factor", "a fixed projection needs the matrices' factor")
        return out
    except InvalidParameter as err:
        if err.option == option:
            raise
        raise InvalidParameter(option, f"{err.option} {err.message}") from None


def _plain(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"not plain data: {type(obj).__name__}")


def digest(state: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of ``history``, ``mechanism`` and ``dptheory`` (its
    ``digest`` key left out).  Tuples and lists hash alike (a JSON round trip is harmless); a
    float edited to an int (``100.0`` -> ``100``) does not."""
    own = {k: v for k, v in state["dptheory"].items() if k != DIGEST}
    body = {"history": state["history"], "mechanism": state["mechanism"], "dptheory": own}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def check_digest(state: Mapping[str, Any], required: bool) -> None:
    """Refuse a state whose digest does not match (or is missing where ``required``)."""
    stored = state["dptheory"].get(DIGEST)
    if stored is None:
        if required:
            raise InvalidParameter("state_dict", "a certified run's state must carry its digest (none found)")
        return
    try:
        ok = isinstance(stored, str) and digest(state) == stored
    except (TypeError, ValueError, RecursionError):
        raise InvalidParameter("state_dict", "holds something other than plain data") from None
    if not ok:
        raise InvalidParameter(
            "state_dict", "its digest does not match its content (edited or corrupted checkpoint)"
        )
