"""Privacy audits: lower bounds on epsilon(delta) on concrete worst-case instances.

``run_audit(params, samples=..., confidence=..., seed=...)`` builds the instance for
``params.algo``, checks (and reports) the paper's assumptions on it, and returns an
:class:`AuditResult` holding ``epsilon_lower`` next to the claimed and certified epsilon at the
same noise.  Methods (see each module):

* dpsgd, d2psgd, d2p2sgd, dp2sgd: exact privacy-loss distribution with rounded-down
  discretisation (deterministic, confidence 1);
* clip21sgd2m: closed-form mu-GDP curve of the composed Gaussian (exact, confidence 1);
* dicesgd: exact likelihood ratios (forward pass over the hidden error state) of sampled
  trajectories + Clopper-Pearson (confidence as requested); with ``G <= C1`` the exact PLD.

numpy/scipy only; reproducible from ``seed``.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from accounting.algo_names import ALGO_NAMES
from accounting.audit.result import AuditResult
from accounting.errors import python_names

__all__ = ["AuditResult", "run_audit", "AUDITED_ALGOS"]

#: DiceSGD audits run over at most this many steps (memory: a steps x states transition table).
DICE_MAX_STEPS = 2000
#: Monte Carlo trajectories per neighbour at most (the losses are held in memory: 160 MB).
MAX_SAMPLES = 10**7

AUDITED_ALGOS = ALGO_NAMES  # every algorithm has an audit


def _mode_epsilon(algo, params, mode: str) -> tuple[float | None, str | None]:
    """(epsilon, None) in ``mode`` at the params' noise, or (None, why) when the mode is unavailable."""
    from accounting.errors import InvalidParameter

    if mode not in algo.available_modes():
        return None, f"{mode} mode not available for {algo.name}"
    try:
        return float(algo.epsilon(params, mode=mode, accountant="rdp").epsilon), None
    except InvalidParameter as exc:  # includes NotCertified
        return None, f"{mode}: {exc}"


