"""DiceSGD (Zhang et al., arXiv 2311.14632, Alg. 2, Theorem 3.7 / A.3, App. A.2).

Mechanism: ``v_t = (1/B) sum_{i in B_t} clip(g_i, C1) + clip(e_t, C2)``,
``x_{t+1} = x_t - eta (v_t + w_t)`` with ``w_t ~ N(0, sigma1^2 I)`` on the *averaged* update, and the
hidden error state ``e_{t+1} = e_t + (1/B) sum_{i in B_t} g_i - v_t``. The per-example sensitivity
of the averaged clipped gradient is C1/B, so ``z = sigma1 B / C1`` and ``noise_std = sigma1``.

claimed -- Theorem 3.7 read literally
    ``sigma1^2 >= 32 T G~ log(1/delta) / (N^2 eps^2)``, inverted for eps:
    ``eps = sqrt(32 T G~ log(1/delta)) / (N sigma1)``.
    The rendering of ``G~`` is "C 1 2 + 2 min { C 2 , G' 2 }". Our reading (default,
    ``reading="c2"``): ``G~ = C1^2 + 2 min{C2^2, G'^2} = C1^2 + 2 min{C2, G'}^2`` -- the subscript
    reading, consistent with the paper's remark that DiceSGD needs only "a constant
    multiplicative factor" more noise than DPSGD. The proof (App. A.2, last display) instead
    reaches ``min{C2^2 B^2, G'^2}`` and then "bounds C2 by C2 <= C/B", i.e. the rendered "C 2" is
    the square of the theorem's free constant C >= B C2; ``reading="proof"`` evaluates that with the
    smallest admissible C = B C2: ``G~ = C1^2 + 2 min{B^2 C2^2, G'^2}``. Both are computable
    (:func:`theorem37_epsilon`); the report shows the alternative.
    G' (Thm 3.6: ``max{0, G + sigma - C1}``) bounds ``||g_i - clip(g_i, C1)||``; with a per-example
    gradient-norm bound ``--grad-bound G`` we use ``G' = max(0, G - C1)``. Without it ``min{C2, G'}``
    is taken as C2 -- the only bound the theorem offers when G' "can be arbitrarily large".
    Conditions checked (violations become warnings): ``0 < C1 <= C2`` (the theorem's
    ``C1 <= C2 <= C/B`` with C free), ``B/N <= 1/5``, and ``sigma1 > 8 C1/B`` (z > 8), which
    the proof's use of Mironov et al. (2019, Thm 11) (Lemma A.10, "sigma > 4C" at sensitivity
    2C1/B) needs.

certified
    ``accounting.hidden_state.dicesgd_certified_rdp`` (error-feedback hidden state; derivation in
    docs/hidden-state.md), converted to (eps, delta). If that module is missing, an explicit
    ``--mode certified`` raises NotCertified and the default mode falls back to claimed,
    labelled "claimed (not certified)" with a warning.
"""

from __future__ import annotations

import math

from accounting import validate
from accounting.algorithms.base import (
    CLAIMED_NOT_CERTIFIED,
    MODES,
    Algorithm,
    Default,
    EpsilonValue,
    PrivacyParams,
    check_choice,
    curve_epsilon,
    orders_of,
)
from accounting.errors import InvalidParameter, NotCertified

_SRC = "DiceSGD paper Sec. 4 / Table 2: CIFAR-10, ViT-small fine-tuning"
READINGS = ("c2", "proof")
#: Default ``--max-noise-ratio`` of ``--c2 auto``.
DEFAULT_MAX_NOISE_RATIO = 1.1


