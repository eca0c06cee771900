"""Opacus ``IAccountant`` backed by dptheory's certified RDP accountant (see the package docstring
for how it differs from Opacus's ``RDPAccountant``)."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from opacus.accountants.accountant import IAccountant
from opacus.optimizers import DPOptimizer

from accounting.accountant import RdpAccountant
from accounting.errors import InvalidParameter

from . import state_checks
from .d2p2_accounting import d2p2_certified_epsilon

MECHANISM = "dptheory-rdp"


class DptheoryAccountant(IAccountant):
    """Opacus accountant backed by :class:`accounting.accountant.RdpAccountant` (module docstring).

    One accountant accounts one mechanism: DP-SGD steps (``step``, what Opacus's hook calls for a
    plain ``DPOptimizer``), or a DiceSGD run, or a D2P2 run (``step_certified``, called by the hooks
    of :class:`DiceSGDOptimizer` / :class:`D2P2Optimizer`). Mixing them raises: composing a
    hidden-state bound with other mechanisms is not what these accountants certify.
    """

    def __init__(self, orders: Sequence[float] | None = None) -> None:
        self._history: list[tuple[float, float, int]] = []  # Opacus's format: (z, q, count)
        self._synced: tuple[tuple[float, float, int], ...] = ()  # the history the RDP total is of
        self._rdp = RdpAccountant(orders)
        self._nonprivate = False
        self._certified: dict[str, Any] | None = None
        self._certified_steps: list[list[float]] = []  # runs [z, count]

    @property
    def orders(self) -> np.ndarray:
        return self._rdp.orders

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """DP-SGD steps as Opacus records them: runs of ``(noise_multiplier, sample_rate, count)``.

        The list itself, as in Opacus, where code appends to an accountant's history: an edit in
        place is checked and the RDP total rebuilt from it before the next epsilon, step or
        checkpoint (:meth:`_sync`), never left beside a total of other steps."""
        return self._history

    @history.setter
    def history(self, entries: Sequence[tuple[float, float, int]]) -> None:
        """Replace the DP-SGD steps, as Opacus's ``get_noise_multiplier`` does on every trial
        (``accountant.history = [(sigma, q, steps)]``): the RDP total is rebuilt from the entries,
        so ``get_epsilon`` always certifies exactly the history it is shown."""
        if self._certified is not None:
            raise InvalidParameter(
                "history",
                f"this accountant certifies a {self._certified['algo']} run; its DP-SGD history "
                "cannot be set",
            )
        runs = state_checks.history_entries("history", entries)  # exact counts: 2.7 is refused, not 2
        fresh = RdpAccountant(self.orders, evaluation=self._rdp.evaluation)
        nonprivate = False
        for z, q, n in runs:
            if z == 0.0:
                nonprivate = nonprivate or n > 0
            elif n > 0:
                fresh.step(noise_multiplier=z, sample_rate=q, count=n)
        self._rdp, self._nonprivate, self._history = fresh, nonprivate, runs
        self._synced = tuple(runs)

    def _sync(self) -> None:
        """Rebuild the RDP total, through the setter's checks, if ``history`` was edited in place
        (appended to, cleared, an entry replaced) since the total was built from it."""
        if tuple(self._history) != self._synced:
            self.history = list(self._history)

    @classmethod
    def mechanism(cls) -> str:
        return MECHANISM

    def __len__(self) -> int:
        return int(sum(c for _, _, c in self.history) + sum(c for _, c in self._certified_steps))

    # ------------------------------------------------------------------ steps
    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """One Poisson-subsampled Gaussian (DP-SGD) step, as Opacus's hook reports it."""
        if self._certified is not None:
            raise ValueError(
                f"this accountant certifies a {self._certified['algo']} run; a DP-SGD step cannot be "
                "added to it (use a separate DptheoryAccountant)"
            )
        from accounting import validate

        self._sync()
        z = validate.nonnegative("noise_multiplier", noise_multiplier)  # z = 0: no privacy (below)
        q = validate.rate("sample_rate", sample_rate)
        if z == 0.0:
            self._nonprivate = True  # Opacus allows z = 0 (no privacy): epsilon is inf from now on
        else:
            self._rdp.step(noise_multiplier=z, sample_rate=q)
        if self._history and self._history[-1][0] == z and self._history[-1][1] == q:
            self._history[-1] = (z, q, self._history[-1][2] + 1)
        else:
            self._history.append((z, q, 1))
        self._synced = tuple(self._history)

    def step_certified(self, mechanism: dict[str, Any], noise_multiplier: float) -> None:
        """One step of a DiceSGD / D2P2 run whose fixed parameters are ``mechanism`` (the dict an
        optimizer's ``dptheory_mechanism()`` returns; refused with :class:`InvalidParameter` naming
        ``mechanism`` if a field is missing, unknown or out of range)."""
        from accounting import validate

        if self.history:
            raise ValueError("this accountant already holds DP-SGD steps; use a separate DptheoryAccountant")
        mechanism = state_checks.mechanism("mechanism", mechanism)
        z = validate.positive("noise_multiplier", noise_multiplier)
        if self._certified is not None and mechanism != self._certified:
            changed = sorted(
                k for k in set(mechanism) | set(self._certified) if mechanism.get(k) != self._certified.get(k)
            )
            raise ValueError(
                f"{mechanism.get('algo')} parameters changed during the run ({', '.join(changed)}); the "
                "certified accountant covers one fixed setting per run"
            )
        if mechanism["algo"] == "dicesgd" and self._certified_steps and self._certified_steps[0][0] != z:
            raise ValueError("DiceSGD's certified accountant needs a constant noise multiplier")
        self._certified = mechanism
        # The same step also goes to the RDP accountant, never used for epsilon here: a second
        # record of the run that a restore checks certified_steps against (_check_certified).
        self._rdp.step(noise_multiplier=z, sample_rate=float(self._certified["sample_rate"]))
        if self._certified_steps and self._certified_steps[-1][0] == z:
            self._certified_steps[-1][1] += 1
        else:
            self._certified_steps.append([z, 1])

    def get_optimizer_hook_fn(self, sample_rate: float):
        """Hook for ``DPOptimizer.attach_step_hook``: certified steps for dptheory's optimizers."""

        def hook_fn(optim: DPOptimizer) -> None:
            mech = getattr(optim, "dptheory_mechanism", None)
            if mech is None:
                self.step(
                    noise_multiplier=optim.noise_multiplier,
                    sample_rate=sample_rate * optim.accumulated_iterations,
                )
                return
            m = mech()
            if not math.isclose(m["sample_rate"], sample_rate, rel_tol=1e-12):
                raise ValueError(
                    f"optimizer assumes sample rate {m['sample_rate']:.6g} but the data loader's is "
                    f"{sample_rate:.6g}"
                )
            self.step_certified(m, optim.noise_multiplier)

        hook_fn._dptheory_accountant = self  # type: ignore[attr-defined]
        return hook_fn

    # -------------------------------------------------------------- epsilon
    def get_epsilon(self, delta: float, *args: Any, method: str = "improved", **kwargs: Any) -> float:
        """Certified epsilon spent so far at ``delta`` (``inf`` after any step with z = 0)."""
        return self.get_privacy_spent(delta=delta, method=method)[0]

    def get_privacy_spent(self, *, delta: float, method: str = "improved") -> tuple[float, float]:
        """``(epsilon, optimal order)`` (order NaN where the certified bound has none)."""
        from accounting import validate

        delta = validate.open_unit("delta", delta)  # also before the inf and 0 answers
        if method not in ("improved", "classic"):
            raise InvalidParameter("method", f"must be one of improved, classic (got {method!r:.40})")
        self._sync()
        if self._nonprivate:
            return math.inf, math.nan
        if self._certified is None:
            if not self.history:
                return 0.0, math.nan
            res = self._rdp.get_epsilon_result(delta, method=method)
            return float(res.epsilon), float(res.order)
        algo = self._certified["algo"]
        if algo == "dicesgd":
            return _dicesgd_epsilon(self._certified, self._certified_steps, delta, self.orders)
        return d2p2_certified_epsilon(
            multipliers=[z for z, _ in self._certified_steps],
            counts=[c for _, c in self._certified_steps],
            delta=delta,
            orders=self.orders,
            **{k: v for k, v in self._certified.items() if k not in ("algo", "batch_size")},
        )

    # ----------------------------------------------------------- checkpoints
    def state_dict(self, destination: Any = None) -> Any:
        """Opacus's keys (``history``, ``mechanism``) plus this accountant's own state (plain data)."""
        self._sync()
        out = OrderedDict() if destination is None else destination
        out["history"] = [tuple(h) for h in self.history]
        out["mechanism"] = self.mechanism()
        out["dptheory"] = {
            "rdp": self._rdp.state_dict(),
            "nonprivate": self._nonprivate,
            "certified": None if self._certified is None else dict(self._certified),
            "certified_steps": [list(r) for r in self._certified_steps],
        }
        out["dptheory"][state_checks.DIGEST] = state_checks.digest(out)
        return out

    def load_state_dict(self, state_dict: Any) -> None:
        """Load :meth:`state_dict`'s output, or an Opacus ``RDPAccountant`` checkpoint (rebuilt
        from its history of (z, q, count)).

        What can be recomputed is: the RDP total from its history (``RdpAccountant``), ``nonprivate``
        from the history (a z = 0 step means epsilon = inf whatever the flag says), and a
        DiceSGD / D2P2 run's ``certified_steps`` from the second record kept in the RDP history.
        The rest (a certified run's mechanism) is sealed by the state's digest
        (:mod:`.state_checks`): required for a certified run, checked wherever present.
        Anything else inconsistent or malformed is refused with one :class:`InvalidParameter`
        (naming ``state_dict``) and leaves this accountant unchanged.  A state edited
        consistently everywhere, digest recomputed, cannot be detected without signing it
        (docs/api.md)."""
        try:
            fresh = self._restored(state_dict)
        except InvalidParameter as err:
            if err.option == "state_dict":
                raise
            raise _bad(f"{err.option}: {err.message}") from None
        except (KeyError, IndexError, TypeError, AttributeError, ValueError, OverflowError) as err:
            raise _bad(f"{type(err).__name__}: {err!s:.200}") from None
        self.__dict__.update(fresh.__dict__)

    def _restored(self, state_dict: Any) -> DptheoryAccountant:
        if (
            not isinstance(state_dict, Mapping)
            or "history" not in state_dict
            or "mechanism" not in state_dict
        ):
            raise InvalidParameter(
                "state_dict", "not an accountant state dict (needs 'history' and 'mechanism')"
            )
        history = _history(state_dict["history"])
        if "dptheory" in state_dict and state_dict["mechanism"] != self.mechanism():
            # replaying it as an Opacus checkpoint would ignore the contradicting dptheory record
            raise _bad(
                f"mechanism {state_dict['mechanism']!r:.80} contradicts its 'dptheory' entry "
                f"(written by {self.mechanism()!r})"
            )
        if state_dict["mechanism"] == "rdp":  # Opacus's RDP accountant: replay its history
            fresh = DptheoryAccountant(self.orders)
            for z, q, n in history:
                fresh._replay(z, q, n)
            return fresh
        if state_dict["mechanism"] != self.mechanism():
            raise _bad(
                f"mechanism {state_dict['mechanism']!r:.80} cannot be loaded into {self.mechanism()!r}",
            )
        own = state_dict.get("dptheory")
        if not isinstance(own, Mapping):
            raise _bad("DptheoryAccountant state dict lacks its 'dptheory' entry")
        state_checks.check_digest(state_dict, required=own.get("certified") is not None)
        fresh = DptheoryAccountant.__new__(DptheoryAccountant)
        fresh._rdp = RdpAccountant.from_state_dict(own["rdp"])  # refuses an inconsistent stored total
        fresh._history = history  # the attribute: the setter would rebuild the total it is checked against
        fresh._synced = tuple(history)
        # a z = 0 step in the history is no privacy, whatever the flag says; the flag alone only raises
        flag = own.get("nonprivate", False)
        if not isinstance(flag, bool):
            raise _bad(f"'nonprivate' must be true or false (got {flag!r:.40})")
        fresh._nonprivate = flag or any(z == 0 for z, _, _ in history)
        cert = own.get("certified")
        if cert is not None and not isinstance(cert, Mapping):
            raise _bad("'certified' must be a dict or null")
        fresh._certified = None if cert is None else state_checks.mechanism("state_dict", cert)
        fresh._certified_steps = _runs(own.get("certified_steps", []))
        if fresh._certified is None:
            if fresh._certified_steps:
                raise _bad("certified steps without a certified mechanism")
            # the same steps, not just as many: an RDP record of 100 steps at z = 100 beside a
            # history of 100 steps at z = 1 gave epsilon 0.0024 for 1.21
            replayed = RdpAccountant(fresh._rdp.orders, evaluation=fresh._rdp.evaluation)
            for z, q, n in history:
                if z != 0:
                    replayed.step(noise_multiplier=z, sample_rate=q, count=n)
            if replayed.history != fresh._rdp.history:
                raise InvalidParameter(
                    "state_dict", "inconsistent: the history and the RDP accountant hold different steps"
                )
        else:
            if history:
                raise _bad("a certified run cannot also hold DP-SGD steps")
            _check_certified(fresh._certified, fresh._certified_steps, fresh._rdp)
        return fresh

    def _replay(self, z: float, q: float, n: int) -> None:
        """``n`` DP-SGD steps at once (an Opacus history entry; its count may be 1e9)."""
        if z == 0.0:
            self._nonprivate = True
        else:
            self._rdp.step(noise_multiplier=z, sample_rate=q, count=n)
        if self.history and self.history[-1][0] == z and self.history[-1][1] == q:
            self.history[-1] = (z, q, self.history[-1][2] + n)
        else:
            self.history.append((z, q, n))
        self._synced = tuple(self._history)