@python_names
def run_audit(
    params: Any,
    *,
    samples: int = 2000,
    confidence: float = 0.99,
    seed: int = 0,
    progress: bool = False,
) -> AuditResult:
    """Audit ``params.algo`` at ``params.noise_multiplier`` and ``params.delta`` (see module doc).

    Args:
        params: a :class:`~accounting.algorithms.base.PrivacyParams` (``algo``, ``noise_multiplier``
            and ``delta`` given; the rest is filled from the algorithm's paper defaults).
        samples: Monte Carlo samples per hypothesis (where the audit samples).
        confidence: the one-sided confidence of the lower bound.
        seed: the seed of the audit's own randomness.
        progress: show a tqdm bar on stderr.

    Returns:
        An :class:`AuditResult` with ``epsilon_lower`` and the claimed and certified numbers.

    Raises:
        InvalidParameter: a missing or out-of-range parameter, or an algorithm without an audit.
    """
    from accounting import validate
    from accounting.algorithms.base import PrivacyParams
    from accounting.algorithms.registry import get_algorithm
    from accounting.errors import InvalidParameter

    if not isinstance(params, PrivacyParams):
        raise InvalidParameter(
            "params",
            "must be a PrivacyParams, e.g. dptheory.api.build_params(algo=..., noise_multiplier=..., "
            f"delta=...) (got {type(params).__name__})",
        )
    algo = get_algorithm(params.algo)
    p, _assumed, warns = algo.resolve(params)
    if p.noise_multiplier is None:
        raise InvalidParameter("--noise-multiplier", "is required (or give --eps/--delta to calibrate)")
    if p.delta is None:
        raise InvalidParameter("--delta", "is required (a number in (0, 1))")
    samples = validate.positive_int("--samples", samples)
    if samples > MAX_SAMPLES:  # two float arrays of this length are held (16 bytes a sample)
        raise InvalidParameter("--samples", f"must be at most {MAX_SAMPLES:.0e} (got {samples:.3g})")
    confidence = validate.open_unit("--confidence", confidence)
    if not confidence > 0.5:  # below 1/2 the "lower bound" fails more often than it holds
        raise InvalidParameter("--confidence", f"must be in (0.5, 1) (got {confidence:g})")
    if validate.nonnegative("--seed", seed) != int(seed):
        raise InvalidParameter("--seed", f"must be an integer >= 0 (got {seed!r})")
    seed = int(seed)

    name = algo.name
    if name == "dpsgd":
        with _pld_bar(progress, name) as bar:
            out = _audit_dpsgd(p, bar)
    elif name == "clip21sgd2m":
        out = _audit_clip21(p)
    elif name in ("d2p2sgd", "d2psgd", "dp2sgd"):
        with _pld_bar(progress, name) as bar:
            out = _audit_d2p2(algo, p, seed, bar)
    elif name == "dicesgd":
        # The forward pass holds a (steps x states) table: audit the first DICE_MAX_STEPS steps
        # (ignoring later releases is post-processing, so the bound stays a lower bound).
        t_audit = min(int(p.steps), DICE_MAX_STEPS)
        out = _audit_dicesgd(p.with_(steps=t_audit), samples, confidence, seed, progress)
        if t_audit < int(p.steps):
            note = f"audited the first {t_audit} of T = {int(p.steps)} steps (a lower bound for all T)"
            out = (*out[:6], [*out[6], note])
    else:  # pragma: no cover - registry and this table are kept in sync
        raise InvalidParameter("--algo", f"no audit for {name}")
    instance, eps_lower, method, conf, checks, details, extra = out
    # claimed / certified at the same noise, for the mechanism the instance realises
    p_modes = details.pop("params_for_modes", p)
    eps_claimed, why_c = _mode_epsilon(algo, p_modes, "claimed")
    eps_cert, why_z = _mode_epsilon(algo, p_modes, "certified")
    notes = [w for w in (why_c, why_z) if w] + list(warns)
    return AuditResult(
        algo=name,
        instance=instance,
        noise_multiplier=float(p.noise_multiplier),
        delta=float(p.delta),
        epsilon_lower=float(eps_lower),
        confidence=float(conf),
        epsilon_claimed=eps_claimed,
        epsilon_certified=eps_cert,
        method=method,
        assumptions_checked=tuple(checks),
        seed=seed,
        samples=samples if name == "dicesgd" and details.get("monte_carlo") else None,
        details=details,
        warnings=tuple(notes + list(extra)),
    )


@contextlib.contextmanager
def _bar(progress: bool, total: int, desc: str, unit: str):
    """A tqdm bar, or None without ``progress``; closed (and erased) however the audit ends.
    ``disable=None``: shown on a terminal only."""
    if not progress:
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, leave=False, disable=None)
    try:
        yield bar
    finally:
        bar.close()


def _pld_bar(progress: bool, name: str):
    """:func:`_bar` over the PLD passes: two neighbour directions per sensitivity tried."""
    return _bar(progress, 2, f"{name} audit: exact PLD passes", "pass")


def _audit_dpsgd(p, bar=None):
    from accounting.audit.dpsgd import PLD_METHOD, subsampled_instance_epsilon_lower

    eps = subsampled_instance_epsilon_lower(
        p.sample_rate, [p.noise_multiplier], p.delta, counts=[int(p.steps)], progress=bar
    )
    inst = (
        "1-D: the differing example's gradient has norm >= C (clipped to C), all others are 0; "
        f"T={p.steps} steps, q={p.sample_rate!r}, z={p.noise_multiplier!r}"
    )
    checks = [
        ("per-example clipping: ||clip(g, C)|| <= C", True),
        (f"sample rate q = {p.sample_rate:.4g} <= 1", True),
    ]
    return inst, eps, PLD_METHOD, 1.0, checks, {}, []


def _audit_clip21(p):
    from accounting.audit.clip21 import clip21_epsilon_lower, clip21_mu

    t = int(p.rounds)
    mu = clip21_mu(p.noise_multiplier, t)
    eps = clip21_epsilon_lower(p.noise_multiplier, t, p.delta)
    inst = (
        "1-D local DP: client i's loss is +G x vs -G x with G >= tau (1 + T beta_hat)/beta, so its "
        f"message is c = +tau vs -tau every round (distance 2 tau); T={t} rounds, z={p.noise_multiplier!r}"
    )
    method = f"exact: T-fold Gaussian = mu-GDP with mu = 2 sqrt(T)/z = {mu:.6g}, closed-form delta(eps)"
    checks = [
        ("||c_i|| <= tau before noise (messages +-tau)", True),
        ("no subsampling amplification (local DP: every round releases the client's message)", True),
    ]
    return inst, eps, method, 1.0, checks, {"mu": mu}, []


