"""Every torch.nn activation (module and functional) against PyTorch: forward and gradients in
float64, a float32 spot check, in-place variants, reprs, parameters and errors."""

import numpy as np
import pytest
import torch

import oneflowlike as flow
from oneflowlike import nn
from oneflowlike.nn import functional as F

RNG = np.random.default_rng(0)
# Values away from every kink (0, +-0.5, +-1, +-3, 6) so that one-sided gradients agree.
X = RNG.uniform(-7, 7, (3, 4, 5))
X[np.abs(X - np.round(X)) < 0.05] += 0.1
X[np.abs(np.abs(X) - 0.5) < 0.05] += 0.1


def both(array, requires_grad=True):
    return (
        flow.tensor(array, requires_grad=requires_grad),
        torch.tensor(array, requires_grad=requires_grad),
    )


def check(out, ref, tol=1e-10):
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)


# torch's double kernels of these round a constant to float32 (celu's 1 / alpha in the gradient,
# hardsigmoid's 1 / 6): about 1e-8 relative from the exact value that ours gives.
LOOSE = {"celu", "hardsigmoid", "CELU", "Hardsigmoid"}


def check_fn(ours, theirs, x=X, tol=1e-10):
    a, b = both(x)
    out, ref = ours(a), theirs(b)
    check(out, ref, tol)
    grad = RNG.standard_normal(tuple(ref.shape))
    out.backward(flow.tensor(grad))
    ref.backward(torch.tensor(grad))
    check(a.grad, b.grad, tol)


# (name, positional/keyword arguments) shared by F.<name> and torch's F.<name>.
FUNCTIONS = [
    ("relu", {}),
    ("relu6", {}),
    ("elu", {"alpha": 1.3}),
    ("selu", {}),
    ("celu", {"alpha": 0.7}),
    ("leaky_relu", {"negative_slope": 0.2}),
    ("rrelu", {"lower": 0.1, "upper": 0.3}),
    ("hardtanh", {"min_val": -2.0, "max_val": 1.5}),
    ("hardswish", {}),
    ("hardsigmoid", {}),
    ("hardshrink", {"lambd": 0.5}),
    ("softshrink", {"lambd": 0.5}),
    ("tanhshrink", {}),
    ("softsign", {}),
    ("softplus", {"beta": 2.0, "threshold": 5.0}),
    ("logsigmoid", {}),
    ("gelu", {}),
    ("gelu", {"approximate": "tanh"}),
    ("silu", {}),
    ("mish", {}),
    ("sigmoid", {}),
    ("tanh", {}),
    ("glu", {"dim": 1}),
    ("threshold", {"threshold": 0.5, "value": -3.0}),
    ("softmax", {"dim": 1}),
    ("softmin", {"dim": 2}),
    ("log_softmax", {"dim": -1}),
]


@pytest.mark.parametrize("name,kwargs", FUNCTIONS, ids=[f"{n}{k}" for n, k in FUNCTIONS])
def test_functional_matches_torch_forward_and_gradient(name, kwargs):
    x = X[:, :, :4] if name == "glu" else X
    check_fn(
        lambda t: getattr(F, name)(t, **kwargs),
        lambda t: getattr(torch.nn.functional, name)(t, **kwargs),
        x,
        1e-7 if name in LOOSE else 1e-10,
    )


