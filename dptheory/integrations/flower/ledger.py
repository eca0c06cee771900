"""A client's certified local-DP ledger: the noisy messages it released, and their epsilon.

Pure Python (``accounting`` only; no flwr, no torch), so that it can be tested and used alone;
:class:`dptheory.integrations.flower.mods.PrivacyLedgerMod` keeps one per client in its Flower
``Context.state``.

Why the numbers are certified (docs/flower.md, "PrivacyLedgerMod", has the full argument):

* every released message is ``clip_C(u) + N(0, (z C)^2 I)``. Conditioned on everything released
  before (public), ``clip_C(u)`` is a function of the client's data with norm <= C, so two
  neighbouring local datasets (replace one: any data may change) give messages at distance
  <= 2C: a Gaussian mechanism with sensitivity 2C and noise std zC, i.e. RDP
  ``alpha * 4 / (2 z^2) = 2 alpha / z^2`` (:class:`accounting.events.GaussianEvent` with
  sensitivity 2);
* messages compose adaptively (Mironov 2017, Prop. 1): the ledger's RDP curve is the sum over
  the messages actually released (a round the client skipped, or was not sampled in, releases
  nothing and costs nothing);
* state the client keeps and never sends (error feedback, momentum) is not released; it only
  shapes later messages, whose cost is already counted.

The certified epsilon is the RDP one (same function as ``dptheory epsilon --algo clip21sgd2m``
when every message used the same z). :meth:`LocalDpLedger.pld_epsilon` is the exact PLD of the
same composition (closed-form mu-GDP, :mod:`accounting.gaussian_pld`); it is never larger than
the RDP number, and :meth:`LocalDpLedger.epsilon` checks that (a cross-check of two independent
routes).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

from accounting.errors import InvalidParameter

#: Sensitivity of one message in units of the clipping norm (replace-one adjacency).
SENSITIVITY = 2.0


def _check_z(z: float) -> float:
    from accounting import validate

    return validate.positive("noise_multiplier", z)  # a real number: not True, not '1', not None


def _check_delta(delta: float) -> float:
    from accounting import validate

    return validate.open_unit("delta", delta)


@dataclass
class LocalDpLedger:
    """Noise multipliers of the messages released so far, as ``{z: count}``."""

    counts: dict[float, int] = field(default_factory=dict)

    @property
    def messages(self) -> int:
        return sum(self.counts.values())

    def record(self, noise_multiplier: float) -> None:
        """One more message was released with noise std ``noise_multiplier * C``."""
        z = _check_z(noise_multiplier)
        self.counts[z] = self.counts.get(z, 0) + 1

    def with_message(self, noise_multiplier: float) -> LocalDpLedger:
        """The ledger as it would be after one more message (self unchanged)."""
        nxt = LocalDpLedger(dict(self.counts))
        nxt.record(noise_multiplier)
        return nxt

    def _event(self):
        from accounting.events import ComposedEvent, GaussianEvent, SelfComposedEvent

        return ComposedEvent(
            tuple(SelfComposedEvent(GaussianEvent(z, SENSITIVITY), k) for z, k in sorted(self.counts.items()))
        )

    def rdp_epsilon(self, delta: float) -> float:
        """Certified epsilon at ``delta`` (RDP composition, improved conversion, rounded up)."""
        delta = _check_delta(delta)
        if not self.counts:
            return 0.0
        if len(self.counts) == 1:  # the accountant's own route: equal to `dptheory epsilon`
            from dptheory import api

            ((z, k),) = self.counts.items()
            rep = api.epsilon(
                algo="clip21sgd2m", noise_multiplier=z, delta=delta, mode="certified", rounds=k, tau=1.0
            )
            return float(rep.epsilon)
        from accounting.algorithms.base import curve_epsilon, orders_of
        from dptheory.api import build_params

        p = build_params(algo="clip21sgd2m", delta=delta, noise_multiplier=1.0, rounds=1, tau=1.0)
        return float(curve_epsilon(self._event().rdp(orders_of(p)), delta, p.conversion).epsilon)

    def pld_epsilon(self, delta: float) -> float:
        """Exact PLD epsilon of the same messages (mu-GDP closed form, rounded up)."""
        from accounting.algorithms.base import pld_event_epsilon

        delta = _check_delta(delta)
        return 0.0 if not self.counts else float(pld_event_epsilon(self._event(), delta).epsilon)

    def epsilon(self, delta: float) -> float:
        """The certified (RDP) epsilon, after checking the PLD route is not above it."""
        eps = self.rdp_epsilon(delta)
        pld = self.pld_epsilon(delta)
        if pld > eps * (1 + 1e-9) + 1e-12:
            raise RuntimeError(f"ledger cross-check failed: PLD epsilon {pld!r} > RDP epsilon {eps!r}")
        return eps

    # -- Flower state (a ConfigRecord holds lists of scalars) ----------------------------------
    def to_config(self) -> dict[str, list[float] | list[int]]:
        items = sorted(self.counts.items())
        return {"z": [z for z, _ in items], "count": [k for _, k in items]}

    @classmethod
    def from_config(cls, record) -> LocalDpLedger:
        """The ledger :meth:`to_config` wrote.  Entries with the same z compose (their counts add:
        a dict built from the pairs kept only the last); each z is a finite number > 0 and each
        count an exact integer >= 1 (2.7 is refused, not truncated; ``True`` is not 1).  Anything
        else raises :class:`InvalidParameter` naming ``record``."""
        from accounting import validate

        try:
            zs, ks = record["z"], record["count"]
        except (KeyError, TypeError, IndexError):
            raise InvalidParameter("record", "must map 'z' and 'count' to lists") from None
        if not all(isinstance(v, list | tuple) for v in (zs, ks)) or len(zs) != len(ks):
            raise InvalidParameter("record", "'z' and 'count' must be lists of the same length")
        counts: dict[float, int] = {}
        for z, k in zip(zs, ks, strict=True):
            try:
                z = validate.positive("z", z)
            except InvalidParameter as err:
                raise InvalidParameter("record", f"{err.option} {err.message}") from None
            if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= validate.MAX_COUNT:
                raise InvalidParameter("record", f"count must be integers in [1, 2**53] (got {k!r:.40})")
            counts[z] = counts.get(z, 0) + int(k)
        return cls(counts)


def gaussian_mechanism_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Flower's ``LocalDpMod`` noise std: ``sensitivity * sqrt(2 ln(1.25/delta)) / epsilon``
    (Dwork & Roth Thm 3.22; valid for epsilon < 1)."""
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def compare_with_localdpmod(epsilon: float, delta: float, rounds: int) -> dict[str, float]:
    """Same noise, two accounts after ``rounds`` messages.

    ``LocalDpMod(clipping_norm=C, sensitivity=2C, epsilon, delta)`` draws std
    ``sigma = 2C sqrt(2 ln(1.25/delta))/epsilon`` each round and claims (epsilon, delta) per round;
    composed naively (basic composition, the only thing it offers) that is
    ``(rounds * epsilon, rounds * delta)``. The ledger certifies, for the same noise multiplier
    ``z = sigma / C`` and the same total delta ``rounds * delta``, the RDP epsilon of ``rounds``
    Gaussian messages of sensitivity 2C.
    """
    if not 0 < epsilon < 1:
        raise InvalidParameter("epsilon", f"LocalDpMod's formula needs 0 < epsilon < 1 (got {epsilon!r})")
    z = gaussian_mechanism_sigma(SENSITIVITY, epsilon, delta)
    total_delta = _check_delta(rounds * delta)
    ledger = LocalDpLedger({z: int(rounds)})
    return {
        "noise_multiplier": z,
        "rounds": int(rounds),
        "delta_total": total_delta,
        "localdpmod_epsilon": rounds * epsilon,
        "ledger_epsilon": ledger.rdp_epsilon(total_delta),
        "ledger_epsilon_pld": ledger.pld_epsilon(total_delta),
    }
