"""The table's batch size B = qN (derived when --sample-rate is given) is rounded down, like q.

It was printed to the nearest 6 digits: q = 0.3333333333, N = 50000 showed B = 16666.7, and
rerunning with that B and N (q = 0.333334) gave epsilon 27.599324 > the reported 27.599260.
"""

from __future__ import annotations

import json

from dptheory.cli.main import main

BASE = ["epsilon", "--algo", "dpsgd", "--noise-multiplier", "1", "--delta", "1e-5", "--steps", "100"]


def _run(capsys, argv):
    assert main(argv) == 0
    return capsys.readouterr().out


def test_printed_batch_size_reruns_within_the_reported_epsilon(capsys):
    argv = BASE + ["--sample-rate", "0.3333333333", "--dataset-size", "50000"]
    text = _run(capsys, argv)
    row = next(line for line in text.splitlines() if line.strip().startswith("batch size "))
    b = row.split()[-1]
    assert float(b) <= 0.3333333333 * 50000
    reported = json.loads(_run(capsys, argv + ["--json"]))["epsilon"]
    again = json.loads(_run(capsys, BASE + ["--batch-size", b, "--dataset-size", "50000", "--json"]))
    assert again["epsilon"] <= reported


def test_exact_batch_size_is_shown_as_is(capsys):
    text = _run(capsys, BASE + ["--sample-rate", "0.01", "--dataset-size", "50000"])
    assert any(line.split() == ["batch", "size", "500"] for line in text.splitlines())
