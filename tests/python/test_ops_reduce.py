"""Reductions over any axes with keepdim: forward against numpy, gradients against finite
differences."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import FLOAT_DTYPES, assert_close, check_grad, rng, tensor, to_numpy

AXES = [None, 0, 1, -1, (0, 2), (2, 0), (1, 2), (0, 1, 2), [-1, 0]]


def _np_axes(axes):
    return tuple(axes) if isinstance(axes, (list, tuple)) else axes


def _x(shape=(2, 3, 4), seed=0):
    return rng(seed).randn(*shape)


def _var(x, axis, correction):
    n = x.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
    return np.sum((x - x.mean(axis=axis, keepdims=True)) ** 2, axis=axis) / max(n - correction, 0)


REDUCTIONS = {
    "sum": (lambda t, d, k: t.sum(d, keepdim=k), lambda x, d, k: x.sum(axis=d, keepdims=k)),
    "flow.sum": (lambda t, d, k: flow.sum(t, d, k), lambda x, d, k: x.sum(axis=d, keepdims=k)),
    "mean": (lambda t, d, k: t.mean(d, keepdim=k), lambda x, d, k: x.mean(axis=d, keepdims=k)),
    "prod": (lambda t, d, k: t.prod(d, keepdim=k), lambda x, d, k: x.prod(axis=d, keepdims=k)),
    "amax": (lambda t, d, k: flow.amax(t, d, k), lambda x, d, k: x.max(axis=d, keepdims=k)),
    "amin": (lambda t, d, k: t.amin(d, keepdim=k), lambda x, d, k: x.min(axis=d, keepdims=k)),
    "logsumexp": (
        lambda t, d, k: t.logsumexp(d, keepdim=k),
        lambda x, d, k: np.log(np.exp(x).sum(axis=d, keepdims=k)),
    ),
    "var": (
        lambda t, d, k: t.var(d, keepdim=k),
        lambda x, d, k: _keep(_var(x, d, 1), x, d, k),
    ),
    "std_biased": (
        lambda t, d, k: flow.std(t, d, unbiased=False, keepdim=k),
        lambda x, d, k: _keep(np.sqrt(_var(x, d, 0)), x, d, k),
    ),
}


def _keep(r, x, d, k):
    if not k:
        return r
    axes = range(x.ndim) if d is None else np.atleast_1d(d)
    return np.expand_dims(r, tuple(a % x.ndim for a in axes))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_forward(name, axes, keepdim):
    if name == "logsumexp" and axes is None:
        axes = (0, 1, 2)  # logsumexp has no "all dims" default, like PyTorch
    fn, ref = REDUCTIONS[name]
    x = _x()
    out = fn(tensor(x), axes, keepdim)
    assert out.dtype == flow.float64
    assert_close(out, ref(x, _np_axes(axes), keepdim))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axes", [None, 1, (0, 2)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_backward(name, axes, keepdim):
    if name == "logsumexp" and axes is None:
        axes = (0, 1, 2)
    fn, _ = REDUCTIONS[name]
    x = _x((2, 3, 2), seed=1)
    if name == "prod":
        x = np.where(np.abs(x) < 0.3, 0.7, x)
    check_grad(lambda t: fn(t, axes, keepdim), [x])


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "var", "logsumexp", "prod"])
def test_reduction_on_non_contiguous_input(name):
    fn, ref = REDUCTIONS[name]
    x = _x((3, 4, 2))
    perm = tensor(x).permute(2, 0, 1)
    assert not perm.is_contiguous()
    assert_close(fn(perm, (0, 2), False), ref(x.transpose(2, 0, 1), (0, 2), False))
    assert_close(fn(tensor(x)[:, ::2], 1, True), ref(x[:, ::2], 1, True))
    check_grad(lambda t: fn(t.permute(2, 0, 1), (1,), False), [_x((2, 2, 3), seed=3)])


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "logsumexp"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_reduction_low_precision_forward(name, dtype):
    fn, ref = REDUCTIONS[name]
    dt = FLOAT_DTYPES[dtype]
    xt = tensor(_x((4, 8)), dtype=dt)
    out = fn(xt, 1, False)
    assert out.dtype == dt
    assert_close(out, ref(to_numpy(xt).astype(np.float64), 1, False), rtol=2e-2, atol=2e-2)


def test_reductions_of_0d_tensor():
    x = tensor(np.array(2.5))
    for fn in (flow.sum, flow.mean, flow.amax, flow.prod):
        out = fn(x)
        assert out.shape == ()
        assert_close(out, np.array(2.5))
    assert_close(x.sum(0), np.array(2.5))
    assert_close(x.sum(-1, keepdim=True), np.array(2.5))
    assert_close(x.max(0).values, np.array(2.5))
    check_grad(lambda t: t.sum(0) * t.mean(), [np.array(1.5)])


def test_zero_size_reductions():
    z = tensor(np.zeros((0, 3)), requires_grad=True)
    s = z.sum(0)
    assert_close(s, np.zeros(3))
    s.sum().backward()
    assert tuple(z.grad.shape) == (0, 3)
    assert_close(z.sum(1), np.zeros(0))
    assert_close(flow.ones(0, 3).prod(0), np.ones(3, np.float32))
    assert np.isnan(to_numpy(flow.ones(0, 3).mean(0))).all()
    with pytest.raises(RuntimeError, match=r"\[amax\]"):
        flow.amax(flow.ones(0, 3), 0)
    with pytest.raises(RuntimeError, match=r"\[max\]"):
        flow.ones(0, 3).max(0)
    assert tuple(flow.ones(0, 3).amax(1).shape) == (0,)


def test_one_element_dims_reduce():
    x = _x((1, 3, 1))
    assert_close(tensor(x).sum((0, 2)), x.sum(axis=(0, 2)))
    check_grad(lambda t: t.mean((0, 2), keepdim=True), [x])
    check_grad(lambda t: t.amax(0), [x])


# ---- dtypes of reductions ----------------------------------------------------------------


def test_sum_and_prod_of_integers_and_bools_accumulate_in_int64():
    x = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    s = flow.tensor(x).sum(1)
    assert s.dtype == flow.int64
    assert_close(s, x.sum(1).astype(np.int64))
    assert flow.tensor(x).prod().dtype == flow.int64
    assert_close(flow.tensor(x).prod(), np.array(720))
    b = flow.tensor([[True, False, True], [True, True, True]])
    assert b.sum().dtype == flow.int64
    assert_close(b.sum(1), np.array([2, 3]))


def test_sum_dtype_argument():
    x = flow.tensor([1, 2, 3], dtype=flow.int32)
    out = x.sum(dtype=flow.float64)
    assert out.dtype == flow.float64
    assert_close(out, np.array(6.0))
    h = tensor(np.full(2048, 1.0), dtype=flow.float16)
    assert_close(h.sum(dtype=flow.float32), np.array(2048.0))


def test_float16_sum_accumulates_in_float32():
    # a float16 accumulator would stall at 2048
    h = tensor(np.full(4096, 1.0), dtype=flow.float16)
    assert_close(h.sum().float(), np.array(4096.0), rtol=0, atol=0)


def test_mean_var_of_integers_raise_type_error():
    x = flow.tensor([1, 2, 3])
    with pytest.raises(TypeError, match=r"\[mean\]"):
        x.mean()
    with pytest.raises(TypeError, match=r"\[var\]"):
        x.var()


def test_duplicate_axes_raise():
    with pytest.raises(RuntimeError, match=r"\[sum\]"):
        flow.ones(2, 3).sum((1, -1))


# ---- max/min with indices, argmax/argmin --------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("is_max", [True, False])
def test_max_min_with_dim_return_values_and_indices(dim, keepdim, is_max):
    x = _x()
    t = tensor(x)
    res = t.max(dim, keepdim) if is_max else flow.min(t, dim, keepdim=keepdim)
    values, indices = res
    assert res.values is values and res.indices is indices
    ref_v = (x.max if is_max else x.min)(axis=dim, keepdims=keepdim)
    ref_i = (np.argmax if is_max else np.argmin)(x, axis=dim)
    if keepdim:
        ref_i = np.expand_dims(ref_i, dim)
    assert indices.dtype == flow.int64
    assert_close(values, ref_v)
    assert_close(indices, ref_i)
    check_grad(lambda a: (a.max if is_max else a.min)(dim, keepdim)[0], [_x((2, 3, 2), seed=2)])


def test_max_without_dim_is_amax_and_with_tensor_is_maximum():
    x = _x()
    assert_close(tensor(x).max(), np.array(x.max()))
    assert_close(flow.min(tensor(x)), np.array(x.min()))
    y = _x(seed=5)
    assert_close(flow.max(tensor(x), tensor(y)), np.maximum(x, y))
    assert_close(tensor(x).min(tensor(y)), np.minimum(x, y))


def test_max_with_dim_on_ties_returns_first_index_and_routes_gradient_there():
    x = tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    v, i = x.max(1)
    assert_close(i, np.array([1, 0]))
    v.sum().backward()
    assert_close(x.grad, np.array([[0, 1, 0], [1, 0, 0]], np.float32))


def test_amax_splits_gradient_evenly_between_ties():
    x = tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 0.0]], requires_grad=True)
    x.amax(1).sum().backward()
    assert_close(x.grad, np.array([[0, 0.5, 0.5], [1, 0, 0]], np.float32))
    y = tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    y.amin(1).sum().backward()
    assert_close(y.grad, np.array([[1, 0, 0]], np.float32))


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin(dim, keepdim):
    x = _x((3, 5))
    t = tensor(x)
    for fn, ref in ((flow.argmax, np.argmax), (flow.argmin, np.argmin)):
        out = fn(t, dim, keepdim)
        assert out.dtype == flow.int64
        expected = ref(x, axis=dim)
        if keepdim and dim is not None:
            expected = np.expand_dims(expected, dim)
        assert_close(out, expected)


def test_argmax_on_integer_and_non_contiguous_inputs():
    x = rng().randint(0, 100, size=(4, 6))
    t = flow.tensor(x)
    assert_close(t.argmax(1), x.argmax(1))
    assert_close(t.t().argmax(1), x.T.argmax(1))
    assert_close(t[:, ::2].argmin(0), x[:, ::2].argmin(0))
    assert_close(t.argmax(), np.array(x.argmax()))


def test_max_of_integer_tensor_keeps_dtype():
    x = flow.tensor([[3, 9, 1]], dtype=flow.int32)
    v, i = x.max(1)
    assert v.dtype == flow.int32
    assert_close(v, np.array([9], np.int32))
    assert flow.amax(x).dtype == flow.int32


# ---- var / std ---------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [None, 0, (0, 1), -1])
@pytest.mark.parametrize(
    "kwargs,correction",
    [({}, 1), ({"unbiased": False}, 0), ({"correction": 0}, 0), ({"correction": 2}, 2)],
)
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_std_corrections(dim, kwargs, correction, keepdim):
    x = _x((4, 3, 5))
    t = tensor(x)
    ref = _keep(_var(x, dim, correction), x, dim, keepdim)
    assert_close(t.var(dim, keepdim=keepdim, **kwargs), ref)
    assert_close(flow.std(t, dim, keepdim=keepdim, **kwargs), np.sqrt(ref))
    check_grad(lambda a: a.std(dim, keepdim=keepdim, **kwargs), [_x((3, 2, 3), seed=4)])


def test_var_matches_numpy_ddof():
    x = _x((5, 6))
    assert_close(tensor(x).var(1), x.var(axis=1, ddof=1))
    assert_close(tensor(x).std(0, unbiased=False), x.std(axis=0))


# ---- logsumexp ---------------------------------------------------------------------------


def test_logsumexp_is_stable_for_large_inputs_and_handles_neg_inf_rows():
    x = np.array([[1000.0, 1000.0], [-1000.0, -1001.0]])
    out = flow.logsumexp(tensor(x), 1)
    ref = np.array([1000.0 + np.log(2.0), -1000.0 + np.log1p(np.exp(-1.0))])
    assert_close(out, ref)
    inf_row = tensor(np.array([[-np.inf, -np.inf], [0.0, 0.0]]))
    res = to_numpy(inf_row.logsumexp(1))
    assert res[0] == -np.inf and np.isclose(res[1], np.log(2.0))


def test_logsumexp_gradient_is_softmax():
    x = _x((3, 4))
    t = tensor(x, requires_grad=True)
    t.logsumexp(1).sum().backward()
    e = np.exp(x - x.max(1, keepdims=True))
    assert_close(t.grad, e / e.sum(1, keepdims=True))


# ---- all / any ---------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_any(dim, keepdim):
    x = np.array([[True, False, True], [True, True, True]])
    t = flow.tensor(x)
    for fn, ref in ((flow.all, np.all), (flow.any, np.any)):
        out = fn(t, dim, keepdim)
        assert out.dtype == flow.bool
        assert_close(out, ref(x, axis=_np_axes(dim), keepdims=keepdim))
    ints = np.array([[0, 2, 0], [1, 0, 0]])
    assert_close(flow.tensor(ints).any(1), ints.any(1))
    assert_close(flow.tensor(ints).all(0), ints.all(0))
    assert_close(tensor(ints.astype(np.float64)).all(), np.array(False))


def test_all_any_of_empty():
    assert_close(flow.ones(0, dtype=flow.bool).all(), np.array(True))
    assert_close(flow.ones(0, dtype=flow.bool).any(), np.array(False))


def test_prod_gradient_with_a_zero():
    x = np.array([[2.0, 0.0, 3.0], [1.5, -2.0, 0.5]])
    t = tensor(x, requires_grad=True)
    t.prod(1).sum().backward()
    assert_close(t.grad, np.array([[0.0, 6.0, 0.0], [-1.0, 0.75, -3.0]]))
