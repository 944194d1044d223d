"""Graph.set_grad_scaler: loss scaling inside the graph's step matches eager training with the
same scaler, step for step: the same losses, parameters and scales, overflowing steps skipped."""

import numpy as np
import pytest

import oneflowlike as flow


def train(graph_mode, dtype, scaler, steps=6, poisoned=(), optimizer="adam"):
    """(losses, scales after each step, final parameters) of a small MLP trained under autocast
    in `dtype` with `scaler` on one batch; the steps in `poisoned` get an inf input (their
    gradients overflow)."""
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(8, 16), flow.nn.ReLU(), flow.nn.Linear(16, 2))
    if optimizer == "adam":
        opt = flow.optim.Adam(model.parameters(), lr=0.01)
    else:
        opt = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    x0, y0 = rng.standard_normal((4, 8)), rng.standard_normal((4, 2))
    xs = [x0.astype(np.float32) for _ in range(steps)]
    ys = [y0.astype(np.float32) for _ in range(steps)]
    for i in poisoned:
        xs[i][0, 0] = np.inf

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            self.set_grad_scaler(scaler)
            self.config.enable_amp(True, dtype=dtype)

        def build(self, x, y):
            loss = ((self.model(x).float() - y) ** 2).mean()
            loss.backward()
            return loss

    step = Step()
    losses, scales = [], []
    for x, y in zip(xs, ys):
        x, y = flow.tensor(x), flow.tensor(y)
        if graph_mode:
            loss = step(x, y)
        else:
            with flow.autocast("cpu", dtype=dtype):
                loss = ((model(x).float() - y) ** 2).mean()
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        losses.append(float(loss.numpy()))
        scales.append(scaler.get_scale())
    return losses, scales, [p.numpy().copy() for p in model.parameters()]


def same(eager, graph):
    np.testing.assert_allclose(graph[0], eager[0], rtol=1e-6)
    assert graph[1] == eager[1]
    for a, b in zip(eager[2], graph[2]):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [flow.bfloat16, flow.float16])
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_graph_with_a_grad_scaler_trains_as_eager_and_grows_the_scale(dtype, optimizer):
    def scaler():
        return flow.amp.GradScaler(init_scale=2.0**10, growth_interval=2)

    eager = train(False, dtype, scaler(), optimizer=optimizer)
    graph = train(True, dtype, scaler(), optimizer=optimizer)
    same(eager, graph)
    assert graph[1] == [1024.0, 2048.0, 2048.0, 4096.0, 4096.0, 8192.0]
    assert graph[0][-1] < graph[0][0]  # it learns


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_an_overflowing_step_is_skipped_and_backs_off_in_graph_and_eager(optimizer):
    def scaler():
        return flow.amp.GradScaler(init_scale=2.0**10, growth_interval=2)

    eager = train(False, flow.bfloat16, scaler(), poisoned=[2], optimizer=optimizer)
    graph = train(True, flow.bfloat16, scaler(), poisoned=[2], optimizer=optimizer)
    assert np.isnan(graph[0][2]) and np.isnan(eager[0][2])
    same(eager, graph)
    assert graph[1] == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0, 2048.0]  # halved, then grows
    # Skipped: the parameters after step 3 are those after step 2 (Adam's step count too).
    two = train(True, flow.bfloat16, scaler(), steps=2, optimizer=optimizer)
    three = train(True, flow.bfloat16, scaler(), steps=3, poisoned=[2], optimizer=optimizer)
    for a, b in zip(two[2], three[2]):
        np.testing.assert_array_equal(a, b)


def test_a_float16_scale_too_large_overflows_backs_off_and_matches_eager():
    """2**24 overflows float16's backward (its largest value is 65504): those steps are skipped
    and the scale halves each time until the gradients fit, in both modes alike."""

    def scaler():
        return flow.amp.GradScaler(init_scale=2.0**24, growth_interval=100)

    eager = train(False, flow.float16, scaler(), steps=12)
    graph = train(True, flow.float16, scaler(), steps=12)
    same(eager, graph)
    assert graph[1][:3] == [2.0**23, 2.0**22, 2.0**21]  # skipped, halved
    assert graph[1][-1] == graph[1][-2] == 2.0**17  # then the gradients fit
    assert all(np.isfinite(p).all() for p in graph[2])


def test_a_static_grad_scaler_scales_without_skipping():
    eager = train(False, flow.float16, flow.amp.StaticGradScaler(128.0))
    graph = train(True, flow.float16, flow.amp.StaticGradScaler(128.0))
    same(eager, graph)
    assert graph[1] == [128.0] * 6


def test_set_grad_scaler_checks_its_argument_and_a_disabled_scaler_changes_nothing():
    class Step(flow.nn.Graph):
        def build(self, x):
            return x

    with pytest.raises(TypeError, match=r"set_grad_scaler expects a flow.amp.GradScaler"):
        Step().set_grad_scaler(2.0**16)
    with pytest.raises(ValueError, match=r"StaticGradScaler\] scale_factor must be > 0, got 0"):
        flow.amp.StaticGradScaler(0)
    plain = train(True, flow.bfloat16, flow.amp.GradScaler(enabled=False))
    assert plain[1] == [1.0] * 6
