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
    docs/hidden-state.md), converted to (eps, delta); with a residual bound also the flush and
    inclusion-cap regimes and the conservation-law bounds (docs/hidden-state.md K1-K7 and its
    dominating pair C1-C5; the switch
    ``accounting.hidden_state_conservation.left_out()`` leaves it out inside a block). The
    smallest is reported (:meth:`DiceSGD._epsilon_certified`).
"""

from __future__ import annotations

import math

from accounting import validate
from accounting.algorithms.base import (
    Algorithm,
    Default,
    EpsilonValue,
    PrivacyParams,
    check_choice,
    curve_epsilon,
    orders_of,
    result_epsilon,
)
from accounting.errors import InvalidParameter
from accounting.printed import UP, fmt

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


def _p_fail_text(flush: dict) -> str:
    if flush["k_max"] is None:
        return "P(E^c) = 0 (rho = 0)"
    if flush["p_fail"] == 0.0:
        return "P(E^c) = 0 or below 1e-300 (covered by the 1e-12 cut of delta_RDP)"
    return f"P(E^c) <= {fmt(flush['p_fail'], UP, 3)}"


#: The accountant shown when the conservation-pair regime gives the number: not an RDP conversion.
PAIR_ACCOUNTANT = "dominating pair ((eps, delta) of a one-dimensional pair; no Renyi order)"

#: What the conservation regime assumes beyond the mechanism (docs/hidden-state.md, "Assumptions of
#: the conservation regime"); printed with its number.
_CONSERVATION_ASSUMPTIONS = (
    "conservation regime assumes Poisson sampling (a fixed-size or shuffled batch sampler is not covered)",
    "conservation regime assumes one constant noise multiplier for all T steps",
    "conservation regime assumes the other examples' gradients depend only on the iterate x_t and on "
    "randomness independent of the differing example (no batch-norm-style coupling between examples, "
    "nothing computed from the error state e_t)",
    "conservation regime assumes only the iterates are released: a checkpoint or state_dict() holding the "
    "error buffer e_t is not covered",
    "conservation regime assumes the residual bound rho holds at every step: enforced by --residual-clip "
    "or by pre-clipping every per-example gradient to G (the Opacus DiceSGD optimizer's grad_bound does); "
    "dptheory.optim's DiceSGD with --grad-bound only assumes it",
)


def _gamma(p: PrivacyParams) -> float:
    return 0.01 if p.gamma is None else float(p.gamma)


def residual_bound(p: PrivacyParams) -> float | None:
    """rho for resolved params: a bound on every ``||r_i||`` (None without --grad-bound/--residual-clip)."""
    from accounting.hidden_state import residual_norm_bound

    return residual_norm_bound(
        c1=p.c1,
        grad_bound=p.grad_bound,
        clip_mode=p.clip_mode or "flat",
        gamma=_gamma(p),
        residual_clip=p.residual_clip,
    )


def theorem37_inputs(p: PrivacyParams) -> dict:
    """The keyword arguments of :func:`theorem37_epsilon` read from resolved parameters."""
    return dict(
        noise_multiplier=p.noise_multiplier,
        delta=p.delta,
        steps=p.steps,
        dataset_size=p.dataset_size,
        batch_size=p.batch_size,
        c1=p.c1,
        c2=p.c2,
        grad_bound=p.grad_bound,
    )


class DiceSGD(Algorithm):
    name = "dicesgd"
    title = "DiceSGD (clipped error feedback)"
    paper = "Zhang et al., arXiv 2311.14632, Alg. 2"
    unused_options = (
        "evaluation",
        "schedule",
        "schedule_values",
        "projection_dim",
        "model_dim",
        "projection",
        "clients",
        "tau",
        "rounds",
        "schedule_rho",
        "projection_sigma_max",
    )
    shown_parameters = ("c1", "c2", "grad_bound", "residual_clip", "clip_mode")
    claimed_accountant = "Theorem 3.7 closed form"

    def defaults(self) -> dict[str, Default]:
        return {
            "dataset_size": Default(50_000, _SRC + " (N = 50000)"),
            "batch_size": Default(1000, _SRC + " (B = 1000)"),
            "epochs": Default(3, _SRC + " (3 epochs)"),
            "c1": Default(1.0, _SRC + " (C1 = C2 = C = 1.0)"),
            "c2": Default(1.0, _SRC + " (C1 = C2 = C = 1.0)"),
        }

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
        r = p.residual_clip
        if r is not None:
            r = validate.positive("--residual-clip", r)
        mode = p.clip_mode
        if mode is not None:
            check_choice("--clip-mode", mode, ("flat", "automatic"))
        gamma = p.gamma
        if gamma is not None:
            if mode != "automatic":
                raise InvalidParameter("--gamma", "only applies with --clip-mode automatic")
            gamma = validate.positive("--gamma", gamma)
        return p.with_(c1=c1, c2=c2, grad_bound=g, residual_clip=r, clip_mode=mode, gamma=gamma)

    def noise_std(self, p: PrivacyParams) -> float | None:
        return float(p.noise_multiplier) * float(p.c1) / float(p.batch_size)

    def _epsilon_claimed(self, p: PrivacyParams, accountant: str) -> EpsilonValue:
        if accountant == "pld":
            raise InvalidParameter(
                "--accountant",
                "pld is not available for dicesgd because its claimed number is Theorem 3.7's closed "
                "form and its certified number is a hidden-state RDP bound with no dp-accounting event",
            )
        kw = theorem37_inputs(p)
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
        """The smallest of the sound certified bounds (docs/hidden-state.md), with its regime.

        Candidates: ``flush`` (DP-SGD at ``z C1/(C1 + rho)`` on the event E, plus P(E^c) in delta;
        needs rho, i.e. a gradient bound or a residual clip, and P(E^c) < delta), ``hidden-state-rdp``
        (the per-step hidden-state RDP bound, always available) and ``inclusion-cap`` (rho > 0 and the
        improved conversion), and ``conservation`` and ``conservation-pair`` (rho known; left out only
        inside ``accounting.hidden_state_conservation.left_out()``; docs/hidden-state.md, K1-K7 and
        C1-C5: the same budget through RDP and through a one-dimensional dominating pair;
        constant z, which this class guarantees: it takes no noise schedule). Each is a
        valid (eps, delta) statement, so their minimum is too, and calibration, which bisects this
        function, uses the same minimum.
        """
        from accounting import hidden_state as hs
        from accounting import hidden_state_conservation as hsc
        from accounting import hidden_state_dominating as hsd

        if accountant == "pld":
            raise InvalidParameter(
                "--accountant",
                "pld is not available for dicesgd because the hidden-state bound is an RDP curve "
                "with no dp-accounting event; use --accountant rdp",
            )
        rho = residual_bound(p)
        # The older bounds read the residual only through max(0, G - C1): an equivalent flat gradient
        # bound C1 + rho carries any clipping mode / residual clip into them.
        g_eff = None if rho is None else p.c1 + rho
        orders = orders_of(p)
        curve = hs.dicesgd_certified_rdp(
            sample_rate=p.sample_rate,
            noise_multiplier=p.noise_multiplier,
            steps=p.steps,
            c1=p.c1,
            c2=p.c2,
            batch_size=p.batch_size,
            grad_bound=g_eff,
            orders=orders,
        )
        v = curve_epsilon(curve, p.delta, p.conversion)
        regimes = {"hidden-state-rdp": v.epsilon}
        best = ("hidden-state-rdp", v.epsilon, v.order, v.warnings)
        note = (
            "certified: error-feedback hidden-state RDP bound "
            "(accounting.hidden_state, docs/hidden-state.md)",
        )
        if rho is None:
            ratio = 2 * p.c2 * p.batch_size / p.c1
            note = note + (
                "why so large: without --grad-bound or --residual-clip one example can shift clip(e_t, C2) "
                f"by up to 2 C2 per step, {ratio:.4g}x its clipped-gradient sensitivity C1/B; audits show "
                "this shift is real (dptheory audit --algo dicesgd ...). A per-example gradient bound "
                "(--grad-bound G) or the residual clip (--residual-clip R) certifies far less noise",
            )
        details: dict = {"rho": rho, "regimes": regimes, "p_fail": None}
        if rho is not None and rho > 0 and p.conversion == "improved":
            capped = hs.dicesgd_certified_epsilon_capped(
                delta=p.delta,
                sample_rate=p.sample_rate,
                noise_multiplier=p.noise_multiplier,
                steps=p.steps,
                c1=p.c1,
                c2=p.c2,
                batch_size=p.batch_size,
                grad_bound=g_eff,
                orders=orders,
            )
            if capped["cap"] is not None:
                regimes["inclusion-cap"] = capped["epsilon"]
                details["inclusion_cap"] = {"k": capped["cap"], "beta": capped["beta"]}
                if capped["epsilon"] < best[1]:
                    best = ("inclusion-cap", capped["epsilon"], None, v.warnings)
        flush = None
        if rho is not None:
            flush = hs.dicesgd_flush_epsilon(
                delta=p.delta,
                sample_rate=p.sample_rate,
                noise_multiplier=p.noise_multiplier,
                steps=p.steps,
                c1=p.c1,
                c2=p.c2,
                batch_size=p.batch_size,
                population=p.dataset_size,
                rho=rho,
                orders=orders,
                conversion=p.conversion,
            )
            regimes["flush"] = flush["epsilon"]
            details["p_fail"] = flush["p_fail"]
            details["flush"] = {
                "k_max": flush["k_max"],
                "delta_rdp": flush["delta_rdp"],
                "noise_multiplier_effective": flush["noise_multiplier_effective"],
            }
            if flush["epsilon"] < best[1]:
                best = ("flush", flush["epsilon"], flush["order"], flush["warnings"])
        if hsc.in_use() and rho is not None:
            # an RDP curve valid for every conversion and the full delta; independent of C2
            cons = result_epsilon(
                hsc.conservation_epsilon(
                    delta=p.delta,
                    sample_rate=p.sample_rate,
                    noise_multiplier=p.noise_multiplier,
                    steps=p.steps,
                    c1=p.c1,
                    rho=rho,
                    orders=orders,
                    conversion=p.conversion,
                )
            )
            regimes["conservation"] = cons.epsilon
            if cons.epsilon < best[1]:
                best = ("conservation", cons.epsilon, cons.order, cons.warnings)
        if hsc.in_use() and rho is not None:
            # the same budget through a one-dimensional dominating pair: an (eps, delta) statement.
            # Evaluated at rho = 0 too: every regime is non-decreasing in rho, so their minimum is, and
            # skipping one at rho = 0 would let eps fall as G rises past C1 (at q = 1 the pair is the
            # exact Gaussian composition, below DP-SGD's RDP-converted number, and still valid).
            pair = hsd.dominating_pair_epsilon(
                p.delta,
                sample_rate=p.sample_rate,
                noise_multiplier=p.noise_multiplier,
                steps=p.steps,
                c1=p.c1,
                rho=rho,
            )
            regimes["conservation-pair"] = pair
            if pair < best[1]:
                best = ("conservation-pair", pair, None, ())
        regime, eps, order, warns = best
        details["regime"] = regime
        if regime == "flush":
            note = (
                f"certified (flush regime): on the event E that every batch of the other examples has "
                f"(|S_t| + 1) rho <= B C2 (rho = {rho:.6g} bounds every residual g - clip(g, C1)), the error "
                f"state is emptied each step and DiceSGD is DP-SGD at z C1/(C1 + rho) = "
                f"{flush['noise_multiplier_effective']:.6g}; delta = delta_RDP {flush['delta_rdp']:.3g} + "
                f"{_p_fail_text(flush)} (docs/hidden-state.md)",
            )
        else:
            if regime == "conservation":
                note = (
                    "certified (conservation): what clip(e, C2) releases is removed from the hidden "
                    "difference, so n inclusions shift the releases by a total squared norm <= "
                    "(sqrt(n) C1/B + n rho/B)^2; averaged over n ~ Bin(T, q) "
                    "(accounting.hidden_state_conservation, docs/hidden-state.md K1-K7)",
                ) + _CONSERVATION_ASSUMPTIONS
            if regime == "conservation-pair":
                note = (
                    "certified (conservation-pair): what clip(e, C2) releases is removed from the hidden "
                    "difference, so n inclusions shift the releases by a total squared norm <= "
                    "(sqrt(n) C1/B + n rho/B)^2; DiceSGD is then dominated by the pair "
                    "sum_n Bin(n; T, q) N(mu_n, 1) vs N(0, 1), mu_n = (sqrt(n) + n rho/C1)/z "
                    "(accounting.hidden_state_dominating, docs/hidden-state.md K1-K5, C1-C5)",
                ) + _CONSERVATION_ASSUMPTIONS
            if regime == "inclusion-cap":
                note = note + (
                    f"inclusion cap k = {details['inclusion_cap']['k']}: RDP at delta = {0.9 * p.delta:.3g} "
                    f"plus e^eps P[Bin(T, q) > k] = e^eps {details['inclusion_cap']['beta']:.3g} "
                    "(docs/hidden-state.md)",
                )
            if flush is not None:
                why = (
                    f"P(E^c) <= {fmt(flush['p_fail'], UP, 3)} is not below delta = {p.delta:.3g}"
                    if not flush["p_fail"] < p.delta
                    else f"it gives eps = {flush['epsilon']:.6g}, larger"
                )
                note = note + (f"flush regime not used: {why}; fell back to the {regime} bound",)
        if p.grad_bound is not None:
            note = note + (f"assumes every per-example gradient norm <= G = {p.grad_bound:g}",)
        if p.clip_mode == "automatic":
            note = note + (
                f"automatic clipping C1 g/(||g|| + gamma), gamma = {_gamma(p):g}: residual bound rho = "
                f"max over ||g|| <= G of ||g|| |1 - C1/(||g|| + gamma)| (nonzero even for G < C1)",
            )
        shown = PAIR_ACCOUNTANT if regime == "conservation-pair" else None
        return EpsilonValue(eps, order, note, warns, details, accountant=shown)

    def assumptions(self, p: PrivacyParams, mode: str) -> list[str]:
        return (
            [
                "adjacency: add/remove one example",
                "Poisson sampling with rate q = B/N each step "
                "(the paper draws minibatches; not covered otherwise)",
                "noise w ~ N(0, sigma1^2 I) on the averaged update v_t, sigma1 = z C1 / B (noise_std)",
                "e_t is never released (only x_t is)",
            ]
            + (
                [
                    f"residual clip R = {p.residual_clip:g}: the optimizer adds clip(g_i - clip(g_i, C1), R) "
                    "(flat: clip(g_i, C1 + R) - clip(g_i, C1)) to e, so every increment has norm <= R"
                ]
                if p.residual_clip is not None
                else []
            )
            + (
                [
                    f"flush regime: P(E^c) is computed for at most N = {p.dataset_size} examples besides the "
                    "differing one (Bin(N, q) batches), so the guarantee holds for datasets of at most N "
                    "examples, against both an added and a removed neighbour"
                ]
                if residual_bound(p) is not None
                else []
            )
        )


def auto_c2(p: PrivacyParams, *, budget_noise_multiplier: float, max_noise_ratio: float) -> float:
    """``--c2 auto``: the largest C2 whose certified noise is within ``max_noise_ratio`` x DP-SGD's.

    ``p`` must be resolved (q, T, B, C1 set). Uses ``accounting.hidden_state.largest_c2`` with the
    DP-SGD noise ``budget_noise_multiplier``: at noise ``max_noise_ratio * budget`` DiceSGD's
    certified eps is <= DP-SGD's eps at ``budget``. Returns a finite C2 (when every C2 qualifies
    the error feedback never changes the bound and C1's value is returned).
    """
    from accounting import hidden_state as hs

    c2 = hs.largest_c2(
        noise_multiplier=budget_noise_multiplier,
        delta=p.delta,
        sample_rate=p.sample_rate,
        steps=p.steps,
        c1=p.c1,
        batch_size=p.batch_size,
        grad_bound=None if residual_bound(p) is None else p.c1 + residual_bound(p),
        max_noise_ratio=max_noise_ratio,
        orders=orders_of(p),
    )
    if not math.isfinite(c2):
        rho = residual_bound(p)
        if rho is not None and rho > 0:
            a = rho / p.batch_size
            return max(p.c1, (p.steps - 1) * a / 2.0)
        return p.c1
    return float(c2)


#: ``--c2 auto`` in the flush regime: P(E^c) <= delta / FLUSH_FAILURE_DIVISOR.
FLUSH_FAILURE_DIVISOR = 100.0


def auto_c2_flush(p: PrivacyParams) -> dict | None:
    """``--c2 auto`` when every residual is bounded (rho > 0: --residual-clip or --grad-bound).

    With ``k`` the smallest batch size of the others such that ``T P[Bin(N, q) > k] <= delta/100``,
    ``c2_min = (k + 1) rho / B = rho (1 + margin)`` is the smallest C2 with P(E^c) <= delta/100
    (docs/hidden-state.md, "The flush regime"). P(E^c) is non-increasing in C2 and on E the C2-clip
    never acts, so every C2 >= c2_min certifies the same noise *and* runs the same trajectory. The
    recommendation is ``C2 = max(C1, c2_min)``: it keeps Theorem 3.7's assumption C1 <= C2 (a user
    following the paper stays inside it) at no cost, and P(E^c) is reported at that C2. Returns
    ``{"c2", "c2_min", "k", "p_fail", "margin", "rho"}`` or None when rho is unbounded (no
    --grad-bound, no --residual-clip) or zero (every C2 is then equivalent).
    """
    from accounting.hidden_state import binomial_log_sf_upper

    rho = residual_bound(p)
    if rho is None or rho <= 0.0:
        return None
    n, q, t = int(p.dataset_size), float(p.sample_rate), int(p.steps)
    log_target = math.log(p.delta / FLUSH_FAILURE_DIVISOR) - math.log(t)
    lo, hi = -1, n  # P[Bin > n] = 0 <= target; find the smallest k with log sf(k) <= target
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if binomial_log_sf_upper(n, q, mid) <= log_target:
            hi = mid
        else:
            lo = mid
    k = hi
    # (k + 1) rho <= B C2 must hold in floating point too: nudge C2 up by a relative 1e-9.
    c2_min = (k + 1) * rho / float(p.batch_size) * (1.0 + 1e-9)
    c2 = max(float(p.c1), c2_min)
    from accounting.hidden_state import flush_failure_probability

    fail = flush_failure_probability(
        rho=rho, c2=c2, batch_size=p.batch_size, population=n, sample_rate=q, steps=t
    )
    return {
        "c2": c2,
        "c2_min": c2_min,
        "k": k,
        "p_fail": fail["p_fail"],
        "margin": c2_min / rho - 1.0,
        "rho": rho,
    }