INPLACE = ["relu_", "elu_", "selu_", "celu_", "leaky_relu_", "hardtanh_", "rrelu_", "threshold_"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_functions_write_into_their_input(name):
    args = (0.5, -3.0) if name == "threshold_" else ()
    a, b = both(X)
    ya, yb = a * 1.0, b * 1.0
    ra = getattr(F, name)(ya, *args)
    rb = getattr(torch.nn.functional, name)(yb, *args)
    assert ra is ya
    check(ya, yb)
    grad = RNG.standard_normal(X.shape)
    ya.backward(flow.tensor(grad))
    yb.backward(torch.tensor(grad))
    check(a.grad, b.grad)


@pytest.mark.parametrize("name", ["relu", "elu", "hardswish", "mish", "silu", "hardsigmoid"])
def test_inplace_flag_modifies_the_input_and_keeps_gradients(name):
    a, b = both(X)
    ya, yb = a * 2.0, b * 2.0
    assert getattr(F, name)(ya, inplace=True) is ya
    getattr(torch.nn.functional, name)(yb, inplace=True)
    check(ya, yb)
    ya.sum().backward()
    yb.sum().backward()
    check(a.grad, b.grad, 1e-7 if name in LOOSE else 1e-10)


# (class name, constructor arguments)
MODULES = [
    ("ReLU", ()),
    ("ReLU6", ()),
    ("ELU", (0.5,)),
    ("SELU", ()),
    ("CELU", (1.5,)),
    ("LeakyReLU", (0.3,)),
    ("Hardtanh", (-0.5, 2.0)),
    ("Hardswish", ()),
    ("Hardsigmoid", ()),
    ("Hardshrink", (0.7,)),
    ("Softshrink", (0.3,)),
    ("Tanhshrink", ()),
    ("Softsign", ()),
    ("Softplus", (0.5, 3.0)),
    ("LogSigmoid", ()),
    ("GELU", ("tanh",)),
    ("SiLU", ()),
    ("Mish", ()),
    ("Sigmoid", ()),
    ("Tanh", ()),
    ("GLU", (1,)),
    ("Threshold", (0.1, 20.0)),
    ("Softmax", (1,)),
    ("Softmin", (0,)),
    ("LogSoftmax", (2,)),
    ("Softmax2d", ()),
    ("RReLU", (0.2, 0.4)),
]


@pytest.mark.parametrize("name,args", MODULES, ids=[m[0] for m in MODULES])
def test_module_matches_torch(name, args):
    ours, theirs = getattr(nn, name)(*args).eval(), getattr(torch.nn, name)(*args).eval()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []
    x = X[:, :, :4] if name == "GLU" else X
    check_fn(ours, theirs, x, 1e-7 if name in LOOSE else 1e-10)


@pytest.mark.parametrize("name", ["ReLU", "ELU", "SELU", "CELU", "LeakyReLU", "Hardtanh", "SiLU"])
def test_inplace_module_repr_and_effect(name):
    ours, theirs = getattr(nn, name)(inplace=True), getattr(torch.nn, name)(inplace=True)
    assert repr(ours) == repr(theirs)
    y = flow.tensor(X)
    assert ours(y) is y
    check(y, theirs(torch.tensor(X)))


def test_float32_spot_check():
    x = X.astype(np.float32)
    for name in ["elu", "mish", "softplus", "logsigmoid", "hardswish"]:
        out = getattr(F, name)(flow.tensor(x))
        assert out.dtype == flow.float32
        ref = getattr(torch.nn.functional, name)(torch.tensor(x))
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_large_inputs_stay_finite():
    x = np.array([-800.0, -30.0, 0.5, 30.0, 800.0])
    for name in ["softplus", "logsigmoid", "elu", "celu", "selu", "mish"]:
        check_fn(getattr(F, name), getattr(torch.nn.functional, name), x)


@pytest.mark.parametrize("shape,num", [((3, 4, 5), 4), ((3, 4, 5), 1), ((2, 6), 6), ((5,), 1)])
def test_prelu_input_and_weight_gradients(shape, num):
    ours, theirs = nn.PReLU(num, init=0.1), torch.nn.PReLU(num, init=0.1)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == ["weight"]
    weight = RNG.uniform(-0.5, 0.5, num)
    ours.weight = nn.Parameter(flow.tensor(weight))
    theirs.weight = torch.nn.Parameter(torch.tensor(weight))
    x = RNG.standard_normal(shape)
    check_fn(ours, theirs, x)
    check(ours.weight.grad, theirs.weight.grad)


def test_prelu_rejects_a_channel_mismatch():
    with pytest.raises(RuntimeError, match=r"prelu.*parameter numbers = 3.*channel size = 4"):
        F.prelu(flow.ones(2, 4), flow.ones(3))


def test_rrelu_training_draws_slopes_between_the_bounds():
    a = flow.tensor(-np.abs(X) - 0.1, requires_grad=True)
    out = F.rrelu(a, 0.1, 0.3, training=True)
    slope = out.detach().numpy() / a.detach().numpy()
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.01
    out.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), slope, rtol=1e-12)
    positive = flow.tensor(np.abs(X))
    check(F.rrelu(positive, training=True), torch.tensor(np.abs(X)))


def test_gumbel_softmax_soft_and_hard_samples():
    logits = flow.tensor(RNG.standard_normal((6, 5)), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), np.ones(6), rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True, dim=1)
    values = hard.detach().numpy()
    assert set(np.unique(values)) <= {0.0, 1.0} and (values.sum(1) == 1).all()
    (hard * flow.tensor(RNG.standard_normal((6, 5)))).sum().backward()
    assert np.abs(logits.grad.numpy()).sum() > 0


def test_softmax_dtype_and_implicit_dim():
    x = X.astype(np.float32)
    out = F.softmax(flow.tensor(x), dim=0, dtype=flow.float64)
    assert out.dtype == flow.float64
    check(out, torch.softmax(torch.tensor(x), 0, dtype=torch.float64))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        check(F.log_softmax(flow.tensor(X)), torch.nn.functional.log_softmax(torch.tensor(X), 0))


def test_errors_name_the_function_and_shapes():
    with pytest.raises(RuntimeError, match=r"glu.*dimension 1 is size 3"):
        F.glu(flow.ones(2, 3), 1)
    with pytest.raises(ValueError, match="Softmax2d.*2D"):
        nn.Softmax2d()(flow.ones(2, 3))
    with pytest.raises(ValueError, match="min_val"):
        F.hardtanh(flow.ones(2), 1.0, 0.0)
    with pytest.raises(RuntimeError, match="rrelu.*Lower bound"):
        F.rrelu(flow.ones(2), 0.5, 0.1)
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(flow.ones(2), approximate="fast")


def _adaptive_pair(head_bias):
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=head_bias)
    theirs = theirs.double()
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=head_bias)
    ours = ours.double()
    ours.load_state_dict({k: flow.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    return ours, theirs


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(head_bias):
    ours, theirs = _adaptive_pair(head_bias)
    x = RNG.standard_normal((7, 8))
    target = np.array([0, 2, 3, 5, 6, 9, 4])
    a, b = both(x)
    out, ref = ours(a, flow.tensor(target)), theirs(b, torch.tensor(target))
    check(out.output, ref.output)
    check(out.loss, ref.loss)
    out.loss.backward()
    ref.loss.backward()
    check(a.grad, b.grad)
    ref_grads = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        check(param.grad, ref_grads[name].grad)
    check(ours.log_prob(a), theirs.log_prob(b))
    np.testing.assert_array_equal(ours.predict(a).numpy(), theirs.predict(b).numpy())
    single = ours(a[0], flow.tensor(target[5]))
    check(single.output, theirs(b[0], torch.tensor(target[5])).output)


def test_adaptive_log_softmax_errors():
    ours, _ = _adaptive_pair(False)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        ours(flow.ones(2, 8, dtype=flow.float64), flow.tensor([1, 10]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        ours(flow.ones(2, 8, dtype=flow.float64), flow.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