def _bad(message: str) -> InvalidParameter:
    return InvalidParameter("state_dict", message)


def _history(raw: Any) -> list[tuple[float, float, int]]:
    """Opacus's history ``[(z, q, count), ...]``, validated (z >= 0, q in (0, 1], count an exact
    integer >= 1)."""
    return state_checks.history_entries("state_dict", raw, minimum=1)


def _runs(raw: Any) -> list[list[float]]:
    from accounting import validate

    if not isinstance(raw, list | tuple):
        raise _bad("'certified_steps' must be a list of [z, count]")
    out: list[list[float]] = []
    for entry in raw:
        if not isinstance(entry, list | tuple) or len(entry) != 2:
            raise _bad(f"certified steps are [z, count] (got {entry!r:.80})")
        out.append(
            [validate.positive("noise_multiplier", entry[0]), validate.positive_int("count", entry[1])]
        )
    return out


def _check_certified(mech: dict[str, Any], runs: list[list[float]], rdp: RdpAccountant) -> None:
    """A DiceSGD / D2P2 run's steps must equal the second record kept in the RDP history (one
    subsampled Gaussian step at the run's q and z per training step): editing ``certified_steps``
    alone (100 steps -> 1, epsilon 2.68 -> 0.53) is refused."""
    from accounting import validate
    from accounting.events import SelfComposedEvent, SubsampledGaussianEvent

    q = validate.rate("sample_rate", mech["sample_rate"])
    if mech["algo"] == "dicesgd" and len({z for z, _ in runs}) > 1:
        raise InvalidParameter(
            "state_dict", "DiceSGD's certified accountant needs a constant noise multiplier"
        )
    record: list[list[float]] = []
    for e in rdp.history:
        if not (isinstance(e, SelfComposedEvent) and isinstance(e.event, SubsampledGaussianEvent)):
            raise InvalidParameter(
                "state_dict", "inconsistent: the certified run's record holds other events"
            )
        if e.event.sample_rate != q:
            raise InvalidParameter(
                "state_dict", "inconsistent: the certified run's record has another sample rate"
            )
        record.append([e.event.noise_multiplier, e.count])
    if record != runs:
        raise _bad(
            f"inconsistent: certified_steps ({sum(int(c) for _, c in runs)} steps) differ from the run's "
            f"record ({rdp.steps} steps)",
        )


