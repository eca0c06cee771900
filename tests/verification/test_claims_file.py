"""The public claim API (dptheory.claims) and ``dptheory verify --claims-file``.

The two worked examples are checked for their verdicts *and* the evidence behind them: the true
one (classical Gaussian noise, eps < 1) is confirmed by a search that covered the stated domain,
the false one (same noise, eps >= 1) is refuted by a point inside the domain whose exact ratio
exceeds 1 and by an audit lower bound above the claimed eps.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dptheory.claims import Verdict, load_claims_file, run_claims
from dptheory.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "claims"
TRUE_FILE = EXAMPLES / "gaussian_mechanism.py"
FALSE_FILE = EXAMPLES / "gaussian_mechanism_large_eps.py"


def _exact_ratio(eps: float, delta: float) -> float:
    """Balle & Wang's exact delta(eps) over delta at sigma = sqrt(2 ln(1.25/delta))/eps, written
    here again (not imported from the example) with mpmath."""
    import mpmath as mp

    mp.mp.dps = 60
    s = mp.sqrt(2 * mp.log(mp.mpf("1.25") / mp.mpf(delta))) / mp.mpf(eps)
    e = mp.mpf(eps)
    return float((mp.ncdf(1 / (2 * s) - e * s) - mp.e**e * mp.ncdf(-1 / (2 * s) - e * s)) / mp.mpf(delta))


def test_true_example_is_confirmed_by_a_search_over_the_stated_domain() -> None:
    (claim,) = load_claims_file(TRUE_FILE)
    (res,) = run_claims([claim], quick=True)
    assert res.verdict is Verdict.CONFIRMED, res.summary
    search = next(c for c in res.checks if c.name == "exact-curve-search")
    d = search.evidence.details
    # the search covered the stated domain: eps over 6 decades up to 1, delta over 100 decades
    assert d["decades_spanned"]["eps"]["decades"] >= 5.9 and d["decades_spanned"]["eps"]["max"] > 0.999
    assert d["decades_spanned"]["delta"]["decades"] >= 99
    # its worst point, replayed exactly, is below 1, and agrees with an independent computation
    w = d["at"]
    assert d["worst_point_replayed_ratio"] < 1
    if w["factor"] == 1.0:
        assert math.isclose(d["worst_point_replayed_ratio"], _exact_ratio(w["eps"], w["delta"]), rel_tol=1e-6)
    assert res.readings_json()[0]["verdict"] == "confirmed"


def test_false_example_is_refuted_with_an_exact_counterexample_and_an_audit() -> None:
    (claim,) = load_claims_file(FALSE_FILE)
    (res,) = run_claims([claim], quick=True)
    assert res.verdict is Verdict.REFUTED
    search = next(c for c in res.checks if c.name == "exact-curve-search")
    assert search.verdict is Verdict.REFUTED
    cx = search.evidence.details["counterexample"]
    assert claim.domain.contains(cx) and cx["eps"] >= 1 and 0 < cx["delta"] < 1
    assert _exact_ratio(cx["eps"], cx["delta"]) > 1
    assert "replay(" in search.evidence.reproduce
    # the textbook point: the audit's lower bound exceeds the claimed eps = 10 (exact: ratio 2.27)
    audit = next(c for c in res.checks if c.name == "audit-eps10")
    assert audit.verdict is Verdict.REFUTED
    (case,) = audit.evidence.details["cases"]
    assert case["eps_audit_lower"] > 10 and _exact_ratio(10.0, 1e-5) > 2
    assert audit.evidence.reproduce.startswith("dptheory audit --algo dpsgd")


def test_cli_from_outside_the_repository_json_and_report(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    cmd = [sys.executable, "-m", "dptheory.cli.main", "verify", "--claims-file", str(FALSE_FILE), "--quick"]
    out = subprocess.run(
        [*cmd, "--json", "--report", str(tmp_path / "rep")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)
    assert row["id"] == "gauss.classical-eps-above-1" and row["verdict"] == "refuted"
    assert row["domain"]["params"]["eps"]["stated"].startswith("[1, inf)")
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "gauss.classical-eps-above-1" in report and "refuted" in report
    assert json.loads((tmp_path / "rep" / "results.json").read_text())
    # --list shows the file's claims
    out = subprocess.run([*cmd[:-1], "--list"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("gauss.classical-eps-above-1\t")


GOOD = """
from dptheory.claims import Check, Claim, Outcome, Verdict

def ok(ctx):
    return Outcome(Verdict.CONFIRMED, "fine", "none", {})

def claim(cid, depends_on=()):
    return Claim(id=cid, paper="mine", location="Thm 1", statement="s", formula="f",
                 assumptions=(), checks=(Check("c", "property", ok),), depends_on=depends_on)
