"""Optimizers against numpy implementations of the torch update rules."""

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import nn, optim

RNG = np.random.RandomState(0)
P0 = RNG.randn(3, 4).astype(np.float32)
GRADS = [RNG.randn(3, 4).astype(np.float32) for _ in range(6)]


def run(make_optimizer, grads=GRADS, p0=P0):
    param = nn.Parameter(flow.tensor(p0))
    opt = make_optimizer([param])
    for g in grads:
        param.grad = flow.tensor(g)
        opt.step()
    return param.numpy()


def sgd_reference(
    p, grads, lr, momentum=0.0, dampening=0.0, wd=0.0, nesterov=False, maximize=False
):
    p, buf = p.astype(np.float64), None
    for g in grads:
        g = -g.astype(np.float64) if maximize else g.astype(np.float64)
        if wd:
            g = g + wd * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def adam_reference(
    p, grads, lr, betas=(0.9, 0.999), eps=1e-8, wd=0.0, amsgrad=False, decoupled=False
):
    p = p.astype(np.float64)
    m, v, v_max = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    b1, b2 = betas
    for step, g in enumerate(grads, 1):
        g = g.astype(np.float64)
        if wd and decoupled:
            p = p * (1 - lr * wd)
        elif wd:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        v_max = np.maximum(v_max, v)
        second = v_max if amsgrad else v
        denom = np.sqrt(second) / np.sqrt(1 - b2**step) + eps
        p = p - lr / (1 - b1**step) * m / denom
    return p


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.1, momentum=0.9, dampening=0.3),
        dict(lr=0.05, momentum=0.9, nesterov=True),
        dict(lr=0.1, momentum=0.5, weight_decay=0.01),
        dict(lr=0.1, momentum=0.9, maximize=True),
    ],
)
def test_sgd_matches_numpy(kwargs):
    ref_kwargs = {("wd" if k == "weight_decay" else k): v for k, v in kwargs.items()}
    expected = sgd_reference(P0, GRADS, **ref_kwargs)
    np.testing.assert_allclose(
        run(lambda ps: optim.SGD(ps, **kwargs)), expected, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(lr=0.01),
        dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
        dict(lr=0.01, weight_decay=0.1),
        dict(lr=0.01, amsgrad=True),
    ],
)
@pytest.mark.parametrize("fused", [None, False], ids=["default_fused", "unfused"])
def test_adam_matches_numpy(kwargs, fused):
    ref_kwargs = {("wd" if k == "weight_decay" else k): v for k, v in kwargs.items()}
    expected = adam_reference(P0, GRADS, **ref_kwargs)
    np.testing.assert_allclose(
        run(lambda ps: optim.Adam(ps, fused=fused, **kwargs)), expected, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("kwargs", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.5, amsgrad=True)])
@pytest.mark.parametrize("fused", [None, False], ids=["default_fused", "unfused"])
def test_adamw_decouples_weight_decay_and_defaults_to_0_01(kwargs, fused):
    wd = kwargs.get("weight_decay", 1e-2)
    expected = adam_reference(
        P0, GRADS, lr=0.01, wd=wd, amsgrad=kwargs.get("amsgrad", False), decoupled=True
    )
    np.testing.assert_allclose(
        run(lambda ps: optim.AdamW(ps, fused=fused, **kwargs)), expected, rtol=1e-5, atol=1e-6
    )
    assert optim.AdamW([nn.Parameter(flow.ones(1))]).defaults["weight_decay"] == 1e-2


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64], ids=str)
def test_adams_fused_updates_match_numpy_in_place(dtype):
    r = np.random.default_rng(1)
    x, g, m, v = (r.standard_normal((5, 6)) for _ in range(4))
    v = np.abs(v)
    t = flow.tensor(x, dtype=dtype)
    assert flow._C.adam_moment_(t, flow.tensor(g, dtype=dtype), 0.9) is not None
    np.testing.assert_allclose(t.numpy(), 0.9 * x + 0.1 * g, rtol=1e-6)
    flow._C.adam_moment_(t, flow.tensor(g, dtype=dtype), 0.99, square=True)
    np.testing.assert_allclose(t.numpy(), 0.99 * (0.9 * x + 0.1 * g) + 0.01 * g * g, rtol=1e-5)
    # A transposed (non-contiguous) parameter is updated where it lies.
    p = flow.tensor(x.T.copy(), dtype=dtype).t()
    flow._C.adam_step_(
        p, flow.tensor(m, dtype=dtype), flow.tensor(v, dtype=dtype), 0.99, 0.01, 0.5, 1e-8
    )
    want = x * 0.99 - 0.01 * m / (np.sqrt(v) / 0.5 + 1e-8)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-5, atol=1e-7)


