"""The claim machinery: registry completeness, verdict combination, crash containment, and
that checks can both fail and pass (a deliberately false and a deliberately true claim)."""

from __future__ import annotations

import math

import pytest

from verification.claim import Check, CheckResult, Claim, Context, Evidence, Outcome, Verdict, combine

EXPECTED_IDS = {
    "dicesgd.gaussian-mechanism",
    "dicesgd.fixed-point-gc",
    "dicesgd.fixed-point-ef",
    "dicesgd.example-b1",
    "dicesgd.lemma-a1",
    "dicesgd.lemma-a7",
    "dicesgd.lemma-a10",
    "dicesgd.thm3.6",
    "dicesgd.thm3.7",
    "dicesgd.cor3.8",
    "clip21.example1",
    "clip21.thm1",
    "clip21.thm2",
    "clip21.cor1",
    "d2p2.lemma4",
    "d2p2.lemma5",
    "d2p2.thm1",
    "d2p2.projection-postprocessing",
    "d2p2.noise-schedule",
    "d2p2.thm2",
    "d2p2.cor1",
}


def test_registry_has_every_required_id() -> None:
    from verification import registry

    assert EXPECTED_IDS <= set(registry.CLAIMS)
    for cid, claim in registry.CLAIMS.items():
        assert cid == claim.id and claim.paper == cid.split(".")[0]
        assert claim.statement and claim.formula and claim.location
        assert any(ch.deciding for ch in claim.checks), f"{cid} has no deciding check"


