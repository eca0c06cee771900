"""``PrivacyLedgerMod``: local DP with a certified per-client ledger, for any Flower ClientApp.

One line in a ClientApp::

    app = ClientApp(mods=[PrivacyLedgerMod(clipping_norm=1.0, noise_multiplier=4.0,
                                           target_delta=1e-5, max_epsilon=8.0)])

On each ``train`` message the mod (Flower 1.41 mod signature ``mod(msg, context, call_next)``):

1. reads the client's ledger from ``context.state`` (a SuperNode keeps it across rounds; the
   ClientApp process itself may be new every round) and refuses the round, with an error reply
   naming the numbers, if one more message would take the client's certified epsilon above
   ``max-epsilon`` -- *before* the ClientApp runs, so that no state moves for a message that is
   never sent;
2. calls the ClientApp, then clips what it sends (the update ``reply - received`` in
   ``payload="update"`` mode, as Flower's ``LocalDpMod``; the reply's arrays themselves in
   ``payload="message"`` mode, e.g. a Clip21 shift) to L2 norm ``clipping-norm`` C jointly over
   all arrays, and adds ``N(0, (z C)^2)`` to every coordinate;
3. records the message in the ledger (:class:`.ledger.LocalDpLedger`: RDP with sensitivity 2C,
   cross-checked by the exact PLD) and writes ``dp-epsilon``, ``dp-messages``, ``dp-delta``,
   ``dp-client`` into the reply's MetricRecord, where :class:`LedgerCollector` on the server
   picks them up.

Settings: constructor arguments, or the run config keys ``clipping-norm``, ``noise-multiplier``,
``target-delta``, ``max-epsilon`` (Flower's usual names). The run config (chosen by whoever
submits the run) can only add privacy: the noise multiplier used is the largest of the
constructor's, the run config's and the node config's ``min-noise-multiplier``; the budget and
the delta are the smallest given. What is covered: the reply's arrays only. Metrics the ClientApp itself puts
in its reply, and replies to ``evaluate`` / ``query`` messages, pass through unchanged and are
not in the ledger: keep them data-independent (see docs/flower.md).
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Error, Message, MetricRecord, RecordDict
from flwr.common.constant import ErrorCode

from accounting.errors import InvalidParameter
from dptheory.cli.numbers import UP, fmt
from dptheory.integrations.flower.ledger import LocalDpLedger

LEDGER_STATE = "dptheory-ledger"
PAYLOADS = ("update", "message")
#: keys the mod adds to the reply's MetricRecord
METRIC_KEYS = ("dp-epsilon", "dp-messages", "dp-delta", "dp-noise-multiplier", "dp-client")
log = logging.getLogger("dptheory.flower")


def _positive(name: str, value: Any, strict: bool = False) -> float | None:
    """A number > 0, or None.  ``strict`` (constructor arguments, Python): a real number as
    :func:`accounting.validate.is_real` means it.  Otherwise (run and node config, which may
    arrive as text) a numeric string is read too; a bool is never a number."""
    from accounting import validate

    if value is None:
        return None
    if strict or isinstance(value, bool | np.bool_):
        return validate.positive(name, value)
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter(name, f"must be a number > 0 (got {value!r:.60})") from None
    if not (math.isfinite(v) and v > 0):
        raise InvalidParameter(name, f"must be a finite number > 0 (got {value!r:.60})")
    return v


def _seed(value: Any) -> int | None:
    """None, or an ``int`` in [0, 2**128) (what ``numpy.random.SeedSequence`` takes whole)."""
    if value is None:
        return None
    integral = isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)
    if not integral or not 0 <= value < 2**128:
        shown = repr(value) if not isinstance(value, int) or abs(value) < 10**40 else "a huge int"
        raise InvalidParameter("seed", f"must be None or an integer in [0, 2**128) (got {shown:.60})")
    return int(value)


def _delta(name: str, value: Any, strict: bool = False) -> float | None:
    if value is None:
        return None
    v = _positive(name, value, strict)
    if not v < 1:
        raise InvalidParameter(name, f"must be in (0, 1) (got {value!r})")
    return v


def client_id(context: Context) -> int:
    """``partition-id`` from the node config where set, else the node id."""
    pid = context.node_config.get("partition-id")
    return int(pid) if pid is not None else int(context.node_id)


def _error(msg: Message, reason: str) -> Message:
    return Message(Error(code=ErrorCode.MOD_FAILED_PRECONDITION, reason=reason), reply_to=msg)


class PrivacyLedgerMod:
    """Clip, add Gaussian noise, and account every message a client sends (module docstring)."""

    def __init__(
        self,
        clipping_norm: float | None = None,
        noise_multiplier: float | None = None,
        target_delta: float | None = None,
        max_epsilon: float | None = None,
        *,
        payload: str = "update",
        seed: int | None = None,
    ) -> None:
        self.clipping_norm = _positive("clipping_norm", clipping_norm, strict=True)
        self.noise_multiplier = _positive("noise_multiplier", noise_multiplier, strict=True)
        self.target_delta = _delta("target_delta", target_delta, strict=True)
        self.max_epsilon = _positive("max_epsilon", max_epsilon, strict=True)
        if payload not in PAYLOADS:
            raise InvalidParameter("payload", f"must be one of {', '.join(PAYLOADS)} (got {payload!r})")
        self.payload = payload
        self.seed = _seed(seed)

    # -- settings --------------------------------------------------------------------------------
    def settings(self, context: Context) -> tuple[float, float, float, float | None]:
        """(clipping norm, noise multiplier, delta, budget) for this client and run."""
        rc, nc = context.run_config, context.node_config
        c = _positive("clipping-norm", rc.get("clipping-norm")) or self.clipping_norm
        zs = [
            _positive("noise-multiplier", rc.get("noise-multiplier")),
            self.noise_multiplier,
            _positive("min-noise-multiplier", nc.get("min-noise-multiplier")),
        ]
        z = max((v for v in zs if v is not None), default=None)
        # the smallest delta given: a run config's larger one would loosen the budget's guarantee
        deltas = [d for d in (_delta("target-delta", rc.get("target-delta")), self.target_delta) if d]
        delta = min(deltas, default=None)
        budgets = [b for b in (_positive("max-epsilon", rc.get("max-epsilon")), self.max_epsilon) if b]
        for name, v in (("clipping_norm", c), ("noise_multiplier", z), ("target_delta", delta)):
            if v is None:
                raise InvalidParameter(name, "is required (constructor argument or run config)")
        return float(c), float(z), float(delta), (min(budgets) if budgets else None)

    @staticmethod
    def ledger(context: Context) -> LocalDpLedger:
        if LEDGER_STATE in context.state:
            return LocalDpLedger.from_config(context.state[LEDGER_STATE])
        return LocalDpLedger()

    # -- the mod ---------------------------------------------------------------------------------
    def __call__(self, msg: Message, context: Context, call_next: Callable[[Message, Context], Message]):
        if msg.metadata.message_type != "train":
            return call_next(msg, context)
        try:
            c, z, delta, budget = self.settings(context)
        except InvalidParameter as exc:
            return _error(msg, f"PrivacyLedgerMod: {exc}")
        ledger = self.ledger(context)
        who = client_id(context)
        spent = ledger.epsilon(delta)
        nxt = ledger.with_message(z).epsilon(delta)
        if budget is not None and nxt > budget:
            reason = (
                f"PrivacyLedgerMod: client {who} stops sending: message {ledger.messages + 1} would raise "
                f"its certified epsilon from {fmt(spent, UP)} to {fmt(nxt, UP)} > max-epsilon {budget:g} "
                f"(delta {delta:g}, noise multiplier {z:g})"
            )
            log.warning(reason)
            return _error(msg, reason)
        received = list(msg.content.array_records.items())
        out = call_next(msg, context)
        if out.has_error():
            return out  # nothing sent, nothing spent
        records = list(out.content.array_records.items())
        if len(records) != 1:
            return _error(
                msg, f"PrivacyLedgerMod: the reply must hold exactly one ArrayRecord (has {len(records)})"
            )
        key, record = records[0]
        arrays = {k: np.asarray(a.numpy(), dtype=np.float64) for k, a in record.items()}
        if self.payload == "update":
            if len(received) != 1 or list(received[0][1].keys()) != list(arrays):
                return _error(
                    msg, "PrivacyLedgerMod: payload='update' needs one ArrayRecord in, same keys out"
                )
            base = {k: np.asarray(a.numpy(), dtype=np.float64) for k, a in received[0][1].items()}
        else:
            base = {k: np.zeros_like(v) for k, v in arrays.items()}
        if not all(np.isfinite(a).all() for a in (*arrays.values(), *base.values())):
            # a NaN norm made the clip factor min(1, C / nan) = 1: every other entry went out raw
            return _error(msg, "PrivacyLedgerMod: the reply holds NaN or inf; nothing is sent or spent")
        noisy = self._privatize(arrays, base, c, z, self._rng(context, ledger.messages))
        out.content[key] = ArrayRecord(
            {k: Array(noisy[k].astype(record[k].numpy().dtype, copy=False)) for k in arrays}
        )
        ledger.record(z)
        context.state[LEDGER_STATE] = ConfigRecord(ledger.to_config())
        self._report(out.content, who, ledger.messages, ledger.epsilon(delta), delta, z)
        return out

    def _rng(self, context: Context, sent: int) -> np.random.Generator:
        if self.seed is None:
            return np.random.default_rng()  # fresh OS entropy
        return np.random.default_rng([self.seed, client_id(context), sent])

    @staticmethod
    def _privatize(arrays, base, c: float, z: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """base + clip_C(arrays - base) + N(0, (z C)^2 I). The clip factor is shaded down by 4 ulps so
        that the clipped norm stays <= C despite rounding (the sensitivity 2C is then exact)."""
        diffs = {k: arrays[k] - base[k] for k in arrays}
        norm = math.sqrt(math.fsum(float(np.sum(d * d)) for d in diffs.values()))
        scale = min(1.0, c / norm * (1 - 4 * 2.0**-52)) if norm > 0 else 1.0
        return {k: base[k] + d * scale + rng.normal(0.0, z * c, size=d.shape) for k, d in diffs.items()}

    @staticmethod
    def _report(content: RecordDict, who: int, messages: int, eps: float, delta: float, z: float) -> None:
        metrics = list(content.metric_records.items())
        legacy = [(k, r) for k, r in content.config_records.items() if k.endswith(".metrics")]
        if legacy:  # a NumPyClient's reply (flwr.compat): its metrics travel in "fitres.metrics"
            name, rec = legacy[0]
        elif metrics:
            name, rec = metrics[0]
        else:
            name, rec = "metrics", MetricRecord()
        rec["dp-epsilon"] = float(eps)
        rec["dp-messages"] = int(messages)
        rec["dp-delta"] = float(delta)
        rec["dp-noise-multiplier"] = float(z)
        rec["dp-client"] = int(who)
        content[name] = rec


class LedgerCollector:
    """Server side: each client's latest certified epsilon, from the replies' metrics.

    Use :meth:`update` on replies (Messages or their RecordDicts) in your own ServerApp loop, or
    pass :meth:`train_metrics_aggr_fn` to a Flower strategy (``FedAvg(train_metrics_aggr_fn=...)``):
    it records every reply and then aggregates the other metrics as the strategy would, the
    ``dp-*`` keys replaced by ``dp-epsilon-max`` (the largest client epsilon so far).
    """

    def __init__(self) -> None:
        self.clients: dict[int, dict[str, float | int]] = {}

    def update(self, replies: Iterable[Any]) -> None:
        for r in replies:
            if isinstance(r, Message):
                if r.has_error():
                    continue
                r = r.content
            recs = list(r.metric_records.values())
            recs += [v for k, v in r.config_records.items() if k.endswith(".metrics")]
            for rec in recs:
                if "dp-epsilon" in rec and "dp-client" in rec:
                    who = int(rec["dp-client"])
                    old = self.clients.get(who, {"messages": 0})
                    if int(rec["dp-messages"]) >= int(old["messages"]):
                        self.clients[who] = {
                            "epsilon": float(rec["dp-epsilon"]),
                            "messages": int(rec["dp-messages"]),
                            "delta": float(rec["dp-delta"]),
                        }

    def max_epsilon(self) -> float:
        return max((float(v["epsilon"]) for v in self.clients.values()), default=0.0)

    def train_metrics_aggr_fn(self, inner: Callable[[list[RecordDict], str], MetricRecord] | None = None):
        if inner is None:
            from flwr.serverapp.strategy.strategy_utils import aggregate_metricrecords as inner

        def aggregate(records: list[RecordDict], weighting_metric_name: str) -> MetricRecord:
            self.update(records)
            out = inner(records, weighting_metric_name)
            for k in METRIC_KEYS:
                out.pop(k, None)
            out["dp-epsilon-max"] = self.max_epsilon()
            return out

        return aggregate

    def to_json(self) -> list[dict[str, Any]]:
        return [{"id": i, **v} for i, v in sorted(self.clients.items())]