def test_adams_fused_updates_name_the_op_for_mismatched_operands():
    with pytest.raises(RuntimeError, match=r"\[adam_moment_\].*\(3, 4\)"):
        flow._C.adam_moment_(flow.zeros(2, 4), flow.zeros(3, 4), 0.9)
    with pytest.raises(RuntimeError, match=r"\[adam_step_\].*float64"):
        flow._C.adam_step_(
            flow.zeros(2), flow.zeros(2), flow.zeros(2).double(), 1.0, 0.1, 1.0, 1e-8
        )
    with pytest.raises(TypeError, match=r"\[adam_moment_\]"):
        flow._C.adam_moment_(flow.zeros(2, dtype=flow.int64), flow.zeros(2, dtype=flow.int64), 0.9)


def test_param_groups_use_their_own_hyperparameters():
    a, b = nn.Parameter(flow.ones(2)), nn.Parameter(flow.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad, b.grad = flow.ones(2), flow.ones(2)
    opt.step()
    np.testing.assert_allclose(a.numpy(), [0.9, 0.9], rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), [0.5, 0.5], rtol=1e-6)
    assert opt.param_groups[0]["momentum"] == 0.0


def test_add_param_group_fills_defaults():
    opt = optim.Adam([nn.Parameter(flow.ones(1))], lr=0.1)
    opt.add_param_group({"params": nn.Parameter(flow.ones(1)), "lr": 0.2})
    assert [group["lr"] for group in opt.param_groups] == [0.1, 0.2]
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)


def test_parameters_without_grad_are_skipped():
    a, b = nn.Parameter(flow.ones(2)), nn.Parameter(flow.ones(2))
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = flow.ones(2)
    opt.step()
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.0])
    assert a in opt.state and b not in opt.state


def test_zero_grad_sets_to_none_or_zeroes():
    p = nn.Parameter(flow.ones(2))
    opt = optim.SGD([p], lr=0.1)
    p.grad = flow.ones(2)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None


def test_step_calls_the_closure_with_grad_enabled():
    p = nn.Parameter(flow.tensor([3.0]))
    opt = optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx(9.0)
    np.testing.assert_allclose(p.numpy(), [3.0 - 0.1 * 6.0], rtol=1e-6)


def test_training_a_linear_regression_reduces_the_loss():
    flow.manual_seed(0)
    x = flow.tensor(RNG.randn(64, 3).astype(np.float32))
    y = x @ flow.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = nn.Linear(3, 1)
    opt = optim.AdamW(model.parameters(), lr=0.05)
    losses = []
    for _ in range(100):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.01 * losses[0]


