"""The known counterexamples of the three papers, as data and as ``hypothesis.example`` decorators.

Each entry is a point inside the paper's stated domain where the claim fails, found by the
adversarial search or the audits and replayed exactly (``tests/verification/test_counterexamples.py``). A
user's property test can pin them so they are always tried first::

    from dptheory.testing.counterexamples import known_counterexample

    @given(q=sample_rates(), sigma=noise_multipliers(lo=0.1), eta=st.floats(1.0, 64.0))
    @known_counterexample("d2p2.lemma5")      # q=1e-9, sigma=0.45, eta=2
    def test_my_rdp_bound(q, sigma, eta): ...

The values are literals here (importing this module costs nothing); ``replay()`` recomputes
each one with the project's own exact code, and the self-tests check both the literals against
the claim modules and that every replay still violates its claim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Counterexample:
    """A concrete point where a claim fails: the parameters, what they violate, how to replay."""

    claim_id: str
    params: dict[str, Any]
    violates: str
    reproduce: str
    _replay: Callable[[dict[str, Any]], float] = field(repr=False, compare=False)

    def example(self, **rename: str) -> Any:
        """``hypothesis.example`` with these parameters; ``rename`` maps a parameter name to the
        name of your test's argument (``known.example(sigma="z")``)."""
        from hypothesis import example

        return example(**{rename.get(k, k): v for k, v in self.params.items()})

    def replay(self) -> float:
        """Recompute the violation ratio (> 1 means the claim fails here) with the project's code."""
        return float(self._replay(self.params))


def _lemma5(p: dict[str, Any]) -> float:
    from verification.claims.d2p2 import lemma5_exact_ratio

    return lemma5_exact_ratio(p["q"], p["sigma"], p["eta"])["ratio"]


def _thm36(p: dict[str, Any]) -> float:
    from verification.claims.dicesgd import thm36_huber_run

    return thm36_huber_run(p["G"], p["C1"], p["C2"], p["x0"], 3000, exact=True)["ratio"]


def _thm37(p: dict[str, Any]) -> float:
    from accounting.algorithms.base import PrivacyParams
    from accounting.audit import run_audit
    from verification.claims.dicesgd import dicesgd_claimed_sigma1

    c = p["batch"] * p["c2"]
    s1 = dicesgd_claimed_sigma1(
        eps=p["eps"],
        delta=p["delta"],
        steps=p["steps"],
        n=p["n"],
        c1=p["c1"],
        c2=p["c2"],
        gprime=p["G"] + p["sigma"] - p["c1"],
        reading="C-squared",
        c_sens=c,
    )
    params = PrivacyParams(
        algo="dicesgd",
        noise_multiplier=s1 * p["batch"] / p["c1"],
        delta=p["delta"],
        sample_rate=p["batch"] / p["n"],
        steps=p["steps"],
        dataset_size=p["n"],
        batch_size=p["batch"],
        c1=p["c1"],
        c2=p["c2"],
        grad_bound=p["G"],
    )
    return run_audit(params, samples=1000, confidence=0.99, seed=0).epsilon_lower / p["eps"]


def _cor1(p: dict[str, Any]) -> float:
    from verification.claims.clip21 import cor1_exact

    return cor1_exact(p["eps"], p["delta"], p["T"])["ratio"]


KNOWN_COUNTEREXAMPLES: dict[str, Counterexample] = {
    "d2p2.lemma5": Counterexample(
        "d2p2.lemma5",
        {"q": 1e-9, "sigma": 0.45, "eta": 2.0},
        "RDP of the subsampled Gaussian e(eta) <= 7 q^2 eta / sigma^2 (exact e(2) is 2.0x the bound)",
        'python -c "from verification.claims.d2p2 import lemma5_exact_ratio as r; print(r(1e-09, 0.45, 2))"',
        _lemma5,
    ),
    "dicesgd.thm3.6": Counterexample(
        "dicesgd.thm3.6",
        {"G": 100.0, "C1": 1.0, "C2": 3.0, "x0": 1000.0, "T": 10000, "L": 1.0},
        "Thm 3.6's convergence bound (A_t-weighted E||grad f||^2 <= RHS) on a 1-D Huber loss",
        'python -c "from verification.claims.dicesgd import thm36_huber_run as r; '
        'print(r(100.0, 1.0, 3.0, 1000.0, 10000, exact=True))"',
        _thm36,
    ),
    "dicesgd.thm3.7": Counterexample(
        "dicesgd.thm3.7",
        {
            "n": 1000,
            "batch": 10,
            "steps": 1000,
            "c1": 1.0,
            "c2": 1.0,
            "G": 1e4,
            "sigma": 1e4,
            "eps": 2.0,
            "delta": 1e-5,
        },
        "Thm 3.7's privacy (eps = 2): the audit proves eps >= 44.6 at the prescribed noise",
        "dptheory audit --algo dicesgd --noise-multiplier 43.02648504 --delta 1e-05 --sample-rate 0.01 "
        "--steps 1000 --dataset-size 1000 --batch-size 10 --c1 1.0 --c2 1.0 --grad-bound 10000.0 "
        "--samples 1000 --seed 0",
        _thm37,
    ),
    "clip21.cor1": Counterexample(
        "clip21.cor1",
        {"eps": 100.0, "delta": 0.5, "T": 1},
        "the reconstructed Cor. 1 noise read for any eps > 0: exact delta(eps) = 0.99 > delta = 0.5",
        'python -c "from verification.claims.clip21 import cor1_exact; print(cor1_exact(100.0, 0.5, 1))"',
        _cor1,
    ),
}


def known_counterexample(claim_id: str, **rename: str) -> Any:
    """The ``hypothesis.example`` decorator of a known counterexample (see module docstring)."""
    try:
        cx = KNOWN_COUNTEREXAMPLES[claim_id]
    except KeyError:
        raise KeyError(
            f"no known counterexample for {claim_id!r} (known: {', '.join(KNOWN_COUNTEREXAMPLES)})"
        ) from None
    return cx.example(**rename)
