"""The meta device, with PyTorch's conventions: shapes and dtypes, no memory, the same errors."""

import pytest

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F


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


# ---- nn ops: each op and its backward on meta, against cpu -------------------------------


def _ported(fn):
    """Whether an op the nn composites use runs on meta yet (its family may not be ported)."""
    try:
        fn(flow.zeros(2, 2, device="meta"))
        return True
    except RuntimeError as e:
        if "no meta kernel" in str(e):
            return False
        raise


_NEEDS = {"sum": lambda x: x.sum(), "matmul": lambda x: x @ x}


def _nn_cases():
    def ints(*shape):
        return lambda dev: flow.zeros(*shape, dtype=flow.int64, device=dev)

    def floats(*shape, dtype=flow.float32, grad=True):
        return lambda dev: flow.zeros(*shape, dtype=dtype, device=dev, requires_grad=grad)

    x, w, b = floats(4, 5), floats(5), floats(5)
    return [
        ("softmax", lambda x: F.softmax(x, 0), [x], ()),
        ("log_softmax", lambda x: F.log_softmax(x, -1), [floats(2, 3, 4, dtype=flow.float64)], ()),
        ("softmax_int", lambda x: F.softmax(x, 1), [ints(2, 3)], ()),
        ("layer_norm", lambda x, w, b: F.layer_norm(x, (5,), w, b), [x, w, b], ()),
        ("layer_norm_3d", lambda x: F.layer_norm(x, (3, 4)), [floats(2, 3, 4)], ()),
        ("rms_norm", lambda x, w: F.rms_norm(x, (5,), w), [x, w], ()),
        ("dropout", lambda x: F.dropout(x, 0.3), [floats(4, 5, dtype=flow.float16)], ()),
        ("nll_loss", lambda x, t: F.nll_loss(x, t, reduction="none"), [x, ints(4)], ()),
        (
            "nll_loss_3d",
            lambda x, t: F.nll_loss(x, t, reduction="none"),
            [floats(2, 5, 3), ints(2, 3)],
            (),
        ),
        ("nll_loss_mean", lambda x, t: F.nll_loss(x, t), [x, ints(4)], ("sum",)),
        ("cross_entropy", lambda x, t: F.cross_entropy(x, t, reduction="none"), [x, ints(4)], ()),
        (
            "cross_entropy_smooth",
            lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
            [x, ints(4)],
            ("sum",),
        ),
        ("mse_loss", lambda a, b: F.mse_loss(a, b, reduction="none"), [x, floats(4, 5)], ()),
        ("mse_loss_mean", lambda a, b: F.mse_loss(a, b), [x, floats(4, 5)], ("sum",)),
        (
            "sdpa_causal",
            lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True, dropout_p=0.2),
            [floats(2, 4, 3)],
            ("matmul",),
        ),
    ]


@pytest.mark.parametrize("case", _nn_cases(), ids=lambda c: c[0])
def test_nn_ops_and_their_backward_on_meta_match_cpu(case):
    name, fn, makers, needs = case
    missing = [n for n in needs if not _ported(_NEEDS[n])]
    if missing:
        pytest.skip(f"{name} composes {missing}, not on the meta device yet")
    results = {}
    for dev in ("cpu", "meta"):
        inputs = [make(dev) for make in makers]
        y = fn(*inputs)
        assert y.device.type == dev
        if y.requires_grad:
            y.backward(flow.ones_like(y))
        grads = [(tuple(t.grad.shape), t.grad.dtype) for t in inputs if t.grad is not None]
        assert all(t.grad.device.type == dev for t in inputs if t.grad is not None)
        results[dev] = (tuple(y.shape), y.dtype, grads)
    assert results["meta"] == results["cpu"]


def _nn_errors():
    def z(*shape, dtype=flow.float32):
        return lambda dev: flow.zeros(*shape, dtype=dtype, device=dev)

    i64 = flow.int64
    return [
        ("softmax_dim", lambda x: F.softmax(x, 2), [z(2, 3)]),
        ("layer_norm_shape", lambda x: F.layer_norm(x, (3,)), [z(2, 4)]),
        ("layer_norm_weight", lambda x, w: F.layer_norm(x, (4,), w), [z(2, 4), z(5)]),
        ("layer_norm_int", lambda x: F.layer_norm(x, (4,)), [z(2, 4, dtype=i64)]),
        ("rms_norm_shape", lambda x: F.rms_norm(x, (5,)), [z(2, 4)]),
        ("nll_target_dtype", lambda x, t: F.nll_loss(x, t), [z(2, 3), z(2)]),
        ("nll_target_shape", lambda x, t: F.nll_loss(x, t), [z(3, 4), z(2, dtype=i64)]),
        ("ce_target_shape", lambda x, t: F.cross_entropy(x, t), [z(2, 4, 5), z(2, 4, dtype=i64)]),
        ("ce_probabilities", lambda x, t: F.cross_entropy(x, t), [z(3, 4), z(3, 5)]),
        ("mse_shapes", lambda a, b: F.mse_loss(a, b), [z(2, 3), z(3, 2)]),
        ("dropout_p", lambda x: flow._C.dropout(x, p=1.5), [z(3)]),
        ("sdpa_dims", lambda q: F.scaled_dot_product_attention(q, q, q), [z(3)]),
        (
            "sdpa_mask_and_causal",
            lambda q, m: F.scaled_dot_product_attention(q, q, q, attn_mask=m, is_causal=True),
            [z(2, 3), z(2, 2, dtype=flow.bool)],
        ),
    ]


@pytest.mark.parametrize("case", _nn_errors(), ids=lambda c: c[0])
def test_nn_ops_raise_the_same_errors_on_meta_as_on_cpu(case):
    name, fn, makers = case
    errors = {}
    for dev in ("cpu", "meta"):
        with pytest.raises((RuntimeError, TypeError, IndexError, ValueError)) as e:
            fn(*[make(dev) for make in makers])
        errors[dev] = (type(e.value), str(e.value))
    assert errors["meta"] == errors["cpu"]
    assert "[" in errors["cpu"][1]  # names the op


def test_nll_loss_reads_no_targets_on_meta_and_its_kernel_names_a_bad_one():
    x, bad = flow.zeros(3, 5), flow.tensor([1, 7, -100])
    y = F.nll_loss(x.to("meta"), bad.to("meta"), reduction="none")  # no data: no check
    assert y.device.type == "meta" and tuple(y.shape) == (3,)
    with pytest.raises(IndexError, match=r"\[nll_loss\] target 7 is out of bounds for 5 classes"):
        F.nll_loss(x, bad)
    assert float(F.nll_loss(x, flow.tensor([1, -100, -100]), reduction="sum").numpy()) == 0.0


def test_dropout_on_meta_draws_nothing():
    flow.manual_seed(4)
    y = F.dropout(flow.zeros(1000, device="meta"), 0.5)
    assert y.device.type == "meta" and tuple(y.shape) == (1000,)
    untouched = flow.rand(3).numpy()
    flow.manual_seed(4)
    assert (flow.rand(3).numpy() == untouched).all()
