"""Opacus ``IAccountant`` backed by dptheory's certified RDP accountant (see the package docstring
for how it differs from Opacus's ``RDPAccountant``)."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from opacus.accountants.accountant import IAccountant
from opacus.optimizers import DPOptimizer

from accounting.accountant import RdpAccountant

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
        self._rdp = RdpAccountant(orders)
        self._nonprivate = False
        self._certified: dict[str, Any] | None = None
        self._certified_steps: list[list[float]] = []  # runs [z, count]

    @property
    def orders(self) -> np.ndarray:
        return self._rdp.orders

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """DP-SGD steps as Opacus records them: runs of ``(noise_multiplier, sample_rate, count)``."""
        return self._history

    @history.setter
    def history(self, entries: Sequence[tuple[float, float, int]]) -> None:
        """Replace the DP-SGD steps, as Opacus's ``get_noise_multiplier`` does on every trial
        (``accountant.history = [(sigma, q, steps)]``): the RDP total is rebuilt from the entries,
        so ``get_epsilon`` always certifies exactly the history it is shown."""
        if self._certified is not None:
            raise ValueError(
                f"this accountant certifies a {self._certified['algo']} run; its DP-SGD history cannot be set"
            )
        fresh = RdpAccountant(self.orders, evaluation=self._rdp.evaluation)
        nonprivate = False
        runs: list[tuple[float, float, int]] = []
        for z, q, n in entries:
            z, q, n = float(z), float(q), int(n)
            if n < 0:
                raise ValueError(f"history entry ({z}, {q}, {n}): the count must be >= 0")
            if z == 0.0:
                nonprivate = nonprivate or n > 0
            elif n > 0:
                fresh.step(noise_multiplier=z, sample_rate=q, count=n)
            runs.append((z, q, n))
        self._rdp, self._nonprivate, self._history = fresh, nonprivate, runs

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
        z, q = float(noise_multiplier), float(sample_rate)
        if z == 0.0:
            self._nonprivate = True  # Opacus allows z = 0 (no privacy): epsilon is inf from now on
        else:
            self._rdp.step(noise_multiplier=z, sample_rate=q)
        if self._history and self._history[-1][0] == z and self._history[-1][1] == q:
            self._history[-1] = (z, q, self._history[-1][2] + 1)
        else:
            self._history.append((z, q, 1))

    def step_certified(self, mechanism: dict[str, Any], noise_multiplier: float) -> None:
        """One step of a DiceSGD / D2P2 run whose fixed parameters are ``mechanism``."""
        if self.history:
            raise ValueError("this accountant already holds DP-SGD steps; use a separate DptheoryAccountant")
        if self._certified is None:
            self._certified = dict(mechanism)
        elif mechanism != self._certified:
            changed = sorted(
                k for k in set(mechanism) | set(self._certified) if mechanism.get(k) != self._certified.get(k)
            )
            raise ValueError(
                f"{mechanism.get('algo')} parameters changed during the run ({', '.join(changed)}); the "
                "certified accountant covers one fixed setting per run"
            )
        z = float(noise_multiplier)
        if (
            self._certified["algo"] == "dicesgd"
            and self._certified_steps
            and self._certified_steps[0][0] != z
        ):
            raise ValueError("DiceSGD's certified accountant needs a constant noise multiplier")
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
        out = OrderedDict() if destination is None else destination
        out["history"] = [tuple(h) for h in self.history]
        out["mechanism"] = self.mechanism()
        out["dptheory"] = {
            "rdp": self._rdp.state_dict(),
            "nonprivate": self._nonprivate,
            "certified": None if self._certified is None else dict(self._certified),
            "certified_steps": [list(r) for r in self._certified_steps],
        }
        return out

    def load_state_dict(self, state_dict: Any) -> None:
        """Load :meth:`state_dict`'s output, or an Opacus ``RDPAccountant`` checkpoint (rebuilt
        from its history of (z, q, count))."""
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise ValueError("not an accountant state dict (needs 'history' and 'mechanism')")
        if state_dict["mechanism"] == "rdp":  # Opacus's RDP accountant: replay its history
            fresh = DptheoryAccountant(self.orders)
            for z, q, n in state_dict["history"]:
                for _ in range(int(n)):
                    fresh.step(noise_multiplier=z, sample_rate=q)
            self.__dict__.update(fresh.__dict__)
            return
        if state_dict["mechanism"] != self.mechanism():
            raise ValueError(
                f"state dict of mechanism {state_dict['mechanism']!r} cannot be loaded into "
                f"{self.mechanism()!r}"
            )
        own = state_dict.get("dptheory")
        if not isinstance(own, dict):
            raise ValueError("DptheoryAccountant state dict lacks its 'dptheory' entry")
        rdp = RdpAccountant.from_state_dict(own["rdp"])  # refuses an inconsistent stored total
        history = [(float(z), float(q), int(n)) for z, q, n in state_dict["history"]]
        if sum(n for z, _, n in history if z != 0) != rdp.steps:
            raise ValueError("DptheoryAccountant state dict is inconsistent: history and RDP steps differ")
        self._history = history
        self._rdp = rdp
        self._nonprivate = bool(own.get("nonprivate", False))
        cert = own.get("certified")
        self._certified = None if cert is None else dict(cert)
        self._certified_steps = [[float(z), int(n)] for z, n in own.get("certified_steps", [])]


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
    new name is added; every other name is Opacus's as before).
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