def test_state_dict_uses_indices_and_round_trips():
    def make(params):
        return optim.Adam(params, lr=0.01, amsgrad=True)

    param = nn.Parameter(flow.tensor(P0))
    opt = make([param])
    for g in GRADS[:3]:
        param.grad = flow.tensor(g)
        opt.step()
    state = opt.state_dict()
    assert list(state["state"]) == [0]
    assert state["param_groups"][0]["params"] == [0]
    assert set(state["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}

    clone = nn.Parameter(flow.tensor(param.numpy().copy()))
    resumed = make([clone])
    resumed.load_state_dict(state)
    for g in GRADS[3:]:
        param.grad, clone.grad = flow.tensor(g), flow.tensor(g)
        opt.step()
        resumed.step()
    np.testing.assert_allclose(clone.numpy(), param.numpy(), rtol=1e-6)
    np.testing.assert_allclose(
        param.numpy(), adam_reference(P0, GRADS, lr=0.01, amsgrad=True), rtol=1e-5, atol=1e-6
    )


def test_load_state_dict_restores_hyperparameters_and_copies_state():
    p = nn.Parameter(flow.ones(2))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = flow.ones(2)
    opt.step()
    state = opt.state_dict()
    other = optim.SGD([nn.Parameter(flow.ones(2))], lr=1.0, momentum=0.9)
    other.load_state_dict(state)
    assert other.param_groups[0]["lr"] == 0.1
    buf = next(iter(other.state.values()))["momentum_buffer"]
    with flow.no_grad():
        buf.fill_(5.0)
    np.testing.assert_array_equal(opt.state[p]["momentum_buffer"].numpy(), [1.0, 1.0])


def test_load_state_dict_rejects_mismatched_groups():
    opt = optim.SGD([nn.Parameter(flow.ones(1)), nn.Parameter(flow.ones(1))], lr=0.1)
    state = opt.state_dict()
    with pytest.raises(ValueError, match="parameter group"):
        optim.SGD([nn.Parameter(flow.ones(1))], lr=0.1).load_state_dict(state)
    groups = [{"params": [nn.Parameter(flow.ones(1))]}, {"params": [nn.Parameter(flow.ones(1))]}]
    two_groups = optim.SGD(groups, lr=0.1)
    with pytest.raises(ValueError, match="parameter groups"):
        two_groups.load_state_dict(state)


def test_invalid_arguments_raise_value_error():
    p = [nn.Parameter(flow.ones(1))]
    with pytest.raises(ValueError):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError):
        optim.SGD(p, lr=-1.0)
    with pytest.raises(ValueError):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.Adam(p, betas=(1.0, 0.999))
    with pytest.raises(ValueError):
        optim.SGD([{"params": p}, {"params": p}], lr=0.1)
    with pytest.raises(TypeError):
        optim.SGD(p[0], lr=0.1)


def test_clip_grad_norm_scales_all_grads_jointly():
    a, b = nn.Parameter(flow.zeros(2)), nn.Parameter(flow.zeros(1))
    a.grad, b.grad = flow.tensor([3.0, 0.0]), flow.tensor([4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [0.8], rtol=1e-5)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=10.0, norm_type="inf")
    assert total.item() == pytest.approx(0.8, rel=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [0.8], rtol=1e-5)


def test_clip_grad_value_clamps_each_element():
    p = nn.Parameter(flow.zeros(3))
    p.grad = flow.tensor([-2.0, 0.5, 3.0])
    nn.utils.clip_grad_value_([p], 1.0)
    np.testing.assert_allclose(p.grad.numpy(), [-1.0, 0.5, 1.0])


def _one_param_step(group, opt_cls=flow.optim.SGD, **kwargs):
    p = flow.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = opt_cls([{"params": [p], **group}], **kwargs)
    p.grad = flow.tensor([3.0, 4.0, 0.0])
    opt.step()
    return p.detach().numpy()


def test_lr_scale_multiplies_the_groups_learning_rate():
    np.testing.assert_allclose(_one_param_step({"lr_scale": 0.5}, lr=0.1), [0.85, -2.2, 3.0])
    np.testing.assert_allclose(_one_param_step({"lr_scale": 0.0}, lr=0.1), [1.0, -2.0, 3.0])
    scaled = _one_param_step({"lr_scale": 0.5}, flow.optim.Adam, lr=0.2)
    np.testing.assert_allclose(scaled, _one_param_step({}, flow.optim.Adam, lr=0.1))


def test_a_groups_clip_grad_max_norm_clips_before_the_step():
    # |(3, 4, 0)| = 5, clipped to 1: the gradient becomes (0.6, 0.8, 0).
    got = _one_param_step({"clip_grad_max_norm": 1.0, "clip_grad_norm_type": 2.0}, lr=1.0)
    np.testing.assert_allclose(got, [0.4, -2.8, 3.0], rtol=1e-5)
    got = _one_param_step({"clip_grad_max_norm": 2.0, "clip_grad_norm_type": "inf"}, lr=1.0)
    np.testing.assert_allclose(got, [-0.5, -4.0, 3.0], rtol=1e-5)


def test_explicit_clip_grad_then_step_clips_once():
    p = flow.tensor([0.0, 0.0], requires_grad=True)
    opt = flow.optim.SGD([{"params": [p], "clip_grad_max_norm": 1.0}], lr=1.0)
    p.grad = flow.tensor([3.0, 4.0])
    opt.clip_grad()
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [-0.6, -0.8], rtol=1e-5)