def test_import_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, verification.registry as r; r.CLAIMS; bad=[m for m in "
        "('torch','sympy','matplotlib','hypothesis') if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def _res(v: Verdict, deciding: bool = True) -> CheckResult:
    return CheckResult("c", "property", v, "s", Evidence("m", {}, "cmd"), deciding=deciding)


def test_combine_rule() -> None:
    C, R, I = Verdict.CONFIRMED, Verdict.REFUTED, Verdict.INCONCLUSIVE
    assert combine([_res(C), _res(C)]) is C
    assert combine([_res(C), _res(R)]) is R
    assert combine([_res(C), _res(I)]) is I
    assert combine([_res(I), _res(R)]) is R
    assert combine([_res(C), _res(R, deciding=False)]) is C  # informative checks do not decide
    assert combine([]) is I


# -- a deliberately wrong and a deliberately true inequality, tested by the same machinery --------


def _inequality_check(lhs, rhs):
    """'lhs(x) <= rhs(x) for all x in [0, 10]', searched with hypothesis."""

    def fn(ctx: Context) -> Outcome:
        from hypothesis import strategies as st

        from verification.properties import search_counterexample

        found = search_counterexample(
            st.floats(0.0, 10.0), lambda x: lhs(x) > rhs(x) + 1e-12, max_examples=200, seed=ctx.seed
        )
        if found is not None:
            return Outcome(
                Verdict.REFUTED,
                f"x={found}: {lhs(found)} > {rhs(found)}",
                "hypothesis",
                {"x": found, "lhs": lhs(found), "rhs": rhs(found)},
            )
        return Outcome(Verdict.CONFIRMED, "no counterexample in 200 cases", "hypothesis", {"cases": 200})

    return fn


def _claim(check_fn) -> Claim:
    return Claim("fake.claim", "fake", "nowhere", "s", "f", (), (Check("ineq", "property", check_fn),))


def test_false_claim_is_refuted_with_counterexample() -> None:
    # fake bound: sqrt(x) <= x on [0, 10] fails on (0, 1)
    r = _claim(_inequality_check(math.sqrt, lambda x: x)).run(Context(seed=0))
    assert r.verdict is Verdict.REFUTED
    d = r.checks[0].evidence.details
    assert 0 < d["x"] < 1 and d["lhs"] > d["rhs"]
    assert "--claim fake.claim --seed 0" in r.checks[0].evidence.reproduce


def test_true_claim_is_confirmed() -> None:
    # 2x <= x^2 + 1 (AM-GM) holds everywhere
    r = _claim(_inequality_check(lambda x: 2 * x, lambda x: x * x + 1)).run(Context(seed=0))
    assert r.verdict is Verdict.CONFIRMED


def test_crash_is_contained_and_marked() -> None:
    def boom(ctx):
        raise ZeroDivisionError("nope")

    c = Claim(
        "fake.crash",
        "fake",
        "x",
        "s",
        "f",
        (),
        (
            Check("a", "symbolic", boom),
            Check("b", "property", _inequality_check(lambda x: 0.0, lambda x: 1.0)),
        ),
    )
    r = c.run(Context())
    assert r.checks[0].crashed and "ZeroDivisionError" in r.checks[0].crashed
    assert r.checks[1].verdict is Verdict.CONFIRMED  # the other check still ran
    assert r.verdict is Verdict.INCONCLUSIVE and r.crashed


def test_missing_dependency_is_inconclusive_not_crash() -> None:
    def needs(ctx):
        import dptheory_module_that_does_not_exist  # noqa: F401

    r = Claim("fake.dep", "fake", "x", "s", "f", (), (Check("a", "privacy", needs),)).run(Context())
    assert r.verdict is Verdict.INCONCLUSIVE and not r.crashed
    assert "unavailable" in r.checks[0].summary


FAST = [
    "dicesgd.gaussian-mechanism",
    "dicesgd.fixed-point-gc",
    "dicesgd.example-b1",
    "dicesgd.lemma-a1",
    "dicesgd.lemma-a10",
    "dicesgd.thm3.6",
    "dicesgd.cor3.8",
    "clip21.thm1",
    "clip21.cor1",
    "d2p2.lemma4",
    "d2p2.lemma5",
    "d2p2.projection-postprocessing",
    "d2p2.thm2",
]


@pytest.mark.parametrize("cid", FAST)
def test_fast_claims_give_a_verdict_with_evidence(cid: str, quick_results) -> None:
    r = quick_results[cid]
    assert r.verdict in set(Verdict)
    assert r.summary
    for ch in r.checks:
        assert ch.crashed is None, ch.crashed
        assert ch.summary and ch.evidence.method and ch.evidence.reproduce
        assert ch.evidence.details, f"{cid}:{ch.name} has no numbers"
    js = r.to_json()
    assert js["verdict"] == r.verdict.value and js["evidence"]


# Pinned verdicts: each pinned only after reviewing the check that produces it (see docs/verification.md).
PINNED = {
    "dicesgd.gaussian-mechanism": Verdict.REFUTED,  # exact Gaussian delta exceeds the target at eps >= ~2
    "dicesgd.example-b1": Verdict.REFUTED,  # exact root is C/C' - 1, not C'/(C'+C)
    "dicesgd.lemma-a1": Verdict.CONFIRMED,
    "d2p2.lemma4": Verdict.REFUTED,  # 'only if' fails (RDP conversion is not tight)
    "d2p2.projection-postprocessing": Verdict.REFUTED,  # projection precedes the noise
    "clip21.thm1": Verdict.INCONCLUSIVE,  # conclusion lost in the rendering; the witness is informative
    "d2p2.lemma5": Verdict.REFUTED,  # small sigma, tiny q (test_counterexamples)
    "dicesgd.thm3.6": Verdict.REFUTED,  # gradient bound far above C1 + C2 (test_counterexamples)
    "dicesgd.cor3.8": Verdict.REFUTED,  # its privacy half, checked directly at its own T and sigma1
    "clip21.thm2": Verdict.INCONCLUSIVE,  # its only check cannot return refuted: informative
}


@pytest.mark.parametrize("cid,verdict", sorted(PINNED.items()))
def test_pinned_verdicts(cid: str, verdict: Verdict, quick_results) -> None:
    assert quick_results[cid].verdict is verdict


@pytest.mark.slow
def test_every_claim_full_run_gives_a_verdict() -> None:
    from verification import registry

    for claim in registry.CLAIMS.values():
        r = claim.run(Context(seed=1, quick=False))
        assert r.verdict in set(Verdict) and not r.crashed, (claim.id, [c.crashed for c in r.crashed])


def test_report_is_written_atomically(tmp_path, quick_run) -> None:
    from verification.report import verdict_table, write_report

    results = [quick_run(c) for c in ("dicesgd.example-b1", "d2p2.lemma4")]
    target = tmp_path / "rep"
    write_report(results, target, seed=0, quick=True, command="test", runtime_s=1.0)
    text = (target / "report.md").read_text()
    assert "## `dicesgd.example-b1`" in text and "![" in text
    pngs = list((target / "figures").glob("*.png"))
    assert pngs and all(p.stat().st_size > 1000 for p in pngs)
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]  # no temp dir left behind
    write_report(results, target, seed=0, quick=True, command="test", runtime_s=1.0)  # overwrite works
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]
    table = verdict_table(results)
    assert table.startswith("| Claim |") and table.count("\n") == 4


def test_readme_table_splices_between_markers_only() -> None:
    from tools.readme_table import END, START, splice

    doc = f"intro\n{START}\nold table\n{END}\noutro\n"
    out = splice(doc, "| new |\n")
    assert out == f"intro\n{START}\n| new |\n{END}\noutro\n"
    with pytest.raises(ValueError):
        splice("no markers here", "| t |")
