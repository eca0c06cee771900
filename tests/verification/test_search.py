"""The adversarial search and the claim framework's dependence rule (issue 8, §2).

Negative control: a deliberately false toy claim whose only counterexamples sit in a far corner of
its domain must be found; a true one must not be refuted; and a search restricted to a convenient
box (what the old checks did) misses the far corner -- which is why the box is recorded.
"""

from __future__ import annotations

import numpy as np

from verification.claim import Check, Claim, Context, Outcome, Verdict
from verification.search import Constraint, Domain, Param, adversarial_search

WIDE = Domain(
    params=(
        Param("a", "(0, inf)", 1e-12, 1e12),
        Param("b", "(0, 1]", 1e-12, 1.0),
    ),
    source="toy",
)


def _far_corner_false(p):
    # "min(a / 1e10, 1e-10 / b) <= 1 for all a > 0, 0 < b <= 1": false, but only where
    # a > 1e10 AND b < 1e-10 -- about 0.7% of the log box, nowhere near the usual box.
    return np.minimum(p["a"] / 1e10, 1e-10 / p["b"])


def _true(p):
    # "a b / (1 + a b) <= 1": true everywhere; the ratio approaches 1 from below
    return p["a"] * p["b"] / (1.0 + p["a"] * p["b"])


def test_search_finds_far_corner_counterexample() -> None:
    res = adversarial_search(WIDE, _far_corner_false, samples=64, maxiter=10, seed=3)
    cx = res.counterexample
    assert cx is not None and res.max_ratio > 1
    assert cx["a"] > 1e10 and cx["b"] < 1e-10
    d = res.details()
    assert d["evaluations"] == res.evaluations > 64
    assert d["decades_spanned"]["a"]["decades"] >= 20 and d["decades_spanned"]["b"]["decades"] >= 10
    assert res.summary().startswith("max violation ratio")


def _far_interior_false(p):
    # false only for 1e10 < a < 1e11 and 1e-11 < b < 1e-10: a far region that is not a corner
    return np.minimum.reduce([p["a"] / 1e10, 1e11 / p["a"], 1e-10 / p["b"], p["b"] / 1e-11])


def test_search_finds_far_interior_counterexample() -> None:
    for seed in (0, 1, 2):
        res = adversarial_search(WIDE, _far_interior_false, samples=64, maxiter=30, seed=seed)
        cx = res.counterexample
        assert cx is not None and 1e10 < cx["a"] < 1e11 and 1e-11 < cx["b"] < 1e-10, (seed, res.summary())


def test_search_does_not_refute_a_true_claim() -> None:
    res = adversarial_search(WIDE, _true, samples=128, maxiter=10, seed=0)
    assert res.counterexample is None
    assert res.max_ratio < 1


def test_a_convenient_box_misses_the_far_corner() -> None:
    box = Domain(params=(Param("a", "(0, inf)", 1e-2, 1e2), Param("b", "(0, 1]", 1e-2, 1.0)))
    res = adversarial_search(box, _far_corner_false, samples=128, maxiter=10, seed=0)
    assert res.counterexample is None  # the box is the defect, not the search


def test_constraints_are_respected() -> None:
    dom = Domain(
        params=(Param("x", "(0, inf)", 1e-3, 1e3), Param("y", "(0, inf)", 1e-3, 1e3)),
        constraints=(Constraint("y <= x", lambda p: p["y"] <= p["x"]),),
    )
    seen = []

    def ratio(p):
        seen.append(np.all(p["y"] <= p["x"]))
        return p["y"] / p["x"]

    res = adversarial_search(dom, ratio, samples=64, maxiter=5, seed=1)
    assert all(seen) and res.max_ratio <= 1 and res.counterexample is None


def _ok(ctx: Context) -> Outcome:
    return Outcome(Verdict.CONFIRMED, "ok", "toy", {"x": 1})


def _bad(ctx: Context) -> Outcome:
    return Outcome(Verdict.REFUTED, "bad", "toy", {"x": 1})


def test_corollary_of_unconfirmed_premise_is_at_most_inconclusive() -> None:
    cor = Claim("toy.cor", "toy", "-", "-", "-", (), (Check("c", "symbolic", _ok),), depends_on=("toy.thm",))
    r = cor.run(Context(), premises={"toy.thm": Verdict.REFUTED})
    assert r.own_verdict is Verdict.CONFIRMED and r.verdict is Verdict.INCONCLUSIVE
    assert "toy.thm: refuted" in r.summary
    assert r.to_json()["depends_on"] == [{"id": "toy.thm", "verdict": "refuted"}]
    assert cor.run(Context(), premises={"toy.thm": Verdict.CONFIRMED}).verdict is Verdict.CONFIRMED
    # a corollary can still be refuted on its own
    cor2 = Claim("toy.c2", "toy", "-", "-", "-", (), (Check("c", "symbolic", _bad),), depends_on=("toy.thm",))
    assert cor2.run(Context(), premises={"toy.thm": Verdict.CONFIRMED}).verdict is Verdict.REFUTED


def test_check_that_cannot_refute_is_not_deciding() -> None:
    universal = Claim("toy.u", "toy", "-", "-", "-", (), (Check("c", "empirical", _ok, can_refute=False),))
    r = universal.run(Context())
    assert r.verdict is Verdict.INCONCLUSIVE and not r.checks[0].deciding
    existential = Claim(
        "toy.e", "toy", "-", "-", "-", (), (Check("c", "empirical", _ok, can_refute=False),), existential=True
    )
    assert existential.run(Context()).verdict is Verdict.CONFIRMED


def test_every_registered_claim_declares_premises_that_exist() -> None:
    from verification import registry

    for c in registry.CLAIMS.values():
        for pid in c.depends_on:
            assert pid in registry.CLAIMS, (c.id, pid)


def test_without_a_headline_reading_refuted_only_if_every_reading_is() -> None:
    from verification.search import Reading

    def claim(second):
        return Claim(
            "toy.r",
            "toy",
            "-",
            "-",
            "-",
            (),
            (Check("a", "symbolic", _bad, reading="A"), Check("b", "symbolic", second, reading="B")),
            readings=(Reading("A", "one way"), Reading("B", "another")),
        )

    split = claim(_ok).run(Context())
    assert split.own_verdict is Verdict.REFUTED and split.verdict is Verdict.INCONCLUSIVE
    assert "per reading" in split.summary
    assert claim(_bad).run(Context()).verdict is Verdict.REFUTED


def test_deciding_checks_of_universal_claims_can_refute() -> None:
    """Guard: a deciding check whose code has no path to `refuted` must say so (can_refute=False),
    so that it cannot confirm a universal claim. Checks that only force `inconclusive` (lost text,
    a released source that could not be located) are exempt: they can neither confirm nor refute."""
    import inspect

    from verification import registry

    offenders = []
    for c in registry.CLAIMS.values():
        for ch in c.checks:
            if not ch.deciding or not ch.can_refute or c.existential:
                continue
            src = inspect.getsource(ch.fn)
            for name in ch.fn.__code__.co_names:  # a thin wrapper: look one call deep
                target = ch.fn.__globals__.get(name)
                if inspect.isfunction(target):
                    src += inspect.getsource(target)
            if "REFUTED" in src or ch.name in ("statement-lost", "source-not-located"):
                continue
            offenders.append(f"{c.id}:{ch.name}")
    assert not offenders, offenders