def _audit_d2p2(algo, p, seed, bar=None):
    from accounting.audit.d2p2 import fresh_projection_epsilon_lower, projection_factor
    from accounting.audit.dpsgd import PLD_MAX_STEPS, PLD_METHOD, subsampled_instance_epsilon_lower

    z, counts = algo.multiplier_blocks(p, rounding="up")  # extra noise: still a lower bound
    extra = []
    details: dict[str, Any] = {}
    method = PLD_METHOD
    if int(counts.sum()) > PLD_MAX_STEPS:
        extra.append(
            f"T = {int(counts.sum())} > {PLD_MAX_STEPS}: the PLD is composed over the {PLD_MAX_STEPS} steps "
            "with the least noise only (ignoring releases is post-processing: still a lower bound)"
        )
    fresh = getattr(algo, "projected", False) and p.projection == "fresh" and p.projection_sigma_max is None
    if fresh:
        # Same mechanism and reading as the certified number: A_k redrawn every step, public.
        eps, factor, log_pg = fresh_projection_epsilon_lower(
            p.sample_rate, z, counts, p.delta, int(p.projection_dim), progress=bar
        )
        how = (
            f"fresh Gaussian A_k per step (public), p={p.projection_dim}: s_k = ||A_k^T u||/sqrt(p) ~ "
            f"sqrt(chi2_p/p); on the event that every s_k >= {factor:.6g} "
            f"(probability {math.exp(log_pg):.6g})"
        )
        method = (
            "exact PLD of the instance at sensitivity c, rounded down, with delta_true(eps) >= "
            "P(all s_k >= c) delta_c(eps) (deterministic lower bound over the draws of A_k)"
        )
        details["sensitivity_factor"] = factor
        details["probability_all_factors_above"] = math.exp(log_pg)
    else:
        if not getattr(algo, "projected", False):
            factor, how = 1.0, "no projection (A = I)"
        elif p.projection_sigma_max is not None:
            factor = float(p.projection_sigma_max) / math.sqrt(p.projection_dim)
            how = (
                f"fixed public A with sigma_max = {p.projection_sigma_max:g}; u on its top singular direction"
            )
            if p.projection != "fixed":
                details["params_for_modes"] = p.with_(projection="fixed")
        else:
            factor, smax, how = projection_factor(int(p.model_dim), int(p.projection_dim), seed)
            # certified/claimed of the mechanism audited: this fixed A (exact sigma_max when known)
            fixed = p.with_(projection="fixed")
            if smax is not None:
                fixed = fixed.with_(projection_sigma_max=smax * (1 + 1e-9))
            details["params_for_modes"] = fixed
        details["sensitivity_factor"] = factor
        eps = subsampled_instance_epsilon_lower(
            p.sample_rate, z, p.delta, factor=factor, counts=counts, progress=bar
        )
    inst = (
        f"{how}; the differing example's normalised gradient u (||u|| -> 1) gives projected sensitivity "
        f"s = ||A^T u||/sqrt(p) {'>=' if fresh else '='} {factor:.6g}; others 0; T={p.steps}, "
        f"q={p.sample_rate:.6g}, "
        f"schedule {p.schedule}, z={p.noise_multiplier!r}"
    )
    checks = [
        ("per-example normalisation g/(||g|| + gamma): sensitivity of the unprojected sum <= 1", True),
        (f"projection entries N(0, 1) scaled by 1/sqrt(p) (Alg. 1 line 6); p={p.projection_dim}", True)
        if getattr(algo, "projected", False)
        else ("no projection (D2P-SGD)", True),
        (f"Lemma 5 (Theorem 1) needs q < 1/10: q = {p.sample_rate:.4g}", p.sample_rate < 0.1),
    ]
    return (
        inst,
        eps,
        method + (f"; noise multipliers z_k/s with s = {factor:.6g}"),
        1.0,
        checks,
        details,
        extra,
    )