def theorem37_gtilde(
    c1: float,
    c2: float,
    *,
    grad_bound: float | None = None,
    batch_size: float | None = None,
    reading: str = "c2",
) -> float:
    """``G~`` of Theorem 3.7 under the chosen reading (module docstring)."""
    check_choice("reading", reading, READINGS)
    if reading == "c2":
        cap = c2
    else:
        if batch_size is None:
            raise InvalidParameter("--batch-size", "the 'proof' reading of Theorem 3.7 needs B")
        cap = batch_size * c2
    if grad_bound is not None:
        cap = min(cap, max(0.0, grad_bound - c1))
    return c1 * c1 + 2.0 * cap * cap


def theorem37_epsilon(
    *,
    noise_multiplier: float,
    delta: float,
    steps: int,
    dataset_size: int,
    batch_size: float,
    c1: float,
    c2: float,
    grad_bound: float | None = None,
    reading: str = "c2",
) -> float:
    """eps from Theorem 3.7 inverted: ``sqrt(32 T G~ log(1/delta)) / (N sigma1)``, sigma1 = z C1 / B."""
    sigma1 = noise_multiplier * c1 / batch_size
    g = theorem37_gtilde(c1, c2, grad_bound=grad_bound, batch_size=batch_size, reading=reading)
    return math.sqrt(32.0 * steps * g * math.log(1.0 / delta)) / (dataset_size * sigma1)


def theorem37_noise_multiplier(
    *,
    eps: float,
    delta: float,
    steps: int,
    dataset_size: int,
    batch_size: float,
    c1: float,
    c2: float,
    grad_bound: float | None = None,
    reading: str = "c2",
) -> float:
    """The z that Theorem 3.7 prescribes for (eps, delta): ``sigma1 B / C1`` at equality."""
    g = theorem37_gtilde(c1, c2, grad_bound=grad_bound, batch_size=batch_size, reading=reading)
    sigma1 = math.sqrt(32.0 * steps * g * math.log(1.0 / delta)) / (dataset_size * eps)
    return sigma1 * batch_size / c1


def hidden_state_module():
    """``accounting.hidden_state`` if present, else None (certified DiceSGD then unavailable)."""
    try:
        from accounting import hidden_state
    except ImportError:
        return None
    if not hasattr(hidden_state, "dicesgd_certified_rdp"):
        return None
    return hidden_state


