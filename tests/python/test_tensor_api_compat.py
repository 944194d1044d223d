"""What PyTorch and OneFlow users write on day one and expect to work (issue 29): a 0-d tensor in
an f-string, flow.Size, is_local and the global functions, inference_mode, and DLPack with numpy
and PyTorch (zero-copy, both directions)."""

import numpy as np
import pytest

import oneflowlike as flow

torch = pytest.importorskip("torch")  # imported after oneflowlike: the NCCL clash is gone


def test_a_0d_tensor_formats_as_its_number_and_others_as_text():
    assert f"{flow.tensor(1.5):>7.2f}" == "   1.50"
    assert f"loss: {flow.tensor(0.25, requires_grad=True):.3f}" == "loss: 0.250"
    assert f"{flow.tensor(3):03d}" == "003"
    t = flow.tensor([1.0, 2.0])
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{t:>7f}"  # as PyTorch: only a 0-d tensor has a number to format


def test_shape_and_size_are_a_size_tuple():
    x = flow.zeros(2, 3, 4)
    assert isinstance(x.shape, flow.Size) and isinstance(x.shape, tuple)
    assert x.shape == (2, 3, 4) and x.size() == x.shape and x.size(1) == 3 and x.size(-1) == 4
    assert x.shape.numel() == 24 == x.numel()
    assert repr(x.shape) == "oneflowlike.Size([2, 3, 4])"
    assert isinstance(x.shape[1:], flow.Size) and x.shape[1:] == (3, 4)
    assert isinstance(x.shape[:1] + (5,), flow.Size)
    assert flow.zeros(*x.shape[1:]).shape == (3, 4)
    assert str(torch.Size([2, 3])).replace("torch", "oneflowlike") == repr(flow.Size([2, 3]))


def test_is_local_and_the_global_functions():
    x = flow.ones(4)
    assert x.is_local and not x.is_global
    g = flow.to_global(x, flow.placement("cpu", [0]), flow.sbp.broadcast)
    assert g.is_global and not g.is_local
    back = flow.to_local(g)
    assert back.is_local and np.array_equal(back.numpy(), x.numpy())


def test_inference_mode_records_nothing_as_a_context_and_a_decorator():
    a = flow.ones(2, requires_grad=True)

    @flow.inference_mode
    def bare(v):
        return v * 2

    @flow.inference_mode()
    def called(v):
        return v * 2

    with flow.inference_mode():
        assert not (a * 2).requires_grad
    assert not bare(a).requires_grad and not called(a).requires_grad
    assert (a * 2).requires_grad  # restored
    with flow.inference_mode(False):
        assert (a * 2).requires_grad


def test_dlpack_shares_memory_with_numpy_and_pytorch_both_ways():
    x = flow.arange(6, dtype=flow.float32).reshape(2, 3)
    t = torch.from_dlpack(x)  # PyTorch views our memory
    x.add_(1)
    assert t.tolist() == [[1, 2, 3], [4, 5, 6]]
    src = torch.arange(4, dtype=torch.int64)
    y = flow.from_dlpack(src)  # we view PyTorch's
    src[0] = 9
    assert y.tolist() == [9, 1, 2, 3] and y.dtype == flow.int64
    capsule = flow.utils.dlpack.to_dlpack(x)
    z = flow.utils.dlpack.from_dlpack(capsule)
    x.mul_(2)
    assert z.tolist() == x.tolist()
    u = torch.utils.dlpack.from_dlpack(flow.utils.dlpack.to_dlpack(x))
    assert u.shape == (2, 3)
    v = flow.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(torch.ones(3)))
    assert v.tolist() == [1, 1, 1]
    a = np.arange(3.0)
    w = flow.from_dlpack(a)
    a[1] = 7
    assert w.tolist() == [0, 7, 2] and np.from_dlpack(w).tolist() == [0, 7, 2]
    assert x.__dlpack_device__() == (1, 0)


def test_dlpack_refuses_what_it_cannot_share_naming_it():
    g = flow.to_global(flow.ones(2), flow.placement("cpu", [0]), flow.sbp.broadcast)
    with pytest.raises(
        TypeError, match=r"\[__dlpack(_device)?__\] a global tensor has no single buffer"
    ):
        torch.from_dlpack(g)
    with pytest.raises(TypeError, match=r"\[__dlpack__\] bfloat16 has no DLPack exchange"):
        flow.ones(2, dtype=flow.bfloat16).__dlpack__()
    with pytest.raises(TypeError, match=r"\[__dlpack__\] only CPU tensors.*meta"):
        flow.ones(2, device="meta").__dlpack__()
    with pytest.raises(TypeError, match=r"\[from_dlpack\] cannot take Tensor through DLPack"):
        flow.from_dlpack(torch.ones(2, dtype=torch.bfloat16))