def _audit_dicesgd(p, samples, confidence, seed, progress):
    from accounting.audit.dicesgd import dice_instance, dicesgd_epsilon_lower
    from accounting.errors import InvalidParameter

    if p.clip_mode == "automatic":
        raise InvalidParameter(
            "--clip-mode", "the DiceSGD audit instance models flat clipping only (use --clip-mode flat)"
        )
    # With the residual clip R the instance's excess gradient is at most R: xi' with gradient
    # C1 + min(R, G - C1) has residual exactly that, which the residual clip leaves unchanged.
    g_inst = p.grad_bound
    if p.residual_clip is not None:
        g_inst = p.c1 + p.residual_clip if g_inst is None else min(g_inst, p.c1 + p.residual_clip)
    inst = dice_instance(
        sample_rate=p.sample_rate,
        steps=int(p.steps),
        c1=float(p.c1),
        c2=float(p.c2),
        batch_size=float(p.batch_size),
        noise_multiplier=float(p.noise_multiplier),
        grad_bound=g_inst,
    )
    n = int(p.dataset_size)
    g = inst.grad
    var_sigma = g * n / (n + 1)
    checks = [
        (
            f"Assumption 3.5 (bounded gradient): per-example norms <= {g:.6g}, full gradient "
            f"{g / (n + 1):.6g}",
            True,
        ),
        (
            "Assumption 3.4 (bounded variance): E||grad f - g_i||^2 = sigma^2/N with "
            f"sigma = {var_sigma:.6g}; ||grad f - g_i|| <= sigma for all i",
            True,
        ),
        (f"C1 <= C2 (C1 = {p.c1:g}, C2 = {p.c2:g})", p.c1 <= p.c2),
        (f"B/N <= 1/5 (B/N = {p.sample_rate:.4g}, B = qN = {p.batch_size:.6g})", p.sample_rate <= 0.2),
        ("0 < C1 <= C2 <= C/B for the constant C = B C2", p.c1 <= p.c2),
        ("linear losses are not bounded below (Assumption 3.1), which Theorem 3.7 does not assume", True),
    ]
    if p.grad_bound is not None:
        checks.append(
            (f"instance gradient {g:.6g} <= --grad-bound {p.grad_bound:g}", g <= p.grad_bound + 1e-12)
        )
    if p.residual_clip is not None:
        checks.append(
            (
                f"instance residual {g - p.c1:.6g} <= --residual-clip {p.residual_clip:g} (unchanged by it)",
                g - p.c1 <= p.residual_clip * (1 + 1e-12),
            )
        )
    details: dict[str, Any] = {"instance_gradient": g, "lattice_unit": inst.unit, "jump": inst.jump}
    if inst.jump == 0:
        from accounting.audit.dpsgd import PLD_METHOD, subsampled_instance_epsilon_lower

        eps = subsampled_instance_epsilon_lower(
            p.sample_rate, [p.noise_multiplier], p.delta, counts=[int(p.steps)]
        )
        return (
            inst.describe(),
            eps,
            PLD_METHOD + " (G <= C1: the hidden state never differs)",
            1.0,
            checks,
            details,
            [],
        )
    with _bar(progress, 2 * samples, "dicesgd audit trajectories", "traj") as bar:
        eps, mc = dicesgd_epsilon_lower(
            inst, p.delta, samples=samples, confidence=confidence, seed=seed, progress=bar
        )
    details.update(mc)
    details["monte_carlo"] = True
    method = (
        f"Monte Carlo: {samples} trajectories per neighbour, exact likelihood ratio (forward pass over "
        "the hidden error state), Bernoulli-ised hockey-stick estimator with Clopper-Pearson bounds "
        f"(confidence {confidence:g}, split over the two directions)"
    )
    extra = []
    if mc.get("order_statistic_needed", 0) < 0:
        extra.append("too few samples for any bound above 0 at this delta: increase --samples")
    return inst.describe(), eps, method, confidence, checks, details, extra