def _dicesgd_epsilon(
    mech: dict[str, Any], runs: list[list[float]], delta: float, orders: np.ndarray
) -> tuple[float, float]:
    """Certified DiceSGD epsilon after the recorded steps (the same call as ``dptheory.epsilon``)."""
    from dptheory import api

    steps = int(sum(c for _, c in runs))
    rep = api.epsilon(
        noise_multiplier=float(runs[0][0]),
        delta=delta,
        algo="dicesgd",
        mode="certified",
        sample_rate=mech["sample_rate"],
        steps=steps,
        dataset_size=mech["dataset_size"],
        batch_size=mech["batch_size"],
        c1=mech["c1"],
        c2=mech["c2"],
        grad_bound=mech["grad_bound"],
        orders=[float(o) for o in orders],
    )
    order = rep.order if rep.order is not None else math.nan
    return float(rep.epsilon), float(order)


def _register_with_opacus() -> None:
    """Make ``create_accountant("dptheory-rdp")`` return a :class:`DptheoryAccountant`.

    Opacus's own ``PrivacyEngine.make_private_with_epsilon`` calibrates through
    ``get_noise_multiplier(accountant=self.accountant.mechanism())``, which builds a fresh accountant
    from that name; without the registration the swap ``privacy_engine.accountant =
    DptheoryAccountant()`` breaks that method.  Opacus >= 1.5.3 has a registry; older releases build
    accountants in ``opacus.accountants.utils.create_accountant``, which is wrapped instead (only the
    new name is added; every other name resolves as in Opacus).
    """
    try:
        from opacus.accountants.registry import register_accountant
    except ImportError:  # pragma: no cover - opacus < 1.5.3
        import opacus.accountants.utils as opacus_utils

        original = opacus_utils.create_accountant
        if getattr(original, "_dptheory_wrapped", False):
            return

        def create_accountant(mechanism: str) -> IAccountant:
            return DptheoryAccountant() if mechanism == MECHANISM else original(mechanism)

        create_accountant._dptheory_wrapped = True  # type: ignore[attr-defined]
        opacus_utils.create_accountant = create_accountant
        return
    register_accountant(MECHANISM, DptheoryAccountant, force=True)


_register_with_opacus()