def test_adam_without_bias_correction_takes_oneflows_step():
    # m = 0.1 g, v = 0.001 g^2: the step is lr * m / (sqrt(v) + eps) = lr * 0.1 / sqrt(0.001).
    got = _one_param_step({}, flow.optim.Adam, lr=0.1, eps=1e-12, do_bias_correction=False)
    step = 0.1 * 0.1 / np.sqrt(0.001)
    np.testing.assert_allclose(got, [1.0 - step, -2.0 - step, 3.0], rtol=1e-5)


@pytest.mark.parametrize(
    "opt_cls,key",
    [
        (flow.optim.Adam, "momentum"),
        (flow.optim.SGD, "betas"),
        (flow.optim.SGD, "do_bias_correction"),
    ],
)
def test_a_group_key_the_optimizer_would_ignore_raises_naming_it(opt_cls, key):
    p = flow.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=f"'{key}'"):
        opt_cls([{"params": [p], key: 0.5}], lr=0.1)


def test_a_groups_own_metadata_is_kept():
    p = flow.tensor([1.0], requires_grad=True)
    opt = flow.optim.SGD([{"params": [p], "name": "decoder", "param_names": ["w"]}], lr=0.1)
    assert opt.param_groups[0]["name"] == "decoder"


@pytest.mark.parametrize("dtype", [flow.float16, flow.bfloat16], ids=str)
@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW], ids=lambda c: c.__name__)
def test_master_weights_update_a_float32_copy_and_round_it_into_the_parameter(dtype, cls):
    """The float32 master copy follows the float32 update rule from the parameter's rounded
    start (it never sees the low-precision rounding of its own steps); the parameter is the
    copy rounded."""
    start = flow.tensor(P0).to(dtype).float().numpy()
    param = nn.Parameter(flow.tensor(P0).to(dtype))
    opt = cls([param], lr=1e-3, weight_decay=0.01, master_weights=True)
    for g in GRADS:
        param.grad = flow.tensor(g).to(dtype)
        opt.step()
    state = opt.state[param]
    assert {k: v.dtype for k, v in state.items() if k != "step"} == dict.fromkeys(
        ("exp_avg", "exp_avg_sq", "master"), flow.float32
    )
    grads_seen = [flow.tensor(g).to(dtype).float().numpy() for g in GRADS]
    expected = adam_reference(start, grads_seen, lr=1e-3, wd=0.01, decoupled=cls is optim.AdamW)
    np.testing.assert_allclose(state["master"].numpy(), expected, rtol=1e-5, atol=1e-6)
    assert param.dtype == dtype
    np.testing.assert_array_equal(param.float().numpy(), state["master"].to(dtype).float().numpy())


