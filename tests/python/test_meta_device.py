"""The meta device, with PyTorch's conventions: shapes and dtypes, no memory, the same errors."""

import pytest

import oneflowlike as flow
import oneflowlike.nn as nn


def test_creation_ops_take_device_meta_and_allocate_nothing():
    for t in (
        flow.zeros(4, 3, device="meta"),
        flow.ones(4, 3, device="meta"),
        flow.empty(4, 3, device="meta"),
        flow.randn(4, 3, device="meta"),
        flow.full((4, 3), 2.0, device="meta"),
    ):
        assert t.device.type == "meta" and tuple(t.shape) == (4, 3)
    assert tuple(flow.arange(0, 10, 3, device="meta").shape) == (4,)
    assert tuple(flow.linspace(0, 1, 7, device="meta").shape) == (7,)
    assert tuple(flow.eye(3, 5, device="meta").shape) == (3, 5)
    assert flow.randint(0, 5, (2, 2), device="meta").dtype == flow.int64


def test_default_device_context_and_setter():
    with flow.device("meta"):
        assert flow.randn(2, 2).device.type == "meta"
        assert flow.zeros(2, device="cpu").device.type == "cpu"  # an explicit device wins
    assert flow.randn(2).device.type == "cpu"
    flow.set_default_device("meta")
    try:
        assert flow.ones(3).device.type == "meta"
        assert flow.get_default_device().type == "meta"
    finally:
        flow.set_default_device(None)
    assert flow.ones(3).device.type == "cpu"


def test_ops_and_backward_on_meta_give_shapes_and_dtypes():
    x = flow.zeros(4, 3, device="meta", requires_grad=True)
    w = flow.zeros(4, 3, dtype=flow.float64, device="meta", requires_grad=True)
    y = flow.tanh(x * w + 1.0).exp()
    assert y.device.type == "meta" and y.dtype == flow.float64 and tuple(y.shape) == (4, 3)
    y.backward(flow.ones(4, 3, dtype=flow.float64, device="meta"))
    assert x.grad.device.type == "meta" and x.grad.dtype == flow.float32
    assert tuple(w.grad.shape) == (4, 3)


def test_meta_raises_the_same_errors_as_cpu():
    def message(device):
        with pytest.raises(RuntimeError) as e:
            flow.zeros(4, 3, device=device) + flow.zeros(5, 2, device=device)
        return str(e.value)

    assert message("meta") == message("cpu")
    assert "[add]" in message("meta")


def test_meta_tensors_have_no_data_and_cuda_raises_clearly():
    x = flow.zeros(2, 2, device="meta")
    with pytest.raises(RuntimeError, match="meta tensor of shape"):
        x.numpy()
    with pytest.raises(RuntimeError, match="cannot copy out of a meta tensor"):
        x.to("cpu")
    with pytest.raises(RuntimeError, match="not supported yet"):
        flow.zeros(2).to("cuda")
    with pytest.raises(RuntimeError, match="not supported yet"):
        flow.zeros(2).cuda()
    with pytest.raises(RuntimeError, match="not supported yet"):
        nn.Linear(2, 2).cuda()
    with pytest.raises(RuntimeError, match="not supported yet"):
        flow.zeros(2, device="cuda")


def test_tensor_to_meta_keeps_shape_and_dtype():
    x = flow.tensor([[1, 2, 3]]).to("meta")
    assert x.device.type == "meta" and x.dtype == flow.int64 and tuple(x.shape) == (1, 3)
    assert flow.tensor([1.0, 2.0], device="meta").device.type == "meta"


def test_mixing_meta_and_cpu_raises_naming_both_devices():
    with pytest.raises(RuntimeError, match="different devices: meta and cpu"):
        flow.zeros(2, 2, device="meta") * flow.ones(2, 2)
    # A Python number joins any device.
    assert (flow.zeros(2, device="meta") * 3).device.type == "meta"


def test_module_on_meta_then_to_empty_materialises_it():
    with flow.device("meta"):
        m = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32))
    assert all(p.device.type == "meta" for p in m.parameters())  # init did nothing
    m.to_empty(device="cpu")
    assert all(p.device.type == "cpu" for p in m.parameters())
    assert [tuple(p.shape) for p in m.parameters()] == [(32, 16), (32,), (32,), (32,)]
    m[0].reset_parameters()
    assert m[0].weight.numpy().std() > 0


def test_views_and_their_backward_run_on_meta():
    x = flow.zeros(4, 6, device="meta", requires_grad=True)
    y = x.view(2, 12).reshape(24).unsqueeze(0).squeeze(0).reshape(4, 6)
    y = y.permute(1, 0)[1:5:2].select(1, 2).unsqueeze(1).flatten()
    assert y.device.type == "meta" and tuple(y.shape) == (2,)
    y.backward(flow.ones(2, device="meta"))
    assert tuple(x.grad.shape) == (4, 6) and x.grad.device.type == "meta"
    with pytest.raises(RuntimeError, match=r"\[view\] .* cannot be viewed as"):
        flow.zeros(4, 6, device="meta").t().view(24)