class DiceSGD(Algorithm):
    name = "dicesgd"
    title = "DiceSGD (clipped error feedback)"
    paper = "Zhang et al., arXiv 2311.14632, Alg. 2"
    unused_options = (
        "schedule",
        "schedule_values",
        "projection_dim",
        "model_dim",
        "projection",
        "clients",
        "tau",
        "rounds",
    )
    shown_parameters = ("c1", "c2", "grad_bound")
    claimed_accountant = "Theorem 3.7 closed form"

    def defaults(self) -> dict[str, Default]:
        return {
            "dataset_size": Default(50_000, _SRC + " (N = 50000)"),
            "batch_size": Default(1000, _SRC + " (B = 1000)"),
            "epochs": Default(3, _SRC + " (3 epochs)"),
            "c1": Default(1.0, _SRC + " (C1 = C2 = C = 1.0)"),
            "c2": Default(1.0, _SRC + " (C1 = C2 = C = 1.0)"),
        }

    def available_modes(self) -> tuple[str, ...]:
        return MODES if hidden_state_module() is not None else ("claimed",)

    def choose_mode(self, mode: str | None) -> tuple[str, str, tuple[str, ...]]:
        certified_ok = hidden_state_module() is not None
        if mode is None:
            if certified_ok:
                return "certified", "certified", ()
            return (
                "claimed",
                CLAIMED_NOT_CERTIFIED,
                (
                    "no certified accountant for DiceSGD's hidden error state is available "
                    "(accounting.hidden_state is missing); reporting Theorem 3.7's claimed number, "
                    "which is not a certified upper bound",
                ),
            )
        check_choice("--mode", mode, MODES)
        if mode == "certified" and not certified_ok:
            raise NotCertified(
                "--mode",
                "certified accounting for dicesgd is not available (accounting.hidden_state is missing); "
                "use --mode claimed for Theorem 3.7's number",
            )
        return mode, mode, ()

    def _resolve_specific(self, p, d, assumed, warns):
        c1 = validate.positive("--c1", self._take(p, "c1", d, assumed))
        c2 = p.c2
        if isinstance(c2, str):
            raise InvalidParameter("--c2", "'auto' must be resolved before accounting (dptheory.api does it)")
        if c2 is None:
            c2 = self._take(p, "c2", d, assumed)
        c2 = validate.positive("--c2", c2)
        g = p.grad_bound
        if g is not None:
            g = validate.positive("--grad-bound", g)
        return p.with_(c1=c1, c2=c2, grad_bound=g)

    def noise_std(self, p: PrivacyParams) -> float | None:
        return float(p.noise_multiplier) * float(p.c1) / float(p.batch_size)

    def _epsilon_claimed(self, p: PrivacyParams, accountant: str) -> EpsilonValue:
        if accountant == "pld":
            raise InvalidParameter(
                "--accountant",
                "pld is not available for dicesgd because its claimed number is Theorem 3.7's closed "
                "form and its certified number is a hidden-state RDP bound with no dp-accounting event",
            )
        kw = dict(
            noise_multiplier=p.noise_multiplier,
            delta=p.delta,
            steps=p.steps,
            dataset_size=p.dataset_size,
            batch_size=p.batch_size,
            c1=p.c1,
            c2=p.c2,
            grad_bound=p.grad_bound,
        )
        eps = theorem37_epsilon(**kw, reading="c2")
        alt = theorem37_epsilon(**kw, reading="proof")
        g = theorem37_gtilde(p.c1, p.c2, grad_bound=p.grad_bound)
        gp = (
            "C2 (no --grad-bound)"
            if p.grad_bound is None
            else f"G' = max(0, G - C1) = {max(0.0, p.grad_bound - p.c1):g}"
        )
        notes = (
            f"claimed: Theorem 3.7 read as sigma1^2 >= 32 T G~ log(1/delta)/(N^2 eps^2), "
            f"G~ = C1^2 + 2 min{{C2, G'}}^2 = {g:.6g} with min{{C2, G'}} from {gp}",
            f"alternative reading (proof's last step, C = B C2): G~ = C1^2 + 2 min{{B^2 C2^2, G'^2}} "
            f"gives eps = {alt:.6g}",
        )
        warns = []
        if not p.c1 <= p.c2:
            warns.append(f"Theorem 3.7 requires 0 < C1 <= C2 (got C1 = {p.c1:g}, C2 = {p.c2:g})")
        if p.sample_rate > 0.2:
            warns.append(f"Theorem 3.7 requires B/N <= 1/5 (got {p.sample_rate:.4g})")
        if p.noise_multiplier <= 8:
            warns.append(
                f"the proof of Theorem 3.7 applies Mironov et al. (2019) Thm 11, which needs sigma1 > 8 C1/B "
                f"(z > 8); here z = {p.noise_multiplier:.4g}"
            )
        return EpsilonValue(eps, None, notes, tuple(warns))

    def _epsilon_certified(self, p: PrivacyParams, accountant: str) -> EpsilonValue:
        hs = hidden_state_module()
        if hs is None:
            raise NotCertified("--mode", "certified accounting for dicesgd is not available")
        if accountant == "pld":
            raise InvalidParameter(
                "--accountant",
                "pld is not available for dicesgd because the hidden-state bound is an RDP curve "
                "with no dp-accounting event; use --accountant rdp",
            )
        curve = hs.dicesgd_certified_rdp(
            sample_rate=p.sample_rate,
            noise_multiplier=p.noise_multiplier,
            steps=p.steps,
            c1=p.c1,
            c2=p.c2,
            batch_size=p.batch_size,
            grad_bound=p.grad_bound,
            orders=orders_of(p),
        )
        v = curve_epsilon(curve, p.delta, p.conversion)
        note = (
            "certified: error-feedback hidden-state RDP bound (accounting.hidden_state, docs/hidden-state.md)"
            + ("" if p.grad_bound is None else f" with per-example gradient bound G = {p.grad_bound:g}"),
        )
        if p.grad_bound is None:
            ratio = 2 * p.c2 * p.batch_size / p.c1
            note = note + (
                "why so large: without --grad-bound one example can shift clip(e_t, C2) by up to "
                f"2 C2 per step, {ratio:.4g}x its clipped-gradient sensitivity C1/B; audits show this "
                "shift is real (dptheory audit --algo dicesgd ...). A per-example gradient bound "
                "(--grad-bound G) certifies far less noise",
            )
        if p.grad_bound is not None and p.grad_bound > p.c1 and p.conversion == "improved":
            # With G > C1 the inclusion cap (docs/hidden-state.md, "Known looseness") is often much
            # tighter: ignore xi' after k inclusions, pay e^eps P[Bin(T, q) > k] in delta. Both
            # numbers are certified; report the smaller, and say which one it is.
            capped = hs.dicesgd_certified_epsilon_capped(
                delta=p.delta,
                sample_rate=p.sample_rate,
                noise_multiplier=p.noise_multiplier,
                steps=p.steps,
                c1=p.c1,
                c2=p.c2,
                batch_size=p.batch_size,
                grad_bound=p.grad_bound,
                orders=orders_of(p),
            )
            if capped["cap"] is not None and capped["epsilon"] < v.epsilon:
                note = note + (
                    f"inclusion cap k = {capped['cap']}: RDP at delta = {capped['delta_rdp']:.3g} plus "
                    f"e^eps P[Bin(T, q) > k] = e^eps {capped['beta']:.3g} (docs/hidden-state.md)",
                )
                return EpsilonValue(capped["epsilon"], None, note, v.warnings)
        return EpsilonValue(v.epsilon, v.order, note, v.warnings)

    def assumptions(self, p: PrivacyParams, mode: str) -> list[str]:
        return [
            "adjacency: add/remove one example",
            "Poisson sampling with rate q = B/N each step "
            "(the paper draws minibatches; not covered otherwise)",
            "noise w ~ N(0, sigma1^2 I) on the averaged update v_t, sigma1 = z C1 / B (noise_std)",
            "e_t is never released (only x_t is)",
        ]


