"""``run --backend flower`` without starting Flower: the runner's public entry point, dropouts
drawn from the seed, per-seed reports, and the option refusals (one stderr line, exit 2)."""

from __future__ import annotations

import numpy as np
import pytest

from accounting.errors import InvalidParameter
from dptheory.integrations.flower.backend import (
    ClientPrivacy,
    FlowerReport,
    check_flower_options,
    dropout_spec,
    render_report,
)


def test_run_from_iterates_records_what_the_runner_records() -> None:
    """Replaying the in-process optimizer's own iterates gives the in-process run's metrics."""
    pytest.importorskip("torch")
    from dptheory import runner
    from dptheory.integrations.flower.backend import flower_config, reference_iterates
    from dptheory.problems import get_problem

    popts = {"clients": 3, "d": 4}
    opts = dict(steps=5, noise_multiplier=1.5, seeds=1, seed=4)
    want = runner.run(
        "clip21sgd2m", "stochastic-quadratic", problem_options=popts, engine="reference", **opts
    )
    prob = get_problem("stochastic-quadratic", **popts)
    s = runner.settings_for("clip21sgd2m", "stochastic-quadratic", defaults=prob, **opts)
    xs = reference_iterates(flower_config(s, "stochastic-quadratic", popts, 1.5, 3, 4))
    got = runner.run_from_iterates(xs, prob, s, want.fixed_point, 4)
    assert got.metrics == want.runs[0].metrics
    assert np.array_equal(got.x, want.runs[0].x)
    with pytest.raises(ValueError, match="expected 6 iterates"):
        runner.run_from_iterates(xs[:-1], prob, s, want.fixed_point, 4)


def test_dropout_spec_is_seeded_and_has_the_rate() -> None:
    a = dropout_spec(0.3, 10, 200, seed=1)
    assert a == dropout_spec(0.3, 10, 200, seed=1) and a != dropout_spec(0.3, 10, 200, seed=2)
    pairs = [tuple(map(int, p.split(":"))) for p in a.split(",")]
    assert all(0 <= i < 10 and 1 <= t <= 200 for i, t in pairs) and len(set(pairs)) == len(pairs)
    assert abs(len(pairs) / 2000 - 0.3) < 0.04  # 2000 Bernoulli(0.3): sd 0.01
    assert dropout_spec(0.0, 10, 200, seed=1) == ""


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan")])
def test_dropout_rate_refused(bad: float) -> None:
    with pytest.raises(InvalidParameter, match="--dropout-rate"):
        check_flower_options("clip21sgd2m", runtime="deployment", device="cpu", dropout_rate=bad)


def test_dropout_rate_needs_the_flower_backend(capsys) -> None:
    from dptheory.cli.main import main

    rc = main(["run", "--algo", "clip21sgd2m", "--problem", "quadratic", "--dropout-rate", "0.2"])
    assert rc == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--dropout-rate" in lines[0]


def test_report_shows_every_seed_rounded_up() -> None:
    eps = 4.7285141234
    rep = FlowerReport(runtime="deployment", clients=2, wall_s=[1.0, 2.0], delta=1e-5, dropout_rate=0.25)
    rep.per_seed = [
        (0, [ClientPrivacy(0, 3, eps), ClientPrivacy(1, 2, 1.0)]),
        (1, [ClientPrivacy(0, 1, 0.5)]),
    ]
    text = render_report(rep)
    assert " seed 0:" in text and " seed 1:" in text and "probability 0.25" in text
    assert "epsilon 4.72852" in text  # 4.728514... printed rounded up
    js = rep.to_json()
    assert [s["seed"] for s in js["per_seed"]] == [0, 1] and js["per_client"][0]["messages"] == 3
