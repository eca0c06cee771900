"""The base install (numpy, scipy, dp-accounting, tqdm) calibrates; commands needing an extra name it.

The CLI runs in a child process whose import system refuses the optional modules, as on a machine
with only ``pip install -e .``: calibration must succeed without even trying to import them, and a
command that needs torch must stop with one line naming the extra (exit 2).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tomllib

import pytest

from dptheory import extras
from dptheory.cli import epsilon_cmd
from dptheory.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPTIONAL = ("torch", "sympy", "matplotlib", "sklearn", "opacus", "flwr", "hypothesis", "mpmath")

_CHILD = """
import json, sys
BLOCKED = set({blocked!r})
preloaded = sorted(m for m in sys.modules if m.partition('.')[0] in BLOCKED)
tried = []

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in BLOCKED:
            tried.append(name)
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
from dptheory.cli.main import main
rc = main({argv!r})
sys.stdout.flush()
sys.stderr.write(json.dumps([rc, preloaded, sorted(set(tried))]) + "\\n")
"""


def _run_blocked(argv: list[str], blocked=OPTIONAL) -> tuple[int, str, list[str], list[str], list[str]]:
    """(exit status, stdout, stderr lines, optional modules loaded before the CLI, imports refused)."""
    code = _CHILD.format(blocked=tuple(blocked), argv=argv)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    *err, last = out.stderr.strip().splitlines()
    rc, preloaded, tried = json.loads(last)
    return rc, out.stdout, err, preloaded, tried


#: the README's card command, run here once for both checks
CARD = ["calibrate", "--eps", "2", "--delta", "1e-5", "--algo", "dicesgd"]


def test_calibrate_runs_without_any_optional_module() -> None:
    """The README's card command on a base install prints exactly the output the README shows
    (this fresh process is also tests/project/test_readme_examples.py's check of the card)."""
    from tools import readme_examples as rx

    rc, stdout, err, preloaded, tried = _run_blocked(CARD)
    assert (rc, err, preloaded, tried) == (0, [], [], [])
    assert "noise multiplier z  52466.9961" in stdout
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (card,) = [e for e in rx.examples(readme) if e.code == "dptheory " + " ".join(CARD)]
    assert card.expected.strip(), "the README shows no output for the card's command"
    assert rx.same(card.expected, stdout), "README card drifted (python -m tools.readme_examples --write)"


def test_run_without_torch_names_the_extra_in_one_line() -> None:
    rc, stdout, err, _, _ = _run_blocked(["run", "--algo", "dpsgd", "--problem", "quadratic"])
    assert rc == 2 and stdout == ""
    assert err == ["dptheory run: error: torch is not installed: pip install 'dptheory[torch]'"]


def test_verify_without_its_extras_stops_before_any_claim_runs() -> None:
    rc, stdout, err, _, tried = _run_blocked(
        ["verify", "--claim", "dicesgd.thm3.6"], blocked=("sympy", "hypothesis")
    )
    assert rc == 2 and stdout == ""
    want = "dptheory verify: error: sympy and hypothesis are not installed: pip install 'dptheory[verify]'"
    assert err == [want]
    assert tried == ["hypothesis", "sympy"]  # looked up by require_extra, nothing imported them first


def test_a_deeper_optional_import_still_names_the_extra(monkeypatch, capsys) -> None:
    def needs_sympy(args):
        raise ModuleNotFoundError("No module named 'sympy'", name="sympy.core")

    monkeypatch.setattr(epsilon_cmd, "run", needs_sympy)
    assert main(["epsilon", "--algo", "dpsgd", "--noise-multiplier", "1.1", "--delta", "1e-5"]) == 2
    err = capsys.readouterr().err
    assert err == "dptheory epsilon: error: sympy is not installed: pip install 'dptheory[verify]'\n"


def test_a_missing_package_module_is_not_disguised_as_an_extra(monkeypatch) -> None:
    def broken(args):
        raise ModuleNotFoundError("No module named 'accounting.gone'", name="accounting.gone")

    monkeypatch.setattr(epsilon_cmd, "run", broken)
    with pytest.raises(ModuleNotFoundError, match="accounting.gone"):
        main(["epsilon", "--algo", "dpsgd", "--noise-multiplier", "1.1", "--delta", "1e-5"])


def test_require_extra_lists_every_missing_module_and_their_extras(monkeypatch) -> None:
    with pytest.raises(KeyError):
        extras.require_extra("numpy")  # not optional: a programming error, not an extra to install
    monkeypatch.setitem(extras.EXTRA_OF, "no_such_module_x1", "opacus")
    monkeypatch.setitem(extras.EXTRA_OF, "no_such_module_x2", "flower")
    with pytest.raises(extras.MissingExtra) as info:
        extras.require_extra("no_such_module_x1", "no_such_module_x2")
    want = "no_such_module_x1 and no_such_module_x2 are not installed: pip install 'dptheory[flower,opacus]'"
    assert str(info.value) == want


def test_pyproject_base_is_light_and_every_extra_exists() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {d.split(">")[0].split("=")[0].split("<")[0].strip() for d in project["dependencies"]}
    assert base == {"numpy", "scipy", "dp-accounting", "tqdm"}
    optional = project["optional-dependencies"]
    assert set(extras.EXTRA_OF.values()) <= set(optional)
    assert "torch==2.13.0" in optional["test"]  # the CPU wheel CI installs
    assert "dptheory[all]" in optional["test"]
    assert optional["all"] == ["dptheory[torch,verify,figures,opacus]"]