def test_legacy_tensor_types_check_and_make_their_dtype():
    assert isinstance(flow.tensor([1, 2]), flow.LongTensor)
    assert not isinstance(flow.tensor([1.0]), flow.LongTensor)
    assert isinstance(flow.tensor([True]), flow.BoolTensor)
    assert flow.FloatTensor([1, 2]).dtype == flow.float32
    assert flow.LongTensor(2, 3).shape == (2, 3) and flow.LongTensor(2, 3).dtype == flow.int64


def test_finfo_and_iinfo_match_pytorch():
    for ours, theirs in [(flow.float32, torch.float32), (flow.float16, torch.float16),
                         (flow.float64, torch.float64), (flow.bfloat16, torch.bfloat16)]:  # fmt: skip
        a, b = flow.finfo(ours), torch.finfo(theirs)
        assert (a.bits, a.eps, a.max, a.min, a.tiny, a.resolution) == (
            b.bits, b.eps, b.max, b.min, b.tiny, b.resolution,
        ), ours  # fmt: skip
    for ours, theirs in [(flow.int64, torch.int64), (flow.int32, torch.int32),
                         (flow.uint8, torch.uint8), (flow.int8, torch.int8)]:  # fmt: skip
        a, b = flow.iinfo(ours), torch.iinfo(theirs)
        assert (a.bits, a.min, a.max) == (b.bits, b.min, b.max)
    assert flow.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError, match=r"\[finfo\] .*int64 is not a floating dtype"):
        flow.finfo(flow.int64)


def test_jit_hooks_are_what_they_are_outside_torchscript():
    assert not flow.jit.is_scripting() and not flow.jit.is_tracing()

    @flow.jit.ignore
    def f(x):
        return x + 1

    @flow.jit.ignore(drop=True)
    def g(x):
        return x + 2

    assert f(1) == 2 and g(1) == 3 and flow.jit.unused(f) is f


def test_a_buffer_assigned_to_a_module_registers_as_a_buffer():
    m = flow.nn.Module()
    m.kept = flow.nn.Buffer(flow.ones(2))
    m.scratch = flow.nn.Buffer(flow.zeros(3), persistent=False)
    assert dict(m.named_buffers()).keys() == {"kept", "scratch"}
    assert list(m.state_dict()) == ["kept"] and not list(m.parameters())


def test_tensors_parameters_and_modules_pickle_with_dtype_and_grad():
    import pickle

    for dtype in (flow.float32, flow.bfloat16, flow.int64, flow.bool, flow.float16):
        t = flow.ones(2, 3, dtype=dtype)
        back = pickle.loads(pickle.dumps(t))
        assert back.dtype == dtype and back.shape == (2, 3)
        assert back.to(flow.float32).tolist() == t.to(flow.float32).tolist()
    leaf = flow.randn(3, requires_grad=True)
    back = pickle.loads(pickle.dumps(leaf))
    assert back.requires_grad and back.is_leaf and back.tolist() == leaf.tolist()
    p = pickle.loads(pickle.dumps(flow.nn.Parameter(flow.ones(2))))
    assert isinstance(p, flow.nn.Parameter) and p.requires_grad
    m = flow.nn.Linear(3, 2)
    m2 = pickle.loads(pickle.dumps(m))
    assert isinstance(m2.weight, flow.nn.Parameter)
    assert np.array_equal(m2.weight.detach().numpy(), m.weight.detach().numpy())
    g = flow.to_global(flow.ones(2), flow.placement("cpu", [0]), flow.sbp.broadcast)
    with pytest.raises(TypeError, match=r"\[pickle\] a global tensor has no single buffer"):
        pickle.dumps(g)
    with pytest.raises(TypeError, match=r"\[pickle\] a meta tensor has no data"):
        pickle.dumps(flow.ones(2, device="meta"))


def test_randperm_is_a_reproducible_permutation():
    flow.manual_seed(3)
    a = flow.randperm(50)
    flow.manual_seed(3)
    b = flow.randperm(50)
    assert a.dtype == flow.int64 and a.tolist() == b.tolist()
    assert sorted(a.tolist()) == list(range(50)) and a.tolist() != list(range(50))
    g = flow.Generator()
    g.manual_seed(1)
    assert sorted(flow.randperm(5, generator=g, dtype=flow.int32).tolist()) == list(range(5))
    assert flow.randperm(0).tolist() == []
    with pytest.raises(RuntimeError, match=r"\[randperm\] n must be non-negative"):
        flow.randperm(-1)
