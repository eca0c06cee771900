"""Every option that belongs to another algorithm is one error line naming it, for every algorithm.

Found by the long fuzz profile: ``--schedule-rho`` and ``--projection-sigma-max`` were silently
accepted by ``dpsgd``, ``dicesgd`` and ``clip21sgd2m``, where they do nothing.  The table below
is the specification: an option outside an algorithm's groups must be refused (exit 2, one
``error:`` line that names it), whatever the option.  (``--steps`` is ``clip21sgd2m``'s alias for
``--rounds``, so it is not foreign there.)"""

from __future__ import annotations

import pytest

from dptheory.cli.main import main

GROUPS: dict[str, list[tuple[str, str]]] = {
    "schedule+projection": [
        ("--schedule", "constant"),
        ("--schedule-file", "SCHEDULE_FILE"),
        ("--schedule-rho", "2"),
        ("--projection-dim", "10"),
        ("--model-dim", "100"),
        ("--projection", "fixed"),
        ("--projection-sigma-max", "2"),
        ("--evaluation", "exact"),
    ],
    "federated": [("--clients", "3"), ("--tau", "1"), ("--rounds", "5")],
    "error-feedback": [
        ("--c2", "2"),
        ("--grad-bound", "3"),
        ("--max-noise-ratio", "2"),
        ("--residual-clip", "0.5"),
        ("--clip-mode", "flat"),
    ],
    "subsampling": [
        ("--sample-rate", "0.01"),
        ("--batch-size", "100"),
        ("--dataset-size", "10000"),
        ("--steps", "100"),
        ("--epochs", "2"),
    ],
    "clipping": [("--c1", "1"), ("--max-grad-norm", "1")],
}
OWN = {
    "dpsgd": {"subsampling", "clipping"},
    "dicesgd": {"subsampling", "clipping", "error-feedback"},
    "clip21sgd2m": {"federated"},
    "d2psgd": {"subsampling", "schedule+projection"},
    "d2p2sgd": {"subsampling", "schedule+projection"},
    "dp2sgd": {"subsampling", "schedule+projection"},
}
ALIASES = {("clip21sgd2m", "--steps")}

CASES = [
    (algo, flag, value)
    for algo, own in OWN.items()
    for group, options in GROUPS.items()
    if group not in own
    for flag, value in options
    if (algo, flag) not in ALIASES
]


@pytest.mark.parametrize("cmd", ["epsilon", "calibrate"])
def test_every_foreign_option_is_one_line_naming_it(cmd, tmp_path, capsys):
    schedule = tmp_path / "schedule.txt"
    schedule.write_text("1.0\n0.9\n")
    target = ["--noise-multiplier", "2"] if cmd == "epsilon" else ["--eps", "2"]
    accepted = []
    for algo, flag, value in CASES:
        value = str(schedule) if value == "SCHEDULE_FILE" else value
        rc = main([cmd, "--algo", algo, *target, "--delta", "1e-5", flag, value])
        out, err = capsys.readouterr()
        errors = [ln for ln in err.splitlines() if "error:" in ln]
        if rc != 2 or len(errors) != 1 or flag not in errors[0] or "Traceback" in err:
            accepted.append(f"{cmd} --algo {algo} {flag} {value}: rc={rc} {errors[:1]}")
    assert not accepted, "\n".join(accepted)
