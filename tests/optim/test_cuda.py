"""The CUDA path (skipped cleanly without a GPU): same algorithms, all state on the GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytestmark = [
    pytest.mark.cuda_only,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.fixture(scope="module")
def quad():
    from dptheory.problems import get_problem

    return get_problem("quadratic", d=6, n_samples=32)


def _all_on_cuda(opt):
    tensors = list(opt.params.values()) + list(getattr(opt, "data", {}).values())
    tensors += list(getattr(opt, "e", {}).values())
    return all(t.device.type == "cuda" for t in tensors)


@pytest.mark.parametrize("cls", ["DPSGD", "DiceSGD", "D2P2SGD"])
def test_state_lives_on_cuda_and_matches_cpu_without_noise(quad, cls):
    from dptheory import optim

    kw = dict(lr=0.2, sample_rate=1.0, noise_multiplier=0.0)
    if cls == "D2P2SGD":
        kw.update(projection="none")
    gpu = getattr(optim, cls)(quad.x0, quad.loss_fn, quad.data, device="cuda", **kw)
    cpu = getattr(optim, cls)(quad.x0, quad.loss_fn, quad.data, device="cpu", **kw)
    assert gpu.device.type == "cuda" and _all_on_cuda(gpu)
    for _ in range(20):
        gpu.step()
        cpu.step()
    np.testing.assert_allclose(quad.flat(gpu.params), quad.flat(cpu.params), atol=1e-10)


def test_cuda_noise_statistics_and_seed(quad):
    from dptheory import optim

    def run(seed):
        o = optim.DPSGD(
            quad.x0,
            quad.loss_fn,
            quad.data,
            lr=1e-3,
            noise_multiplier=2.0,
            sample_rate=0.5,
            c=1.0,
            device="cuda",
            seed=seed,
        )
        ws = []
        for _ in range(200):
            o.step()
            ws.append(o.last_noise["x"].cpu().numpy())
        return np.concatenate(ws), quad.flat(o.params)

    w, xa = run(1)
    _, xb = run(1)
    assert abs(w.std() - 2.0) < 0.1
    np.testing.assert_array_equal(xa, xb)  # same seed, same device: identical


def test_runner_auto_picks_cuda():
    from dptheory import runner

    r = runner.run("clip21sgd2m", "stochastic-quadratic", steps=20, device="auto")
    assert r.settings.device == "cuda"
