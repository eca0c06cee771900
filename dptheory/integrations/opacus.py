"""dptheory inside Opacus: accountant, calibration, DiceSGD / D2P2-SGD optimizers, setup lint.

Install with ``pip install -e ".[opacus]"``. This module imports torch and opacus; ``import dptheory``
does not import it.

Accountant
    :class:`DptheoryAccountant` implements Opacus's ``IAccountant`` (``step``, ``get_epsilon``,
    ``__len__``, ``mechanism``, ``state_dict`` / ``load_state_dict``) on top of
    :class:`accounting.accountant.RdpAccountant`: ``privacy_engine.accountant = DptheoryAccountant()``.

    *How it differs from Opacus's* ``RDPAccountant`` (``accountant="rdp"``). Both evaluate the
    Poisson-subsampled Gaussian RDP of Mironov et al. (2019) and convert with Balle et al. (2020,
    Thm 21), ``eps = rdp - (log delta + log a)/(a - 1) + log((a - 1)/a)``.

    * Integer orders: both compute the same finite binomial sum, exactly; per-order RDP and the
      epsilon on an integer grid agree to ~1e-12 relative (tested to 1e-9).
    * Fractional orders: Opacus sums Mironov's *signed* two-sided series and stops with a heuristic
      rule (no remainder bound). dptheory, like dp-accounting, sums the terms' absolute values and
      bounds the truncation rigorously (:mod:`accounting.rdp`): a certified upper bound, larger
      where the signed terms cancel, i.e. at small noise. At z = 0.5, q = 0.2, order 1.1 it is 6%
      larger per order (Opacus's value equals 40-digit quadrature there); at z = 1.1, q = 0.01,
      T = 1000, 4e-8 relative on epsilon. So ours can exceed Opacus's number only when Opacus's
      optimum is a fractional order, and only by this gap: the price of a certified bound, not a
      different mechanism (tests/test_opacus_integration.py checks both sides against quadrature).
    * Order grid: ours is :data:`accounting.orders.DEFAULT_ORDERS`, a strict superset of Opacus's
      ``DEFAULT_ALPHAS`` (1.1..10.9 and 12..63) that adds 11 and large orders up to 2048; with an
      integer optimum ours is never larger, and smaller when the optimum lies above 63 (small
      noise, large epsilon). ``DptheoryAccountant(orders=...)`` takes any grid.
    * Conversion: dp-accounting's version of the same theorem, which also returns 0 when
      ``delta^2 + e^-rdp > 1`` and never a negative epsilon (Opacus's formula goes below zero
      when delta > 1/a, a meaningless value); orders <= 1.01 are skipped.
    * ``__len__`` is the number of steps (Opacus's ``RDPAccountant`` returns the number of distinct
      (noise, rate) entries of its history).

Calibration
    :meth:`DptheoryPrivacyEngine.make_private_with_epsilon` (and the function
    :func:`make_private_with_epsilon` for any ``PrivacyEngine``) calibrates with
    :func:`dptheory.calibrate` (Brent on log z; the result always satisfies the target) instead of
    Opacus's bisection (Opacus issue #566), and returns what Opacus returns: ``(module, optimizer,
    data_loader)``; ``optimizer.noise_multiplier`` is the multiplier used and
    ``optimizer.privacy_report`` the certified report.

Optimizers
    :class:`DiceSGDOptimizer` and :class:`D2P2Optimizer` subclass Opacus's ``DPOptimizer`` and read
    the per-sample gradients that ``GradSampleModule`` stores in ``p.grad_sample``. Use them with
    ``DptheoryPrivacyEngine().make_private(..., dp_optimizer="dicesgd" | "d2p2sgd" | "d2psgd")``
    (the documented equivalent of passing an optimizer class: Opacus's own ``make_private`` always
    builds a plain ``DPOptimizer``). Each one is accounted by dptheory's *certified* accountant for
    its mechanism (DiceSGD: the hidden-state bound of :mod:`accounting.hidden_state`; D2P2: the
    projection-sensitivity bound of :mod:`accounting.projection`), never by DP-SGD accounting: they
    refuse any step hook that is not a :class:`DptheoryAccountant`'s.

Lint
    :func:`lint_setup` checks a setup against the accountant's assumptions (Poisson sampling, the
    noise scale the calibration certified, gradient accumulation, samplers that change the rate);
    :class:`DptheoryPrivacyEngine` runs it inside ``make_private``.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import torch
    from opacus import PrivacyEngine
    from opacus.accountants.accountant import IAccountant
    from opacus.optimizers import DPOptimizer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"dptheory.integrations.opacus needs opacus and torch ({exc}); install the extra: "
        'pip install -e ".[opacus]"'
    ) from exc

from accounting.accountant import RdpAccountant
from accounting.errors import InvalidParameter

__all__ = [
    "DptheoryAccountant",
    "DptheoryPrivacyEngine",
    "DiceSGDOptimizer",
    "D2P2Optimizer",
    "DP_OPTIMIZERS",
    "make_private_with_epsilon",
    "d2p2_layers",
    "d2p2_certified_epsilon",
    "lint_setup",
    "SetupIssue",
    "SetupError",
    "SetupWarning",
]

MECHANISM = "dptheory-rdp"
#: ``dp_optimizer`` names accepted by :class:`DptheoryPrivacyEngine` (``None``/"dpsgd": Opacus's own).
DP_OPTIMIZERS = ("dpsgd", "dicesgd", "d2p2sgd", "d2psgd")


# ============================================================================ accountant
class DptheoryAccountant(IAccountant):
    """Opacus accountant backed by :class:`accounting.accountant.RdpAccountant` (module docstring).

    One accountant accounts one mechanism: DP-SGD steps (``step``, what Opacus's hook calls for a
    plain ``DPOptimizer``), or a DiceSGD run, or a D2P2 run (``step_certified``, called by the hooks
    of :class:`DiceSGDOptimizer` / :class:`D2P2Optimizer`). Mixing them raises: composing a
    hidden-state bound with other mechanisms is not what these accountants certify.
    """

    def __init__(self, orders: Sequence[float] | None = None) -> None:
        self.history: list[tuple[float, float, int]] = []  # Opacus's format: (z, q, count)
        self._rdp = RdpAccountant(orders)
        self._nonprivate = False
        self._certified: dict[str, Any] | None = None
        self._certified_steps: list[list[float]] = []  # runs [z, count]

    @property
    def orders(self) -> np.ndarray:
        return self._rdp.orders

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
        if self.history and self.history[-1][0] == z and self.history[-1][1] == q:
            self.history[-1] = (z, q, self.history[-1][2] + 1)
        else:
            self.history.append((z, q, 1))

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
        self.history = history
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


# ====================================================================== D2P2 accounting
def d2p2_layers(params: Sequence[torch.Tensor], projection_dim: int | None, sigma_a: float | None = None):
    """``[(p_l, sigma_l)]`` of the per-layer projection dptheory.optim.d2p2 uses: ``p_l = min(p, d_l)``,
    ``sigma_l = p_l^(-1/4)`` unless ``sigma_a`` is given; ``p`` defaults to ``max(1, d // 2)``."""
    d = sum(int(p.numel()) for p in params)
    p = max(1, d // 2) if projection_dim is None else int(projection_dim)
    out = []
    for t in params:
        pl = min(p, int(t.numel()))
        out.append((pl, float(sigma_a) if sigma_a is not None else pl ** (-0.25)))
    return out


def d2p2_certified_epsilon(
    *,
    multipliers: Sequence[float],
    counts: Sequence[int] | None = None,
    sample_rate: float,
    delta: float,
    projection: str,
    layers: Sequence[Sequence[float]] | None = None,
    fixed_factor: float | None = None,
    orders: Sequence[float] | np.ndarray | None = None,
) -> tuple[float, float]:
    """Certified ``(epsilon, order)`` of a D2P2 run with per-step multipliers ``multipliers``.

    ``projection="none"`` (D2P-SGD): subsampled Gaussian steps with sensitivity 1. ``"fixed"``:
    multipliers divided by the exact factor ``max_l sigma_max(A_l) / sqrt(p_l)`` of the drawn
    matrices (``fixed_factor``). ``"fresh"``: divided by
    :func:`accounting.projection.layerwise_fresh_factor_x`,
    which holds with probability ``1 - beta`` per run; ``e^eps beta`` is charged to delta exactly as
    :func:`accounting.projection.epsilon_with_failure` does for the single-matrix case.
    """
    from accounting.conversion import rdp_to_epsilon
    from accounting.orders import DEFAULT_ORDERS
    from accounting.projection import epsilon_with_failure, layerwise_fresh_factor_x
    from accounting.rdp import subsampled_gaussian_rdp

    z = np.asarray(multipliers, dtype=float)
    c = np.ones(z.size, dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    if z.size == 0:
        return 0.0, math.nan
    o = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=float)

    def eps_of(factor: float, d: float) -> tuple[float, float | None]:
        curve = subsampled_gaussian_rdp(sample_rate, z / factor, o, counts=c)
        r = rdp_to_epsilon(curve, d, method="improved")
        return float(r.epsilon), (float(r.order) if math.isfinite(r.order) else None)

    if projection == "none":
        e, order = eps_of(1.0, delta)
    elif projection == "fixed":
        if fixed_factor is None:
            raise InvalidParameter("--projection", "fixed projection needs the matrices' factor")
        e, order = eps_of(float(fixed_factor), delta)
    elif projection == "fresh":
        lay = [(int(p), float(s)) for p, s in (layers or ())]
        r = epsilon_with_failure(
            eps_of,
            delta=delta,
            projection="fresh",
            d=1,
            p=1,
            steps=int(c.sum()),
            factor_fn=lambda x: layerwise_fresh_factor_x(lay, x),
        )
        e, order = r.epsilon, r.order
    else:
        raise InvalidParameter("--projection", f"must be fresh, fixed or none (got {projection!r})")
    return float(e), (math.nan if order is None else float(order))


# =========================================================================== optimizers
class _PerSampleOptimizer(DPOptimizer):
    """Shared part: per-sample gradients from ``p.grad_sample``, own noise, certified hooks only."""

    algo = "base"

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        noise_multiplier: float,
        max_grad_norm: float,
        expected_batch_size: int | None,
        loss_reduction: str = "mean",
        generator: torch.Generator | None = None,
        secure_mode: bool = False,
        sample_rate: float,
        dataset_size: int,
        **kwargs: Any,
    ) -> None:
        if secure_mode:
            raise NotImplementedError(f"{type(self).__name__} does not implement Opacus's secure_mode noise")
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected options {sorted(kwargs)}")
        super().__init__(
            optimizer,
            noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm,
            expected_batch_size=expected_batch_size,
            loss_reduction=loss_reduction,
            generator=generator,
            secure_mode=False,
        )
        if not 0 < sample_rate <= 1:
            raise InvalidParameter("--sample-rate", f"must be in (0, 1] (got {sample_rate!r})")
        self.sample_rate = float(sample_rate)
        self.dataset_size = int(dataset_size)
        #: B = q N, the expected batch size the algorithm averages by (float, as dptheory.optim).
        self.batch_size = self.sample_rate * self.dataset_size
        self.t = 0
        self.last_noise: list[torch.Tensor] | None = None

    # soundness: only dptheory's certified accountant may account these optimizers
    def attach_step_hook(self, fn) -> None:
        if getattr(fn, "_dptheory_accountant", None) is None:
            raise TypeError(
                f"{type(self).__name__} must be accounted by dptheory's certified {self.algo} accountant: "
                "set privacy_engine.accountant = DptheoryAccountant() (or use DptheoryPrivacyEngine)"
            )
        super().attach_step_hook(fn)

    def _per_sample(self) -> list[torch.Tensor]:
        gs = []
        for p in self.params:
            g = getattr(p, "grad_sample", None)
            if g is None:
                raise ValueError(
                    "per-sample gradients not found: wrap the model in Opacus's GradSampleModule"
                )
            if isinstance(g, list):
                raise ValueError(
                    f"{type(self).__name__}: gradient accumulation ({len(g)} batches per step) changes the "
                    "sample rate the certified accountant assumes; take one optimizer step per batch"
                )
            if getattr(g, "_dptheory_used", False):
                raise RuntimeError(
                    "step() called twice on the same per-sample gradients; run backward() first"
                )
            gs.append(g.to(p.dtype))
        for p in self.params:
            p.grad_sample._dptheory_used = True
        return gs

    @staticmethod
    def _norms(gs: list[torch.Tensor]) -> torch.Tensor:
        sq = None
        for g in gs:
            s = g.reshape(g.shape[0], -1).pow(2).sum(dim=1)
            sq = s if sq is None else sq + s
        return sq.sqrt()

    def _randn(self, shape, like: torch.Tensor) -> torch.Tensor:
        return torch.randn(shape, generator=self.generator, device=like.device, dtype=like.dtype)

    def pre_step(self, closure=None) -> bool:
        if len(self.params) == 0:
            return True
        self._update(self._per_sample())
        if self.step_hook:
            self.step_hook(self)
        self._is_last_step_skipped = False
        self.t += 1
        return True

    def _update(self, gs: list[torch.Tensor]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def dptheory_mechanism(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def noise_std(self) -> float:  # pragma: no cover - abstract
        """Per-coordinate std of the noise on the averaged update at the current step."""
        raise NotImplementedError

    def state_dict(self):
        sd = dict(self.original_optimizer.state_dict())
        sd["dptheory"] = self._own_state()
        return sd

    def load_state_dict(self, state_dict) -> None:
        sd = dict(state_dict)
        own = sd.pop("dptheory", None)
        self.original_optimizer.load_state_dict(sd)
        if own is not None:
            self._load_own_state(own)

    def _own_state(self) -> dict[str, Any]:
        return {"t": self.t}

    def _load_own_state(self, own: dict[str, Any]) -> None:
        self.t = int(own["t"])


def residual_clip_as_grad_bound(
    c1: float, grad_bound: float | None, residual_clip: float | None
) -> float | None:
    """DiceSGD's residual clip R as the enforced gradient bound G = C1 + R.

    With flat clipping, pre-clipping every per-sample gradient to C1 + R and then to C1 leaves the
    error increment clip(g, C1 + R) - clip(g, C1), of norm <= R: exactly the residual clip of
    ``dptheory.optim`` (issue 10), and the certified accountant's rho = G - C1 = R.
    """
    if residual_clip is None:
        return grad_bound
    if grad_bound is not None:
        raise InvalidParameter("--residual-clip", "give either grad_bound or residual_clip, not both")
    if not (isinstance(residual_clip, int | float) and math.isfinite(residual_clip) and residual_clip >= 0):
        raise InvalidParameter("--residual-clip", f"must be a finite number >= 0 (got {residual_clip!r})")
    return float(c1) + float(residual_clip)


class DiceSGDOptimizer(_PerSampleOptimizer):
    """DiceSGD (DiceSGD paper, Alg. 2) on Opacus's per-sample gradients.

    With the wrapped optimizer ``torch.optim.SGD(lr=eta)`` (no momentum) one step is exactly
    :class:`dptheory.optim.DiceSGD`'s::

        v = (1/B) sum_i clip(g_i, C1) + clip(e, C2);   p.grad = v + w,  w ~ N(0, sigma1^2 I)
        x <- x - eta p.grad;                           e <- e + (1/B) sum_i g_i - v

    with ``C1 = max_grad_norm``, ``sigma1 = z C1 / B`` (z = ``noise_multiplier``, dptheory's
    convention, docs/architecture.md) and ``B = q N``. Any other wrapped optimizer (e.g. Adam) is
    post-processing of ``v + w`` (Alg. 3 for Adam). The error buffer ``e`` (one tensor per
    parameter) is part of ``state_dict()``.

    ``grad_bound=G`` first clips every per-sample gradient to norm G (enforced, so the certified
    accountant's gradient-bound assumption holds by construction); with ``G >= C1`` this only
    changes the error feedback. Without it the certified noise is very large unless C2 is tiny
    (``c2="auto"`` in :meth:`DptheoryPrivacyEngine.make_private_with_epsilon`).
    """

    algo = "dicesgd"

    def __init__(
        self,
        optimizer,
        *,
        c2: float | None = None,
        grad_bound: float | None = None,
        residual_clip: float | None = None,
        **kw,
    ):
        super().__init__(optimizer, **kw)
        self.c1 = float(self.max_grad_norm)
        self.c2 = self.c1 if c2 is None else float(c2)
        if not (self.c1 > 0 and self.c2 > 0):
            raise InvalidParameter("--c2", "C1 (max_grad_norm) and C2 must be > 0")
        grad_bound = residual_clip_as_grad_bound(self.c1, grad_bound, residual_clip)
        if grad_bound is not None and not grad_bound >= self.c1:
            raise InvalidParameter("--grad-bound", f"must be >= C1 = {self.c1:g} (got {grad_bound!r})")
        self.grad_bound = None if grad_bound is None else float(grad_bound)
        self.error = [torch.zeros_like(p) for p in self.params]  # e_0 = 0

    def noise_std(self) -> float:
        return float(self.noise_multiplier) * self.c1 / self.batch_size

    def _update(self, gs: list[torch.Tensor]) -> None:
        b_inv = 1.0 / self.batch_size
        if gs[0].shape[0] == 0:
            clipped = [torch.zeros_like(p) for p in self.params]
            raw = [torch.zeros_like(p) for p in self.params]
        else:
            n = self._norms(gs)
            if self.grad_bound is not None:
                pre = torch.clamp(self.grad_bound / n, max=1.0)
                gs = [torch.einsum("i,i...->i...", pre, g) for g in gs]
                n = torch.minimum(n, torch.full_like(n, self.grad_bound))
            f = torch.clamp(self.c1 / n, max=1.0)
            clipped = [torch.tensordot(f, g, dims=([0], [0])) for g in gs]
            raw = [g.sum(dim=0) for g in gs]
        e_norm = math.sqrt(sum(float(e.pow(2).sum()) for e in self.error))
        ce = 1.0 if e_norm <= self.c2 else self.c2 / e_norm
        std = self.noise_std()
        noise = []
        for p, cl, r, i in zip(self.params, clipped, raw, range(len(self.error)), strict=True):
            v = b_inv * cl + self.error[i] * ce
            w = self._randn(p.shape, p) * std
            p.grad = (v + w).view_as(p)
            self.error[i] = self.error[i] + b_inv * r - v
            noise.append(w)
        self.last_noise = noise

    def dptheory_mechanism(self) -> dict[str, Any]:
        return {
            "algo": "dicesgd",
            "sample_rate": self.sample_rate,
            "dataset_size": self.dataset_size,
            "batch_size": self.batch_size,
            "c1": self.c1,
            "c2": self.c2,
            "grad_bound": self.grad_bound,
        }

    def _own_state(self) -> dict[str, Any]:
        return {"t": self.t, "error": [e.detach().clone() for e in self.error]}

    def _load_own_state(self, own: dict[str, Any]) -> None:
        self.t = int(own["t"])
        self.error = [e.to(p.device, p.dtype).clone() for e, p in zip(own["error"], self.params, strict=True)]


class D2P2Optimizer(_PerSampleOptimizer):
    """D2P2-SGD (Jiang et al., Alg. 1; Alg. 2 with ``projection="none"``) on Opacus's per-sample gradients.

    Exactly :class:`dptheory.optim.D2P2SGD`'s step (per-layer projection, same draw order from
    ``generator``), with the wrapped ``torch.optim.SGD(lr=alpha)``::

        g = (1/B) sum_i g_i / (||g_i|| + gamma);  per tensor l: A_l (d_l x p_l, N(0, sigma_l^2)),
        p.grad = A_l ((1/sqrt(p_l)) A_l^T g_l + eps_l),  eps_l ~ N(0, (z_k / B)^2 I)

    ``noise_multipliers`` is the per-step schedule z_1..z_T (``noise_multiplier`` for a constant
    one); ``optimizer.noise_multiplier`` is the current step's z_k. ``max_grad_norm`` is unused: the
    per-sample normalisation bounds the sensitivity by 1. ``projection="fresh"`` redraws A every
    step, ``"fixed"`` draws it once (its exact factor is certified), ``"none"`` is D2P-SGD.
    """

    algo = "d2p2sgd"

    def __init__(
        self,
        optimizer,
        *,
        noise_multipliers: Sequence[float] | None = None,
        gamma: float = 0.01,
        projection_dim: int | None = None,
        projection: str = "fresh",
        sigma_a: float | None = None,
        **kw,
    ):
        super().__init__(optimizer, **kw)
        if projection not in ("fresh", "fixed", "none"):
            raise InvalidParameter("--projection", f"must be fresh, fixed or none (got {projection!r})")
        if not (gamma > 0 and math.isfinite(gamma)):
            raise InvalidParameter("--gamma", f"must be a finite number > 0 (got {gamma!r})")
        self.gamma = float(gamma)
        self.projection = projection
        self.algo = "d2psgd" if projection == "none" else "d2p2sgd"
        z0 = float(self.noise_multiplier)
        self.schedule = np.asarray([z0] if noise_multipliers is None else noise_multipliers, dtype=float)
        if self.schedule.ndim != 1 or self.schedule.size == 0 or np.any(~(self.schedule > 0)):
            raise InvalidParameter("--noise-multiplier", "the schedule must be a list of numbers > 0")
        self.noise_multiplier = float(self.schedule[0])
        self.layers = d2p2_layers(self.params, projection_dim, sigma_a) if projection != "none" else []
        self.A: list[torch.Tensor] | None = None
        self.fixed_factor: float | None = None
        if projection == "fixed":
            self.A = self._draw_projection()
            self.fixed_factor = max(
                float(torch.linalg.matrix_norm(a.double(), ord=2)) / math.sqrt(pl)
                for a, (pl, _) in zip(self.A, self.layers, strict=True)
            ) * (1.0 + 1e-9)  # singular values to ~1e-15 relative; round the factor up

    def _draw_projection(self) -> list[torch.Tensor]:
        return [
            self._randn((p.numel(), pl), p) * s for p, (pl, s) in zip(self.params, self.layers, strict=True)
        ]

    def z_at(self, t: int) -> float:
        if self.schedule.size == 1:
            return float(self.schedule[0])
        if t >= self.schedule.size:
            raise InvalidParameter("--steps", f"the noise schedule has only {self.schedule.size} steps")
        return float(self.schedule[t])

    def noise_std(self) -> float:
        return self.z_at(self.t) / self.batch_size

    def _update(self, gs: list[torch.Tensor]) -> None:
        self.noise_multiplier = self.z_at(self.t)  # what hooks (and the accountant) see for this step
        b_inv = 1.0 / self.batch_size
        if gs[0].shape[0] == 0:
            g = [torch.zeros_like(p) for p in self.params]
        else:
            f = 1.0 / (self._norms(gs) + self.gamma)
            g = [b_inv * torch.tensordot(f, x, dims=([0], [0])) for x in gs]
        std = self.noise_std()
        noise = []
        if self.projection == "none":
            for p, gl in zip(self.params, g, strict=True):
                e = self._randn(p.shape, p) * std
                p.grad = (gl + e).view_as(p)
                noise.append(e)
        else:
            A = self._draw_projection() if self.projection == "fresh" else self.A
            for p, gl, a in zip(self.params, g, A, strict=True):
                e = self._randn(a.shape[1], p) * std
                proj = a.T @ gl.reshape(-1) / math.sqrt(a.shape[1]) + e
                p.grad = (a @ proj).view_as(p)
                noise.append(e)
        self.last_noise = noise

    def dptheory_mechanism(self) -> dict[str, Any]:
        return {
            "algo": self.algo,
            "sample_rate": self.sample_rate,
            "batch_size": self.batch_size,
            "projection": self.projection,
            "layers": [list(x) for x in self.layers],
            "fixed_factor": self.fixed_factor,
        }

    def _own_state(self) -> dict[str, Any]:
        return {"t": self.t, "A": None if self.A is None else [a.detach().clone() for a in self.A]}

    def _load_own_state(self, own: dict[str, Any]) -> None:
        self.t = int(own["t"])
        if own.get("A") is not None:
            self.A = [a.to(p.device, p.dtype) for a, p in zip(own["A"], self.params, strict=True)]


_OPTIMIZER_CLASSES = {"dicesgd": DiceSGDOptimizer, "d2p2sgd": D2P2Optimizer, "d2psgd": D2P2Optimizer}


# ================================================================================ lint
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


# ============================================================================ engine
class DptheoryPrivacyEngine(PrivacyEngine):
    """Opacus ``PrivacyEngine`` with a :class:`DptheoryAccountant`, certified calibration,
    dptheory's optimizers (``dp_optimizer=...``) and the setup lint.

    ``make_private(..., dp_optimizer="dicesgd", c2=..., grad_bound=...)`` or
    ``dp_optimizer="d2p2sgd"`` / ``"d2psgd"`` (``schedule``, ``steps``, ``projection_dim``,
    ``projection``, ``gamma``) builds the matching optimizer; ``dp_optimizer=None`` keeps Opacus's
    ``DPOptimizer`` (DP-SGD). ``lint="error"`` (default) refuses a setup the accountant does not
    cover, ``"warn"`` only warns, ``"off"`` skips the check.
    """

    def __init__(self, *, secure_mode: bool = False, orders: Sequence[float] | None = None) -> None:
        super().__init__(accountant="rdp", secure_mode=secure_mode)
        self.accountant = DptheoryAccountant(orders)
        self._dp_optimizer: str | None = None
        self._dp_options: dict[str, Any] = {}

    def _prepare_optimizer(self, *, optimizer, **kwargs):
        if self._dp_optimizer in (None, "dpsgd"):
            return super()._prepare_optimizer(optimizer=optimizer, **kwargs)
        if isinstance(optimizer, DPOptimizer):
            optimizer = optimizer.original_optimizer
        for k in ("distributed", "clipping", "grad_sample_mode"):
            v = kwargs.pop(k, None)
            if k == "distributed" and v:
                raise NotImplementedError(f"{self._dp_optimizer}: distributed training is not supported")
            if k == "clipping" and v not in (None, "flat"):
                raise NotImplementedError(f"{self._dp_optimizer}: only flat clipping is supported")
            if k == "grad_sample_mode" and v not in (None, "hooks", "functorch", "ew"):
                raise NotImplementedError(f"{self._dp_optimizer}: grad_sample_mode={v!r} is not supported")
        gen = kwargs.pop("noise_generator", None)
        cls = _OPTIMIZER_CLASSES[self._dp_optimizer]
        opts = dict(self._dp_options)
        if self._dp_optimizer == "d2psgd":
            opts["projection"] = "none"
        return cls(optimizer, generator=gen, secure_mode=self.secure_mode, **kwargs, **opts)

    def make_private(
        self,
        *,
        module,
        optimizer,
        data_loader,
        noise_multiplier: float,
        max_grad_norm: float,
        dp_optimizer: str | None = None,
        lint: str = "error",
        criterion=None,
        poisson_sampling: bool = True,
        loss_reduction: str = "mean",
        c2: float | None = None,
        grad_bound: float | None = None,
        residual_clip: float | None = None,
        schedule: str = "constant",
        steps: int | None = None,
        projection_dim: int | None = None,
        projection: str = "fresh",
        gamma: float = 0.01,
        **kwargs,
    ):
        """Opacus's ``make_private`` plus ``dp_optimizer`` and ``lint`` (class docstring)."""
        if dp_optimizer not in (None, *DP_OPTIMIZERS):
            raise InvalidParameter(
                "--algo", f"dp_optimizer must be one of {DP_OPTIMIZERS} (got {dp_optimizer!r})"
            )
        if lint not in ("error", "warn", "off"):
            raise InvalidParameter("lint", f"must be error, warn or off (got {lint!r})")
        if lint != "off":
            lint_setup(
                data_loader,
                resampled=poisson_sampling,
                criterion=criterion,
                loss_reduction=loss_reduction,
                strict=lint == "error",
            )
        n = len(data_loader.dataset)
        q = 1.0 / len(data_loader)
        self._dp_optimizer = dp_optimizer
        self._dp_options = {}
        if dp_optimizer not in (None, "dpsgd"):
            self._dp_options = dict(sample_rate=q, dataset_size=n)
            if dp_optimizer == "dicesgd":
                grad_bound = residual_clip_as_grad_bound(max_grad_norm, grad_bound, residual_clip)
                self._dp_options.update(c2=c2, grad_bound=grad_bound)
            else:
                zs = None
                if schedule != "constant":
                    if steps is None:
                        raise InvalidParameter("--steps", f"schedule {schedule!r} needs the number of steps")
                    from accounting.schedules import noise_multipliers

                    zs = noise_multipliers(schedule, float(noise_multiplier), int(steps)).tolist()
                self._dp_options.update(
                    noise_multipliers=zs,
                    gamma=gamma,
                    projection_dim=projection_dim,
                    projection=projection,
                )
        if criterion is not None:
            kwargs["criterion"] = criterion
        try:
            return super().make_private(
                module=module,
                optimizer=optimizer,
                data_loader=data_loader,
                noise_multiplier=noise_multiplier,
                max_grad_norm=max_grad_norm,
                poisson_sampling=poisson_sampling,
                loss_reduction=loss_reduction,
                **kwargs,
            )
        finally:
            self._dp_optimizer, self._dp_options = None, {}

    def make_private_with_epsilon(
        self,
        *,
        module,
        optimizer,
        data_loader,
        target_epsilon: float,
        target_delta: float,
        epochs: int | None = None,
        steps: int | None = None,
        max_grad_norm: float,
        dp_optimizer: str | None = None,
        c2: float | str | None = None,
        grad_bound: float | None = None,
        residual_clip: float | None = None,
        schedule: str | None = None,
        projection_dim: int | None = None,
        projection: str = "fresh",
        **kwargs,
    ):
        """Calibrate with dptheory's certified accountant, then :meth:`make_private`.

        ``epochs`` (Opacus's convention: ``len(data_loader)`` steps each) or ``steps``. DiceSGD:
        ``c2`` defaults to C1; ``c2="auto"`` picks the largest C2 whose certified noise is within 1.1x
        DP-SGD's. D2P2: ``schedule`` defaults to Table 3's ``inv-sqrt-k`` (``constant`` for DP2-SGD-like
        runs). Returns ``(module, optimizer, data_loader)`` like Opacus; ``optimizer.noise_multiplier``
        is the calibrated z and ``optimizer.privacy_report`` says how it was certified.
        """
        if len(self.accountant) > 0:
            warnings.warn(
                "make_private_with_epsilon: the accountant already holds steps; the calibrated noise "
                "assumes a fresh budget",
                stacklevel=2,
            )
        n = len(data_loader.dataset)
        q = 1.0 / len(data_loader)
        if (epochs is None) == (steps is None):
            raise InvalidParameter("--steps", "give exactly one of epochs or steps")
        t = int(steps) if steps is not None else int(epochs) * len(data_loader)
        algo = dp_optimizer or "dpsgd"
        extra: dict[str, Any] = {}
        if algo in ("d2p2sgd", "d2psgd"):
            schedule = schedule or "inv-sqrt-k"
            params = [p for p in module.parameters() if p.requires_grad]
            report = calibrate_d2p2(
                eps=target_epsilon,
                delta=target_delta,
                sample_rate=q,
                dataset_size=n,
                steps=t,
                schedule=schedule,
                projection="none" if algo == "d2psgd" else projection,
                layers=d2p2_layers(params, projection_dim) if algo == "d2p2sgd" else [],
                orders=self.accountant.orders,
            )
            if algo == "d2p2sgd" and projection == "fixed":
                raise NotImplementedError(
                    "calibration with a fixed projection needs the drawn matrices; calibrate fresh, or call "
                    "make_private with a noise multiplier and read get_epsilon"
                )
            extra = dict(schedule=schedule, steps=t, projection_dim=projection_dim, projection=projection)
        else:
            from dptheory import api

            opts: dict[str, Any] = dict(sample_rate=q, steps=t, dataset_size=n, batch_size=q * n)
            if algo == "dicesgd":
                grad_bound = residual_clip_as_grad_bound(max_grad_norm, grad_bound, residual_clip)
                opts.update(c1=max_grad_norm, c2=max_grad_norm if c2 is None else c2, grad_bound=grad_bound)
            else:
                opts.update(c1=max_grad_norm)
            report = api.calibrate(
                eps=target_epsilon,
                delta=target_delta,
                algo=algo,
                mode="certified",
                orders=[float(o) for o in self.accountant.orders],
                **opts,
            )
            if algo == "dicesgd":
                extra = dict(c2=float(report.parameters["c2"]), grad_bound=grad_bound)
        out = self.make_private(
            module=module,
            optimizer=optimizer,
            data_loader=data_loader,
            noise_multiplier=float(report.noise_multiplier),
            max_grad_norm=max_grad_norm,
            dp_optimizer=None if algo == "dpsgd" else algo,
            **extra,
            **kwargs,
        )
        out[1].privacy_report = report
        return out


@dataclass(frozen=True)
class D2P2Calibration:
    """What :func:`calibrate_d2p2` certified (the fields :func:`lint_setup` and reports read)."""

    algo: str
    noise_multiplier: float
    epsilon: float
    delta: float
    order: float
    sample_rate: float
    steps: int
    schedule: str
    projection: str
    noise_std: float
    parameters: dict[str, Any]
    calibration: dict[str, Any]


def calibrate_d2p2(
    *,
    eps: float,
    delta: float,
    sample_rate: float,
    dataset_size: int,
    steps: int,
    schedule: str,
    projection: str,
    layers: Sequence[tuple[int, float]],
    orders: Sequence[float] | None = None,
) -> D2P2Calibration:
    """Smallest base z whose per-layer certified D2P2 epsilon (:func:`d2p2_certified_epsilon`) is <= eps,
    by the same Brent calibration as :func:`dptheory.calibrate` (result always meets the target)."""
    from accounting.calibration import calibrate_decreasing
    from accounting.schedules import noise_multipliers
    from dptheory.api import CALIBRATION_RTOL

    def eps_of(z: float) -> float:
        zs = noise_multipliers(schedule, z, int(steps))
        return d2p2_certified_epsilon(
            multipliers=zs,
            sample_rate=sample_rate,
            delta=delta,
            projection=projection,
            layers=layers,
            orders=orders,
        )[0]

    res = calibrate_decreasing(eps_of, eps, option="--eps", rtol=CALIBRATION_RTOL)
    z = float(res.value)
    zs = noise_multipliers(schedule, z, int(steps))
    e, order = d2p2_certified_epsilon(
        multipliers=zs,
        sample_rate=sample_rate,
        delta=delta,
        projection=projection,
        layers=layers,
        orders=orders,
    )
    if not e <= eps:
        from accounting.errors import UnreachableTarget

        raise UnreachableTarget("--eps", f"calibration could not certify eps <= {eps:g} (got {e:.6g})")
    b = sample_rate * dataset_size
    return D2P2Calibration(
        algo="d2psgd" if projection == "none" else "d2p2sgd",
        noise_multiplier=z,
        epsilon=e,
        delta=delta,
        order=order,
        sample_rate=sample_rate,
        steps=int(steps),
        schedule=schedule,
        projection=projection,
        noise_std=z / b,
        parameters={"batch_size": b, "dataset_size": dataset_size, "layers": [list(x) for x in layers]},
        calibration={"iterations": getattr(res, "iterations", None), "rtol": CALIBRATION_RTOL},
    )


def make_private_with_epsilon(privacy_engine: PrivacyEngine, **kwargs: Any):
    """:meth:`DptheoryPrivacyEngine.make_private_with_epsilon` for any Opacus ``PrivacyEngine`` (DP-SGD):
    swaps in a :class:`DptheoryAccountant` when the engine has another accountant."""
    if isinstance(privacy_engine, DptheoryPrivacyEngine):
        return privacy_engine.make_private_with_epsilon(**kwargs)
    if kwargs.get("dp_optimizer") not in (None, "dpsgd"):
        raise InvalidParameter("--algo", "DiceSGD / D2P2 need DptheoryPrivacyEngine")
    if not isinstance(privacy_engine.accountant, DptheoryAccountant):
        if len(privacy_engine.accountant) > 0:
            raise ValueError("the engine's accountant already holds steps; it cannot be replaced")
        privacy_engine.accountant = DptheoryAccountant()
    helper = DptheoryPrivacyEngine.__new__(DptheoryPrivacyEngine)
    helper.__dict__.update(privacy_engine.__dict__)
    helper._dp_optimizer, helper._dp_options = None, {}
    out = DptheoryPrivacyEngine.make_private_with_epsilon(helper, **kwargs)
    privacy_engine.dataset = helper.dataset
    return out