"""

BAD_FILES = {
    "syntax": ("CLAIMS = [\n", "syntax error"),
    "no_claims": ("X = 1\n", "defines no CLAIMS"),
    "wrong_type": ("CLAIMS = 3\n", "must be a list of Claim"),
    "wrong_item": ("CLAIMS = ['a']\n", "not a dptheory.claims.Claim"),
    "empty": ("CLAIMS = []\n", "is empty"),
    "raises": ("import math\nraise RuntimeError('boom')\n", "raised RuntimeError at line 2: boom"),
    "duplicate": (GOOD + "CLAIMS = [claim('a.b'), claim('a.b')]\n", "duplicate claim id 'a.b'"),
    "builtin_id": (GOOD + "CLAIMS = [claim('d2p2.lemma5')]\n", "already a built-in claim"),
    "unknown_premise": (GOOD + "CLAIMS = [claim('a.b', ('x.y',))]\n", "unknown claim 'x.y'"),
    "factory_raises": ("def CLAIMS():\n    raise ValueError('no')\n", "CLAIMS() in"),
    "bad_domain": (
        GOOD + "import dataclasses\nCLAIMS = [dataclasses.replace(claim('a'), domain={'eps': 1})]\n",
        "not a dptheory.claims.Domain",
    ),
    "bad_kind": (GOOD.replace('"property"', '"magic"') + "CLAIMS = [claim('a')]\n", "unknown check kind"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_claims_files_give_one_line_and_exit_2(tmp_path: Path, capsys, name: str) -> None:
    text, expected = BAD_FILES[name]
    f = tmp_path / f"{name}.py"
    f.write_text(text)
    rc = main(["verify", "--claims-file", str(f), "--report", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "--claims-file" in err and expected in err, err
    assert "Traceback" not in err and not (tmp_path / "rep").exists()


@pytest.mark.parametrize("path", ["missing.py", ".", "notpython.txt"])
def test_missing_or_unreadable_paths_exit_2(tmp_path: Path, capsys, path: str) -> None:
    (tmp_path / "notpython.txt").write_text("CLAIMS = []")
    rc = main(["verify", "--claims-file", str(tmp_path / path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--claims-file" in err


def test_user_premises_factory_and_selection(tmp_path: Path, capsys) -> None:
    f = tmp_path / "mine.py"
    f.write_text(GOOD + "def CLAIMS():\n    return [claim('m.lemma'), claim('m.thm', ('m.lemma',))]\n")
    assert main(["verify", "--claims-file", str(f), "--claim", "m.thm", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["verdict"] == "confirmed" and row["depends_on"] == [{"id": "m.lemma", "verdict": "confirmed"}]
    assert "--claims-file" in row["evidence"][0]["reproduce"]
    assert main(["verify", "--claims-file", str(f), "--claim", "nope"]) == 2
    assert "unknown claim id 'nope'" in capsys.readouterr().err


def test_public_api_import_is_light() -> None:
    code = (
        "import sys, dptheory.claims;"
        "bad = [m for m in ('torch', 'sympy', 'matplotlib', 'hypothesis') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_check_returning_garbage_is_a_contained_crash(tmp_path: Path, capsys) -> None:
    f = tmp_path / "garbage.py"
    f.write_text(
        GOOD
        + "def bad(ctx):\n    return 'confirmed'\n"
        + "CLAIMS = [claim('g.ok'), Claim(id='g.bad', paper='mine', location='L', statement='s', formula='f',"
        + " assumptions=(), checks=(Check('c', 'property', bad),))]\n"
    )
    rc = main(["verify", "--claims-file", str(f), "--json"])
    captured = capsys.readouterr()
    rows = {r["id"]: r for r in json.loads(captured.out)}
    assert rc == 1 and "g.bad:c crashed" in captured.err and "Traceback" not in captured.err
    assert rows["g.ok"]["verdict"] == "confirmed" and rows["g.bad"]["verdict"] == "inconclusive"


def test_the_true_examples_check_can_fail_negative_control() -> None:
    """The same deciding check with half the noise allowed (factor >= 0.5) is refuted: the
    confirmation above is not a check that cannot fail."""
    import dataclasses

    from dptheory.claims import Context, Param, search_check

    (claim,) = load_claims_file(TRUE_FILE)
    check = next(c for c in claim.checks if c.name == "exact-curve-search")
    params = tuple(
        Param("factor", "negative control: half the noise", 0.5, 1e3) if p.name == "factor" else p
        for p in claim.domain.params
    )
    weaker = dataclasses.replace(claim.domain, params=params)
    sys.path.insert(0, str(EXAMPLES))
    try:
        from gaussian_exact import delta_ratio, delta_ratio_exact
    finally:
        sys.path.remove(str(EXAMPLES))
    out = search_check(weaker, delta_ratio, exact=delta_ratio_exact)(Context(quick=True))
    assert check.deciding and out.verdict is Verdict.REFUTED
    cx = out.details["counterexample"]
    assert cx["factor"] < 1 and cx["eps"] < 1 and delta_ratio_exact(cx) > 1
