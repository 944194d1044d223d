"""nn.Graph's config.enable_cudagraph (graph/capture.h): a compiled CUDA step captured at its
second call and replayed after, training as the uncaptured step does; the steps that cannot be
captured say why and run as they are; on the CPU the setting changes nothing."""

import warnings

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn as nn

cuda = pytest.mark.gpu  # conftest.py skips it, saying why, without a GPU


class Step(nn.Graph):
    def __init__(self, model, opt, captured):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        self.config.enable_cudagraph(captured)

    def build(self, x, y):
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss


def train(device, captured, steps=4):
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).to(device)
    step = Step(model, flow.optim.AdamW(model.parameters(), lr=1e-2), captured)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        x = flow.tensor(rng.standard_normal((32, 8)), dtype=flow.float32, device=device)
        y = flow.tensor(rng.standard_normal((32, 4)), dtype=flow.float32, device=device)
        losses.append(step(x, y).item())
    return step, losses, [p.numpy() for p in model.parameters()]


def test_on_the_cpu_the_setting_changes_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, captured, captured_params = train("cpu", True)
    _, plain, plain_params = train("cpu", False)
    assert captured == plain
    for a, b in zip(captured_params, plain_params):
        np.testing.assert_array_equal(a, b)


def test_a_step_that_cannot_be_captured_says_why():
    class Noisy(nn.Graph):
        def build(self, x):
            return nn.functional.dropout(x, 0.5) * 2

    noisy = Noisy()
    x = flow.randn(4)
    noisy(x)
    assert "dropout draws random numbers" in noisy._last.why_not_captured([x])

    class Plain(nn.Graph):
        def build(self, x):
            return x * 2

    plain = Plain()
    plain(x)
    assert plain._last.why_not_captured([x]) == (
        "mul computes (4,) float32 cpu off the device, which a replay would not run again"
    )


@cuda
def test_a_captured_cuda_step_trains_as_the_uncaptured_one():
    step, captured, captured_params = train("cuda", True, steps=5)
    assert all(isinstance(v, flow._C.CapturedStep) for v in step._captured.values())
    _, plain, plain_params = train("cuda", False, steps=5)
    np.testing.assert_allclose(captured, plain, rtol=1e-6)
    for a, b in zip(captured_params, plain_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@cuda
def test_a_cuda_step_with_random_draws_runs_uncaptured_with_one_warning():
    class Noisy(nn.Graph):
        def __init__(self):
            super().__init__()
            self.config.enable_cudagraph(True)

        def build(self, x):
            return nn.functional.dropout(x, 0.5) * 2

    noisy = Noisy()
    x = flow.ones(1000, device="cuda")
    with pytest.warns(UserWarning, match="runs uncaptured: dropout draws random numbers"):
        first = noisy(x)
    assert not np.array_equal(first.numpy(), noisy(x).numpy())  # fresh draws each call