def test_master_weights_leave_float32_parameters_as_they_are():
    param = nn.Parameter(flow.tensor(P0))
    opt = optim.AdamW([param], lr=0.01, master_weights=True)
    param.grad = flow.tensor(GRADS[0])
    opt.step()
    assert "master" not in opt.state[param]
    np.testing.assert_allclose(
        param.numpy(), adam_reference(P0, GRADS[:1], lr=0.01, wd=0.01, decoupled=True), rtol=1e-5
    )


def test_master_weights_stay_float32_through_a_state_dict_round_trip():
    param = nn.Parameter(flow.tensor(P0).half())
    opt = optim.Adam([param], lr=0.01, master_weights=True)
    param.grad = flow.tensor(GRADS[0]).half()
    opt.step()
    again = optim.Adam([param], lr=0.01, master_weights=True)
    again.load_state_dict(opt.state_dict())
    state = again.state[param]
    assert {state[k].dtype for k in ("exp_avg", "exp_avg_sq", "master")} == {flow.float32}
    np.testing.assert_array_equal(state["master"].numpy(), opt.state[param]["master"].numpy())
    plain = optim.Adam([param], lr=0.01)  # states follow the parameter without master weights
    plain.load_state_dict(opt.state_dict())
    assert plain.state[param]["exp_avg"].dtype == flow.float16


def test_master_weights_train_the_same_in_a_graph_as_eagerly():
    class Step(flow.nn.Graph):
        def __init__(self, model, opt):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.model(x).float().square().mean()
            loss.backward()
            return loss

    flow.manual_seed(0)
    eager = nn.Linear(8, 4).bfloat16()
    traced = nn.Linear(8, 4).bfloat16()
    traced.load_state_dict(eager.state_dict())
    opt = optim.AdamW(eager.parameters(), lr=0.01, master_weights=True)
    step = Step(traced, optim.AdamW(traced.parameters(), lr=0.01, master_weights=True))
    x = flow.tensor(RNG.randn(16, 8).astype(np.float32)).bfloat16()
    for _ in range(3):
        opt.zero_grad()
        eager(x).float().square().mean().backward()
        opt.step()
        step(x)
    for a, b in zip(eager.parameters(), traced.parameters()):
        np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: optim.AdamW(ps, lr=0.1),
        lambda ps: optim.Adam(ps, lr=0.1, amsgrad=True),
        lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    ],
)
def test_elementwise_optimizers_update_a_global_parameters_shard_as_the_local_one(make):
    """Adam, AdamW and SGD step a global parameter on its shard where its gradient and states
    share its layout (Optimizer._on_shards): the same numbers as the local parameter, and the
    states stay global in the parameter's layout."""
    place = flow.placement("cpu", ranks=[0])
    local = nn.Parameter(flow.tensor(P0))
    glob = nn.Parameter(flow.tensor(P0).to_global(place, flow.sbp.broadcast))
    opts = [make([local]), make([glob])]
    assert opts[1]._on_shards(glob, glob, {}) is not None
    for g in GRADS:
        local.grad = flow.tensor(g)
        glob.grad = flow.tensor(g).to_global(place, flow.sbp.broadcast)
        for opt in opts:
            opt.step()
    np.testing.assert_allclose(glob.numpy(), local.numpy(), rtol=1e-6, atol=1e-6)
    for value in opts[1].state[glob].values():
        if isinstance(value, flow.Tensor) and value.dim() > 0:
            assert value.is_global and value.sbp == glob.sbp


def test_an_update_runs_on_global_tensors_where_the_layouts_differ():
    """A gradient in another layout than its parameter's (or an optimizer that is not
    elementwise) keeps the update on the global tensors."""
    place = flow.placement("cpu", ranks=[0])
    w = nn.Parameter(flow.tensor(P0).to_global(place, flow.sbp.broadcast))
    split = flow.tensor(GRADS[0]).to_global(place, flow.sbp.split(0))
    assert optim.AdamW([w])._on_shards(w, split, {}) is None
    assert optim.Adagrad([w])._on_shards(w, w, {}) is None
