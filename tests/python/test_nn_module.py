"""nn.Module mechanics: registration, iteration, modes, state_dict, repr, conversion."""

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.scale = nn.Parameter(flow.ones(4))
        self.register_buffer("steps", flow.zeros(1))
        self.register_buffer("cache", flow.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc(x) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 2, bias=False)

    def forward(self, x):
        return self.head(self.block(x))


def test_parameter_shares_data_and_requires_grad_by_default():
    data = flow.zeros(2, 3)
    param = nn.Parameter(data)
    assert isinstance(param, flow.Tensor)
    assert param.requires_grad and param.is_leaf
    assert param.shape == (2, 3)
    with flow.no_grad():
        param.fill_(2.0)
    np.testing.assert_array_equal(data.numpy(), np.full((2, 3), 2.0, np.float32))
    assert not nn.Parameter(data, requires_grad=False).requires_grad


def test_parameter_of_a_non_leaf_is_a_detached_leaf():
    x = flow.ones(3, requires_grad=True)
    param = nn.Parameter(x * 2)
    assert param.is_leaf and param.grad_fn is None and param.requires_grad


def test_parameter_repr_says_parameter_containing():
    assert repr(nn.Parameter(flow.ones(2))).startswith("Parameter containing:\n")


def test_parameters_are_hashable_by_identity():
    a, b = nn.Parameter(flow.ones(2)), nn.Parameter(flow.ones(2))
    assert len({a, b, a}) == 2


def test_setattr_registers_parameters_buffers_and_submodules_in_order():
    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["block.scale", "block.fc.weight", "block.fc.bias", "head.weight"]
    assert [name for name, _ in net.named_buffers()] == ["block.steps", "block.cache"]
    assert [name for name, _ in net.named_children()] == ["block", "head"]
    modules = [name for name, _ in net.named_modules()]
    assert modules == ["", "block", "block.fc", "head"]
    assert len(list(net.parameters(recurse=False))) == 0
    assert len(list(net.modules())) == 4


def test_shared_parameter_is_listed_once():
    net = nn.Module()
    net.a = nn.Linear(2, 2)
    net.b = net.a
    assert len(list(net.parameters())) == 2
    assert len(list(net.named_parameters(remove_duplicate=False))) == 4


def test_plain_attribute_tensor_is_not_registered():
    net = nn.Module()
    net.t = flow.ones(2)
    assert list(net.parameters()) == [] and list(net.buffers()) == []


def test_assigning_a_tensor_to_a_parameter_name_raises_type_error():
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="weight"):
        lin.weight = flow.ones(2, 2)
    lin.bias = None
    assert lin.bias is None
    assert [name for name, _ in lin.named_parameters()] == ["weight"]


def test_register_rejects_bad_names_and_wrong_types():
    module = nn.Module()
    with pytest.raises(KeyError):
        module.register_parameter("a.b", nn.Parameter(flow.ones(1)))
    with pytest.raises(KeyError):
        module.register_buffer("", flow.ones(1))
    with pytest.raises(TypeError):
        module.register_parameter("w", flow.ones(1))
    with pytest.raises(TypeError):
        module.register_buffer("b", 3.0)
    with pytest.raises(TypeError):
        module.add_module("m", "not a module")
    module.x = 1
    with pytest.raises(KeyError, match="already exists"):
        module.register_buffer("x", flow.ones(1))


def test_registration_before_init_raises_attribute_error():
    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(flow.ones(1))

    with pytest.raises(AttributeError, match="__init__"):
        Broken()


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="nope"):
        nn.Linear(2, 2).nope


def test_delattr_removes_registered_members():
    block = Block()
    del block.scale
    del block.steps
    del block.fc
    assert list(block.named_parameters()) == []
    assert [name for name, _ in block.named_buffers()] == ["cache"]


def test_buffer_can_be_reassigned_with_a_tensor():
    block = Block()
    block.steps = flow.ones(1)
    assert block.steps.numpy()[0] == 1.0
    with pytest.raises(TypeError):
        block.steps = 5


def test_train_and_eval_propagate_to_children():
    net = Net()
    assert net.training and net.block.fc.training
    assert net.eval() is net
    assert not net.training and not net.block.training and not net.block.fc.training
    net.train()
    assert net.block.fc.training
    with pytest.raises(ValueError):
        net.train("yes")