def test_slice_backward_is_an_op_so_second_order_gradients_flow():
    x = flow.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    (g,) = flow.autograd.grad((x[1:3] ** 3).sum(), x, create_graph=True)
    (gg,) = flow.autograd.grad(g.sum(), x)
    assert gg.tolist() == [0.0, 12.0, 18.0, 0.0]


# ---- reductions ----------------------------------------------------------------------------

_REDUCTIONS = {
    "sum": lambda t: t.sum((0, 2)),
    "sum_dtype": lambda t: t.sum(1, dtype=flow.float64),
    "prod": lambda t: t.prod(1, keepdim=True),
    "amax": lambda t: t.amax(-1),
    "amin": lambda t: t.amin(),
    "max": lambda t: t.max(1)[0],
    "min": lambda t: t.min(2, keepdim=True)[0],
    "mean": lambda t: t.mean(1, keepdim=True),
    "var": lambda t: t.var(0),
    "std": lambda t: t.std((1, 2)),
    "logsumexp": lambda t: t.logsumexp(1),
}
_INDEX_OUTPUTS = {
    "max_indices": lambda t: t.max(1)[1],
    "min_indices": lambda t: t.min(-1, keepdim=True).indices,
    "argmax": lambda t: t.argmax(0),
    "argmin": lambda t: t.argmin(2, keepdim=True),
    "argmax_all": lambda t: t.argmax(),
    "all": lambda t: t.all(1),
    "any": lambda t: t.any(),
    "sum_int": lambda t: t.long().sum(0),
    "prod_bool": lambda t: (t > 0).prod(2),
}


def _shape_and_dtype(fn, device, **kw):
    y = fn(flow.zeros(4, 3, 5, device=device, **kw))
    return tuple(y.shape), y.dtype


@pytest.mark.parametrize("name", sorted({**_REDUCTIONS, **_INDEX_OUTPUTS}))
def test_every_reduction_runs_on_meta_with_cpus_shape_and_dtype(name):
    fn = {**_REDUCTIONS, **_INDEX_OUTPUTS}[name]
    y = fn(flow.zeros(4, 3, 5, device="meta"))
    assert y.device.type == "meta"
    assert (tuple(y.shape), y.dtype) == _shape_and_dtype(fn, "cpu")


@pytest.mark.parametrize("name", sorted(set(_REDUCTIONS) - {"max", "min"}))
@pytest.mark.parametrize("dtype", [flow.float32, flow.float64])
def test_every_reduction_backward_runs_on_meta(name, dtype):
    x = flow.zeros(4, 3, 5, dtype=dtype, device="meta", requires_grad=True)
    y = _REDUCTIONS[name](x)
    (g,) = flow.autograd.grad(y, x, flow.ones(*y.shape, dtype=y.dtype, device="meta"))
    assert g.device.type == "meta" and g.dtype == dtype and tuple(g.shape) == (4, 3, 5)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_indices_backward_runs_on_meta(name):
    x = flow.zeros(4, 3, 5, device="meta", requires_grad=True)
    y = _REDUCTIONS[name](x)
    (g,) = flow.autograd.grad(y, x, flow.ones(*y.shape, device="meta"))
    assert g.device.type == "meta" and tuple(g.shape) == (4, 3, 5)


@pytest.mark.parametrize(
    "fn,error",
    [
        (lambda t: t.sum(3), IndexError),
        (lambda t: t.sum((1, -2)), RuntimeError),
        (lambda t: t.prod(-4), IndexError),
        (lambda t: t.amax(0), RuntimeError),  # zero-size
        (lambda t: t.amin((0, 1)), RuntimeError),
        (lambda t: t.max(0), RuntimeError),
        (lambda t: t.min(5), IndexError),
        (lambda t: t.argmax(0), RuntimeError),
        (lambda t: t.argmin(), RuntimeError),
        (lambda t: (t > 0).max(1), TypeError),
        (lambda t: (t > 0).argmax(1), TypeError),
        (lambda t: t.all(3), IndexError),
        (lambda t: t.long().mean(), TypeError),
        (lambda t: t.long().var(1), TypeError),
        (lambda t: t.long().std(), TypeError),
        (lambda t: t.int().logsumexp(1), TypeError),
        (lambda t: t.mean(-4), IndexError),
        (lambda t: t.var((0, 0)), RuntimeError),
        (lambda t: t.logsumexp(3), IndexError),
    ],
)
def test_reductions_on_meta_raise_the_same_errors_as_cpu(fn, error):
    def message(device):
        with pytest.raises(error) as e:
            fn(flow.zeros(0, 3, 2, device=device))
        return str(e.value)

    assert message("meta") == message("cpu")
    assert message("meta").startswith("[")


def test_item_of_a_meta_tensor_raises_instead_of_reading_nothing():
    with pytest.raises(RuntimeError, match=r"\[item\] a meta tensor of shape \(\)"):
        flow.zeros(3, device="meta").sum().item()
