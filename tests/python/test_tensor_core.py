"""Tensor basics: creation ops, random generators, numpy interop, in-place ops and
version counters."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import assert_close, check_grad, rng, tensor, to_numpy

# ---- construction from data --------------------------------------------------------------


@pytest.mark.parametrize(
    "data,dtype,shape",
    [
        ([1, 2, 3], flow.int64, (3,)),
        ([1.0, 2.0], flow.float32, (2,)),
        ([[True, False]], flow.bool, (1, 2)),
        (3, flow.int64, ()),
        (2.5, flow.float32, ()),
        (True, flow.bool, ()),
        ([[1, 2], [3, 4]], flow.int64, (2, 2)),
        ([], flow.float32, (0,)),
        (np.array([1, 2], np.int32), flow.int32, (2,)),
        (np.array([1.0], np.float64), flow.float64, (1,)),
        (np.array(1.5, np.float16), flow.float16, ()),
        (np.array([1, 2], np.uint8), flow.uint8, (2,)),
        (np.float64(2.0), flow.float64, ()),
    ],
    ids=repr,
)
def test_tensor_infers_dtype_and_shape(data, dtype, shape):
    t = flow.tensor(data)
    assert t.dtype == dtype
    assert tuple(t.shape) == shape
    assert_close(t, np.asarray(data).astype(to_numpy(t).dtype).reshape(shape))


def test_tensor_with_dtype_and_requires_grad():
    t = flow.tensor([1, 2], dtype=flow.float64, requires_grad=True)
    assert t.dtype == flow.float64 and t.requires_grad and t.is_leaf
    with pytest.raises(TypeError, match="floating"):
        flow.tensor([1, 2], requires_grad=True)


def test_tensor_copies_its_data():
    a = np.zeros(3)
    t = flow.tensor(a)
    a[0] = 5.0
    assert to_numpy(t)[0] == 0.0
    src = flow.ones(3)
    c = flow.tensor(src)
    src.add_(1.0)
    assert_close(c, np.ones(3, np.float32))
    assert not c.requires_grad


def test_legacy_tensor_constructor_is_float32():
    assert flow.Tensor([1, 2]).dtype == flow.float32
    assert_close(flow.Tensor(np.array([3, 4])), np.array([3.0, 4.0], np.float32))
    assert tuple(flow.Tensor(2, 3).shape) == (2, 3)
    assert tuple(flow.Tensor().shape) == (0,)


def test_tensor_rejects_strings():
    with pytest.raises(TypeError, match=r"\[tensor\]"):
        flow.tensor(["a", "b"])


def test_tensor_properties():
    t = flow.zeros(2, 3, dtype=flow.float64)
    assert t.ndim == 2 and t.dim() == 2
    assert t.numel() == 6 and flow.numel(t) == 6
    assert t.size() == (2, 3) and t.size(1) == 3 and t.size(-1) == 3
    assert t.element_size() == 8
    assert t.is_floating_point()
    assert not flow.zeros(2, dtype=flow.int32).is_floating_point()
    assert str(t.device) == "cpu"
    assert flow.is_tensor(t) and not flow.is_tensor(np.zeros(2))
    assert len(t) == 2
    assert [tuple(r.shape) for r in t] == [(3,), (3,)]
    assert repr(t) == "tensor([[0., 0., 0.],\n        [0., 0., 0.]], dtype=oneflowlike.float64)"
    assert repr(flow.float16) == "oneflowlike.float16" and str(flow.int64) == "oneflowlike.int64"
    assert flow.float32.itemsize == 4 and flow.float16.is_floating_point


def test_item_tolist_and_python_conversions():
    assert flow.tensor(2.5).item() == 2.5
    assert isinstance(flow.tensor(3).item(), int)
    assert flow.tensor([True]).item() is True
    assert flow.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert flow.tensor([1.5], dtype=flow.bfloat16).tolist() == [1.5]
    assert float(flow.tensor([2.0])) == 2.0 and int(flow.tensor(7)) == 7
    assert bool(flow.tensor(1))
    assert [10, 20, 30][flow.tensor(1)] == 20
    with pytest.raises(RuntimeError, match=r"\[item\].*3"):
        flow.ones(3).item()
    with pytest.raises(RuntimeError, match=r"\[bool\]"):
        bool(flow.ones(2))
    with pytest.raises(TypeError, match=r"\[len\]"):
        len(flow.tensor(1.0))


# ---- creation ops ------------------------------------------------------------------------


def test_zeros_ones_full_empty():
    assert_close(flow.zeros(2, 3), np.zeros((2, 3), np.float32))
    assert_close(flow.ones((2, 3), dtype=flow.int32), np.ones((2, 3), np.int32))
    assert_close(flow.zeros([4]), np.zeros(4, np.float32))
    assert flow.full((2,), 3).dtype == flow.int64
    assert flow.full((2,), 3.5).dtype == flow.float32
    assert flow.full((2,), True).dtype == flow.bool
    assert_close(flow.full((2, 2), -1.5, dtype=flow.float64), np.full((2, 2), -1.5))
    assert tuple(flow.empty(3, 0).shape) == (3, 0)
    assert flow.ones(2, requires_grad=True).requires_grad
    base = flow.ones(2, 3, dtype=flow.float16)
    for like, value in ((flow.zeros_like, 0), (flow.ones_like, 1)):
        out = like(base)
        assert out.dtype == flow.float16
        assert_close(out, np.full((2, 3), value, np.float16))
    assert_close(flow.full_like(base, 7, dtype=flow.int64), np.full((2, 3), 7))
    assert tuple(flow.empty_like(base).shape) == (2, 3)
    assert tuple(flow.zeros(()).shape) == ()


@pytest.mark.parametrize(
    "args,kwargs",
    [
        ((5,), {}),
        ((2, 9), {}),
        ((1, 10, 3), {}),
        ((10, 1, -3), {}),
        ((0, 1, 0.1), {}),
        ((-1.0, 1.0, 0.25), {}),
        ((0.5, 4), {}),
        ((6,), {"dtype": flow.float64}),
        ((3, 3), {}),
    ],
    ids=str,
)
def test_arange(args, kwargs):
    out = flow.arange(*args, **kwargs)
    ref = np.arange(*args)
    if "dtype" in kwargs:
        assert out.dtype == kwargs["dtype"]
    elif all(isinstance(a, int) for a in args):
        assert out.dtype == flow.int64
    else:
        assert out.dtype == flow.float32
    assert_close(out, ref.astype(to_numpy(out).dtype), rtol=1e-6, atol=1e-6)


def test_arange_errors():
    with pytest.raises(RuntimeError, match=r"\[arange\]"):
        flow.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match=r"\[arange\]"):
        flow.arange(5, 0, 1)


@pytest.mark.parametrize(
    "start,end,steps", [(0, 1, 5), (-2, 3, 11), (3, -1, 4), (1, 2, 1), (0, 1, 0)]
)
def test_linspace(start, end, steps):
    out = flow.linspace(start, end, steps)
    assert out.dtype == flow.float32
    assert_close(out, np.linspace(start, end, steps).astype(np.float32), rtol=1e-6, atol=1e-6)
    assert_close(
        flow.linspace(start, end, steps, dtype=flow.float64), np.linspace(start, end, steps)
    )


@pytest.mark.parametrize("n,m", [(3, None), (2, 4), (4, 2), (0, None), (1, 1)])
def test_eye(n, m):
    out = flow.eye(n, m)
    assert_close(out, np.eye(n, m, dtype=np.float32))
    assert_close(flow.eye(n, m, dtype=flow.int64), np.eye(n, m, dtype=np.int64))


def test_rand_randn_randint_distributions():
    flow.manual_seed(0)
    u = to_numpy(flow.rand(20000))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - np.sqrt(1 / 12)) < 0.01
    n = to_numpy(flow.randn(20000, dtype=flow.float64))
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1.0) < 0.03
    i = flow.randint(-3, 5, (20000,))
    assert i.dtype == flow.int64
    vals = to_numpy(i)
    assert vals.min() == -3 and vals.max() == 4
    counts = np.bincount(vals + 3)
    assert counts.min() > 2000
    j = flow.randint(4, (2, 3), dtype=flow.int32)
    assert j.dtype == flow.int32 and tuple(j.shape) == (2, 3)
    assert 0 <= to_numpy(j).min() and to_numpy(j).max() < 4
    for dt in (flow.float16, flow.bfloat16, flow.float64):
        r = flow.rand(100, dtype=dt)
        assert r.dtype == dt
        assert 0 <= to_numpy(r).min() and to_numpy(r).max() <= 1


def test_random_ops_reject_bad_arguments():
    with pytest.raises(TypeError, match=r"\[rand\]"):
        flow.rand(3, dtype=flow.int64)
    with pytest.raises(RuntimeError, match=r"\[randint\]"):
        flow.randint(3, 3, (2,))


def test_manual_seed_reproduces_sequences():
    flow.manual_seed(123)
    a1, b1, c1 = flow.rand(5), flow.randn(2, 3), flow.randint(0, 100, (4,))
    flow.manual_seed(123)
    a2, b2, c2 = flow.rand(5), flow.randn(2, 3), flow.randint(0, 100, (4,))
    for x, y in ((a1, a2), (b1, b2), (c1, c2)):
        np.testing.assert_array_equal(to_numpy(x), to_numpy(y))
    assert not np.array_equal(to_numpy(flow.rand(5)), to_numpy(a1))
    flow.manual_seed(124)
    assert not np.array_equal(to_numpy(flow.rand(5)), to_numpy(a1))


def test_generator_objects_are_independent_of_the_default():
    g1, g2 = flow.Generator(), flow.Generator()
    g1.manual_seed(7)
    g2.manual_seed(7)
    flow.manual_seed(0)
    a = flow.rand(4, generator=g1)
    flow.rand(10)  # advancing the default generator does not affect g2
    b = flow.rand(4, generator=g2)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    assert g1.initial_seed() == 7
    state = g1.get_state()
    x = flow.randn(3, generator=g1)
    g1.set_state(state)
    y = flow.randn(3, generator=g1)
    np.testing.assert_array_equal(to_numpy(x), to_numpy(y))
    assert flow.Generator(seed=5).initial_seed() == 5
    assert flow.default_generator() is not None


def test_random_in_place_fills_use_generators():
    g = flow.Generator(3)
    t = flow.empty(1000)
    t.uniform_(-2.0, 2.0, generator=g)
    v = to_numpy(t)
    assert v.min() >= -2 and v.max() < 2 and abs(v.mean()) < 0.2
    t.normal_(5.0, 0.5)
    v = to_numpy(t)
    assert abs(v.mean() - 5.0) < 0.1 and abs(v.std() - 0.5) < 0.1


def test_like_random_ops():
    base = flow.zeros(3, 4, dtype=flow.float64)
    assert flow.rand_like(base).dtype == flow.float64
    assert tuple(flow.randn_like(base).shape) == (3, 4)
    r = flow.randint_like(flow.zeros(5, dtype=flow.int32), 2, 4)
    assert r.dtype == flow.int32 and set(to_numpy(r).tolist()) <= {2, 3}


# ---- numpy interop -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "np_dtype",
    [np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8, np.bool_],
)
def test_from_numpy_shares_memory_both_ways(np_dtype):
    a = np.zeros((2, 3), np_dtype)
    t = flow.from_numpy(a)
    assert tuple(t.shape) == (2, 3)
    a[0, 1] = 1
    assert to_numpy(t)[0, 1] == 1
    with flow.no_grad():
        t[1, 2] = 1
    assert a[1, 2] == 1
    assert t.data_ptr() == a.ctypes.data


def test_numpy_shares_memory_with_tensor():
    t = flow.zeros(2, 3)
    a = t.numpy()
    a[1, 1] = 4.0
    assert t[1, 1].item() == 4.0
    t.fill_(2.0)
    assert a[0, 0] == 2.0
    v = t.t().numpy()  # a view keeps its strides
    assert v.shape == (3, 2) and not v.flags.c_contiguous
    v[2, 0] = -1.0
    assert t[0, 2].item() == -1.0


def test_from_numpy_keeps_strided_views_and_copies_negative_strides():
    base = np.arange(12.0).reshape(3, 4)
    view = base[:, ::2]
    t = flow.from_numpy(view)
    assert t.stride() == (4, 2)
    base[0, 2] = 100.0
    assert t[0, 1].item() == 100.0
    flipped = flow.from_numpy(base[::-1])
    assert_close(flipped, base[::-1])
    assert_close(flow.from_numpy(base.T), base.T)


def test_as_tensor_on_numpy_shares_memory():
    a = np.ones(3)
    t = flow.as_tensor(a)
    a[0] = 9.0
    assert t[0].item() == 9.0
    assert flow.as_tensor(t) is t
    assert flow.as_tensor(a, dtype=flow.float32).dtype == flow.float32


def test_numpy_interop_errors_and_array_protocol():
    assert flow.from_numpy(np.zeros(2, np.complex64)).dtype == flow.complex64
    assert flow.from_numpy(np.zeros(2, np.complex128)).dtype == flow.complex128
    with pytest.raises(TypeError, match=r"\[from_numpy\]"):
        flow.from_numpy(np.zeros(2, np.clongdouble))
    with pytest.raises(TypeError, match=r"\[numpy\].*bfloat16"):
        flow.ones(2, dtype=flow.bfloat16).numpy()
    t = flow.tensor([[1.0, 2.0]])
    assert np.asarray(t).shape == (1, 2)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    out = np.ones(2) + flow.ones(2)  # numpy defers to the tensor's reflected operator
    assert isinstance(out, flow.Tensor)


def test_numpy_of_zero_size_and_0d():
    assert flow.zeros(0, 3).numpy().shape == (0, 3)
    assert flow.tensor(1.5).numpy().shape == ()
    assert flow.from_numpy(np.zeros((0, 2))).shape == (0, 2)


# ---- in-place ops ------------------------------------------------------------------------


def test_in_place_arithmetic_values_and_identity():
    x = rng().randn(2, 3)
    t = tensor(x)
    assert t.add_(1.0) is t
    x = x + 1.0
    t.add_(tensor(np.arange(3.0)), alpha=2.0)
    x = x + 2.0 * np.arange(3.0)
    t.sub_(0.5)
    x = x - 0.5
    assert t.mul_(tensor(np.array([[2.0], [3.0]]))) is t
    x = x * np.array([[2.0], [3.0]])
    t.div_(4.0)
    x = x / 4.0
    t += 1
    t -= tensor(np.ones(3))
    t *= 2
    t /= 2
    assert_close(t, x)
    assert t.zero_() is t
    assert_close(t, np.zeros((2, 3)))
    assert t.fill_(3.5) is t
    assert_close(t, np.full((2, 3), 3.5))
    t.clamp_(max=1.0)
    assert_close(t, np.ones((2, 3)))


def test_in_place_dtype_rules():
    i = flow.tensor([1, 2, 3])
    i.add_(2)
    assert i.dtype == flow.int64
    assert_close(i, np.array([3, 4, 5]))
    with pytest.raises(TypeError, match=r"\[add_\].*float32"):
        i.add_(1.5)
    with pytest.raises(TypeError, match=r"\[div_\]"):
        i.div_(2)
    f = flow.ones(3, dtype=flow.float16)
    f.add_(flow.ones(3, dtype=flow.float64))  # the result is cast back to float16
    assert f.dtype == flow.float16
    assert_close(f, np.full(3, 2.0))
    with pytest.raises(RuntimeError, match=r"\[add_\].*\(3,\).*\(2, 3\)"):
        flow.ones(3).add_(flow.ones(2, 3))


def test_copy_converts_dtype_broadcasts_and_handles_overlap():
    t = flow.zeros(2, 3)
    assert t.copy_(flow.tensor([1, 2, 3])) is t
    assert_close(t, np.array([[1, 2, 3], [1, 2, 3]], np.float32))
    t.copy_(np.array([[4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]))
    assert_close(t, np.array([[4, 5, 6], [7, 8, 9]], np.float32))
    sq = flow.tensor(np.arange(9.0).reshape(3, 3))
    sq.copy_(sq.t())  # source overlaps the destination
    assert_close(sq, np.arange(9.0).reshape(3, 3).T)
    with pytest.raises(RuntimeError, match=r"\[copy_\](?=.*\(4,\))(?=.*\(2, 3\))"):
        t.copy_(flow.ones(4))


def test_in_place_into_an_expanded_view_raises():
    e = flow.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match=r"\[add_\].*\(2, 3\).*expanded"):
        e.add_(1.0)
    with pytest.raises(RuntimeError, match=r"\[copy_\].*expanded"):
        e.copy_(flow.ones(2, 3))
    assert_close(e, np.zeros((2, 3), np.float32))


def test_in_place_on_views_writes_to_the_base():
    t = flow.zeros(3, 4)
    t[1].fill_(1.0)
    t[:, 2].add_(2.0)
    t.t()[3].copy_(flow.tensor([7.0, 8.0, 9.0]))
    t.narrow(0, 2, 1).mul_(0.0)
    ref = np.zeros((3, 4), np.float32)
    ref[1] = 1.0
    ref[:, 2] += 2.0
    ref[:, 3] = [7, 8, 9]
    ref[2] = 0.0
    assert_close(t, ref)


def test_in_place_ops_bump_the_shared_version_counter():
    t = flow.zeros(3)
    v = t[1:]
    versions = [t._version]
    for op in (
        lambda: t.add_(1),
        lambda: v.mul_(2),
        lambda: t.zero_(),
        lambda: v.fill_(1.0),
        lambda: t.copy_(flow.ones(3)),
        lambda: t.clamp_(0, 1),
        lambda: t.sub_(1),
    ):
        op()
        versions.append(t._version)
        assert v._version == t._version
    assert all(b > a for a, b in zip(versions, versions[1:]))


def test_in_place_on_leaf_requiring_grad_raises_unless_no_grad():
    w = flow.ones(3, requires_grad=True)
    for name, op in (
        ("add_", lambda: w.add_(1)),
        ("mul_", lambda: w.mul_(2)),
        ("zero_", lambda: w.zero_()),
        ("fill_", lambda: w.fill_(1.0)),
        ("copy_", lambda: w.copy_(flow.zeros(3))),
    ):
        with pytest.raises(RuntimeError, match=rf"\[{name}\].*leaf"):
            op()
    with flow.no_grad():
        w.mul_(3.0)
    assert_close(w, np.full(3, 3.0, np.float32))
    assert w.is_leaf and w.requires_grad


def test_modifying_a_tensor_saved_for_backward_raises_naming_the_op():
    x = flow.ones(3, requires_grad=True)
    y = x * 2
    z = y * y  # mul saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"\[mul\].*modified by an in-place"):
        z.sum().backward()

    x = flow.ones(3, requires_grad=True)
    e = (x * 1).exp()  # exp saves its output
    e.mul_(2)
    with pytest.raises(RuntimeError, match=r"\[exp\].*version"):
        e.sum().backward()

    x = flow.ones(3, requires_grad=True)
    y = x + 0
    s = y.sin()
    with flow.no_grad():
        y[0] = 5.0  # setitem writes through a view of y and bumps the shared version
    with pytest.raises(RuntimeError, match=r"\[sin\]"):
        s.sum().backward()


def test_in_place_that_does_not_touch_saved_tensors_is_fine():
    x = flow.ones(3, requires_grad=True)
    y = x * 2
    z = y + 1  # add saves nothing
    y.mul_(5)
    z.sum().backward()
    assert_close(x.grad, np.full(3, 2.0, np.float32))


def test_gradients_through_in_place_ops():
    def fn(a, b):
        c = a * 1.0
        c.add_(b, alpha=2.0)
        c.mul_(a)
        c.sub_(b)
        c.div_(b * b + 1.0)
        return c

    check_grad(fn, [rng().randn(2, 3), rng(1).randn(3)])


def test_copy_into_non_leaf_routes_gradient_to_the_source():
    x = tensor(rng().randn(3), requires_grad=True)
    src = tensor(rng(1).randn(3), requires_grad=True)
    y = x * 2
    y.copy_(src * 3)
    y.sum().backward()
    assert_close(x.grad, np.zeros(3, np.float32))
    assert_close(src.grad, np.full(3, 3.0, np.float32))


def test_fill_and_zero_of_non_leaf_cut_the_gradient():
    x = tensor(np.ones(3), requires_grad=True)
    y = x * 2
    y.fill_(4.0)
    (y * x).sum().backward()
    assert_close(x.grad, np.full(3, 4.0))
    x2 = tensor(np.ones(3), requires_grad=True)
    y2 = x2 * 2
    y2.zero_()
    (y2 + x2).sum().backward()
    assert_close(x2.grad, np.ones(3))


def test_clamp_in_place_masks_the_gradient():
    x = tensor([-2.0, 0.3, 2.0], requires_grad=True)
    y = x * 1
    y.clamp_(-1.0, 1.0)
    (y * 2).sum().backward()
    assert_close(x.grad, np.array([0.0, 2.0, 0.0], np.float32))
    check_grad(lambda a: (a * 1).clamp_(min=-0.5) * a, [np.array([-1.0, 0.2, 1.5])])


def test_in_place_on_view_of_tensor_requiring_grad_raises():
    x = flow.ones(2, 3, requires_grad=True)
    y = x * 1
    with pytest.raises(RuntimeError, match=r"\[add_\].*view"):
        y[0].add_(1.0)


def test_set_num_threads_caps_and_lifts_the_kernel_thread_count():
    import os

    before = flow.get_num_threads()
    try:
        flow.set_num_threads(1)
        assert flow.get_num_threads() == 1
        x = flow.randn(1 << 20)
        assert abs((x + x).sum().item() - 2 * x.sum().item()) < 1e-2
    finally:
        flow.set_num_threads(0)
    assert flow.get_num_threads() == before or flow.get_num_threads() == os.cpu_count()


def test_memory_statistics_follow_cpu_tensors():
    base = flow.memory_allocated()
    a = flow.zeros(1000, 1000)
    assert flow.memory_allocated() - base >= 4_000_000
    flow.reset_peak_memory_stats()
    b = a + 1
    peak = flow.max_memory_allocated()
    assert peak >= flow.memory_allocated() >= base + 8_000_000
    del a, b
    assert flow.memory_allocated() == base
    assert flow.max_memory_allocated() == peak  # until the next reset