def auto_c2(p: PrivacyParams, *, budget_noise_multiplier: float, max_noise_ratio: float) -> float:
    """``--c2 auto``: the largest C2 whose certified noise is within ``max_noise_ratio`` x DP-SGD's.

    ``p`` must be resolved (q, T, B, C1 set). Uses ``accounting.hidden_state.largest_c2`` with the
    DP-SGD noise ``budget_noise_multiplier``: at noise ``max_noise_ratio * budget`` DiceSGD's
    certified eps is <= DP-SGD's eps at ``budget``. Returns a finite C2 (when every C2 qualifies
    the error feedback never changes the bound and C1's value is returned).
    """
    hs = hidden_state_module()
    if hs is None or not hasattr(hs, "largest_c2"):
        raise NotCertified("--c2", "'auto' needs the certified DiceSGD accountant (accounting.hidden_state)")
    c2 = hs.largest_c2(
        noise_multiplier=budget_noise_multiplier,
        delta=p.delta,
        sample_rate=p.sample_rate,
        steps=p.steps,
        c1=p.c1,
        batch_size=p.batch_size,
        grad_bound=p.grad_bound,
        max_noise_ratio=max_noise_ratio,
        orders=orders_of(p),
    )
    if not math.isfinite(c2):
        if p.grad_bound is not None and p.grad_bound > p.c1:
            a = (p.grad_bound - p.c1) / p.batch_size
            return max(p.c1, (p.steps - 1) * a / 2.0)
        return p.c1
    return float(c2)