def test_call_runs_forward_and_hooks():
    lin = nn.Linear(3, 2)
    seen = []
    handle = lin.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    lin(flow.ones(4, 3))
    handle.remove()
    lin(flow.ones(4, 3))
    assert seen == [(4, 2)]


def test_module_without_forward_raises_not_implemented():
    with pytest.raises(NotImplementedError):
        nn.Module()(flow.ones(1))


def test_state_dict_has_parameters_and_persistent_buffers_only():
    net = Net()
    keys = list(net.state_dict())
    assert keys == ["block.scale", "block.steps", "block.fc.weight", "block.fc.bias", "head.weight"]
    assert not any(value.requires_grad for value in net.state_dict().values())
    assert net.state_dict(keep_vars=True)["head.weight"] is net.head.weight


def test_load_state_dict_copies_values_into_existing_parameters():
    src, dst = Net(), Net()
    weight_before = dst.head.weight
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst.head.weight is weight_before
    for key, value in src.state_dict().items():
        np.testing.assert_array_equal(dst.state_dict()[key].numpy(), value.numpy())


def test_load_state_dict_strict_lists_missing_unexpected_and_size_mismatch():
    net = Net()
    state = dict(net.state_dict())
    del state["block.fc.bias"]
    state["block.extra"] = flow.ones(1)
    state["head.weight"] = flow.ones(3, 3)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(state)
    message = str(info.value)
    assert 'Missing key(s) in state_dict: "block.fc.bias"' in message
    assert 'Unexpected key(s) in state_dict: "block.extra"' in message
    assert "size mismatch for head.weight" in message and "(3, 3)" in message


def test_load_state_dict_non_strict_returns_the_key_lists():
    net = Net()
    state = dict(net.state_dict())
    del state["block.steps"]
    state["other"] = flow.ones(1)
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["block.steps"]
    assert result.unexpected_keys == ["other"]


def test_load_state_dict_size_mismatch_raises_even_when_not_strict():
    net = nn.Linear(2, 3)
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        net.load_state_dict({"weight": flow.ones(2, 2), "bias": flow.ones(3)}, strict=False)


def test_zero_grad_sets_to_none_or_zeroes():
    lin = nn.Linear(2, 2)
    lin.weight.grad = flow.ones(2, 2)
    lin.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(lin.weight.grad.numpy(), np.zeros((2, 2), np.float32))
    lin.zero_grad()
    assert lin.weight.grad is None


def test_apply_visits_children_before_parent():
    net = Net()
    order = []
    net.apply(lambda m: order.append(type(m).__name__))
    assert order == ["Linear", "Block", "Linear", "Net"]


def test_requires_grad_false_freezes_all_parameters():
    net = Net().requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_repr_matches_torch_layout():
    net = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.ReLU(), nn.Dropout(0.1)))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (1): Sequential(\n"
        "    (0): ReLU()\n"
        "    (1): Dropout(p=0.1, inplace=False)\n"
        "  )\n"
        ")"
    )


def test_to_dtype_converts_floating_parameters_and_buffers():
    net = Net().to(flow.float64)
    assert all(p.dtype == flow.float64 for p in net.parameters())
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    assert net.block.steps.dtype == flow.float64
    out = net(flow.ones(2, 3, dtype=flow.float64))
    assert out.dtype == flow.float64


def test_to_without_a_change_keeps_parameter_objects():
    lin = nn.Linear(2, 2)
    weight = lin.weight
    lin.to(flow.float32)
    lin.to("cpu")
    lin.float()
    assert lin.weight is weight


def test_backward_fills_parameter_grads_matching_numpy():
    lin = nn.Linear(3, 2)
    x = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    loss = lin(flow.tensor(x)).sum()
    loss.backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.tile(x.sum(0), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(lin.bias.grad.numpy(), np.full(2, 4.0), rtol=1e-6)


def test_get_submodule_walks_dotted_paths():
    net = Net()
    assert net.get_submodule("block.fc") is net.block.fc
    with pytest.raises(AttributeError):
        net.get_submodule("block.nope")


def test_tied_weights_stay_one_parameter_through_conversions_and_loading():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 4)
            self.head = nn.Linear(4, 5, bias=False)
            self.head.weight = self.emb.weight

    model = Tied()
    for convert in (lambda m: m.double(), lambda m: m.to("cpu"), lambda m: m.float()):
        convert(model)
        assert model.head.weight is model.emb.weight
    state = {k: flow.full(tuple(v.shape), 2.0) for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    assert model.head.weight is model.emb.weight
    assert len(list(model.parameters())) == 1
