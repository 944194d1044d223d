"""Indexing ops: index_select, gather, scatter_add and tensor indexing, with gradients."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import assert_close, check_grad, rng, tensor


def _x(shape=(3, 4, 5), seed=0):
    return rng(seed).randn(*shape)


# ---- index_select ------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("idx_dtype", [flow.int64, flow.int32], ids=str)
def test_index_select(dim, idx_dtype):
    x = _x()
    idx = np.array([2, 0, 2, 1])
    idx = idx[idx < x.shape[dim]]
    out = flow.index_select(tensor(x), dim, flow.tensor(idx).to(idx_dtype))
    assert_close(out, np.take(x, idx, axis=dim))
    assert_close(tensor(x).index_select(dim, flow.tensor(idx)), np.take(x, idx, axis=dim))
    # repeated indices accumulate in the gradient
    check_grad(lambda t: flow.index_select(t, dim, flow.tensor(idx)), [_x((3, 3, 3), seed=1)])


def test_index_select_non_contiguous_and_scalar_index():
    x = _x((4, 6))
    out = flow.index_select(tensor(x).t(), 0, flow.tensor([5, 1]))
    assert_close(out, x.T[[5, 1]])
    assert_close(flow.index_select(tensor(x), 1, flow.tensor(3)), x[:, [3]])
    check_grad(lambda t: flow.index_select(t.t(), 1, flow.tensor([0, 0, 2])), [_x((3, 2))])


def test_index_select_empty_index():
    out = flow.index_select(flow.ones(3, 4), 1, flow.tensor([], dtype=flow.int64))
    assert tuple(out.shape) == (3, 0)


def test_index_select_errors():
    with pytest.raises(IndexError, match=r"\[index_select\].*7"):
        flow.index_select(flow.ones(3, 4), 1, flow.tensor([0, 7]))
    with pytest.raises(IndexError, match=r"\[index_select\]"):
        flow.index_select(flow.ones(3, 4), 1, flow.tensor([-1]))
    with pytest.raises(TypeError, match=r"\[index_select\].*float"):
        flow.index_select(flow.ones(3, 4), 1, flow.tensor([0.0]))
    with pytest.raises(IndexError, match=r"\[index_select\]"):
        flow.index_select(flow.ones(3, 4), 2, flow.tensor([0]))


# ---- gather / scatter_add ----------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather(dim):
    x = _x()
    d = dim % 3
    shape = [2, 3, 2]  # index may be smaller than the input outside `dim`...
    shape[d] = 6  # ...and any size along it
    idx = rng(1).randint(0, x.shape[d], size=shape)
    region = tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(shape))
    out = flow.gather(tensor(x), dim, flow.tensor(idx))
    assert_close(out, np.take_along_axis(x[region], idx, axis=d))
    check_grad(lambda t: t.gather(dim, flow.tensor(idx)), [x])


def test_gather_non_contiguous_input_and_int32_index():
    x = _x((4, 3))
    idx = np.array([[0, 3], [2, 2], [1, 0]])
    out = flow.gather(tensor(x).t(), 1, flow.tensor(idx, dtype=flow.int32))
    assert_close(out, np.take_along_axis(x.T, idx, axis=1))
    check_grad(lambda t: flow.gather(t.t(), 1, flow.tensor(idx)), [x])


def test_gather_errors():
    with pytest.raises(IndexError, match=r"\[gather\].*4"):
        flow.gather(flow.ones(2, 4), 1, flow.tensor([[4]]))
    with pytest.raises(RuntimeError, match=r"\[gather\].*\(2,\).*\(2, 4\)"):
        flow.gather(flow.ones(2, 4), 1, flow.tensor([0, 1]))
    with pytest.raises(TypeError, match=r"\[gather\]"):
        flow.gather(flow.ones(2, 4), 1, flow.tensor([[0.5]]))


def _np_scatter_add(x, dim, idx, src):
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[dim] = idx[pos]
        out[tuple(target)] += src[pos]
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add(dim):
    r = rng()
    x = r.randn(3, 4)
    src = r.randn(3, 5)  # larger than the index: only the index's region is used
    idx_shape = (2, 3)
    idx = r.randint(0, x.shape[dim], size=idx_shape)
    out = flow.scatter_add(tensor(x), dim, flow.tensor(idx), tensor(src))
    ref = _np_scatter_add(x, dim % 2, idx, src[:2, :3])
    assert_close(out, ref)
    assert_close(tensor(x).scatter_add(dim, flow.tensor(idx), tensor(src)), ref)
    check_grad(lambda a, s: flow.scatter_add(a, dim, flow.tensor(idx), s), [x, src])


def test_scatter_add_integer_tensors_and_errors():
    x = flow.zeros(5, dtype=flow.int64)
    out = flow.scatter_add(x, 0, flow.tensor([0, 1, 0, 4]), flow.tensor([1, 2, 3, 4]))
    assert_close(out, np.array([4, 2, 0, 0, 4]))
    assert_close(x, np.zeros(5, np.int64))  # out of place
    with pytest.raises(IndexError, match=r"\[scatter_add\].*5"):
        flow.scatter_add(x, 0, flow.tensor([5]), flow.tensor([1]))
    with pytest.raises(RuntimeError, match=r"\[scatter_add\]"):
        flow.scatter_add(flow.zeros(2, 2), 0, flow.tensor([[0, 1, 0]]), flow.ones(1, 2))


# ---- Python indexing ---------------------------------------------------------------------

BASIC_KEYS = [
    1,
    -1,
    (0, 2),
    (slice(None), 1),
    slice(1, None),
    slice(None, None, 2),
    (slice(None), slice(None, None, 3)),
    (slice(None), slice(1, 4, 2), 0),
    (slice(-2, None), slice(None, -1)),
    (Ellipsis, 1),
    (1, Ellipsis),
    (None, 0),
    (slice(None), None, slice(2, 3)),
    (Ellipsis, None),
    (slice(10, 20),),
    (0, slice(None), -2),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=str)
def test_basic_indexing_is_a_view(key):
    x = _x()
    t = tensor(x)
    out = t[key]
    assert_close(out, x[key])
    if out.numel() > 0:
        assert out.data_ptr() >= t.data_ptr()  # no copy: inside t's storage
    check_grad(lambda a: a[key], [x])


@pytest.mark.parametrize(
    "key",
    [
        [0, 2, 2],
        (slice(None), [3, 0]),
        (1, [0, 0, 1]),
        (Ellipsis, [4, 1]),
        [[0, 1], [2, 0]],
        [-1, 0, -3],
        (slice(None), [-4, 2]),
    ],
    ids=str,
)
def test_integer_array_indexing(key):
    x = _x()
    t = tensor(x)
    assert_close(t[key], x[key])
    if isinstance(key, tuple):
        flow_key = tuple(flow.tensor(k) if isinstance(k, list) else k for k in key)
        np_key = tuple(np.array(k) if isinstance(k, list) else k for k in key)
    else:
        flow_key, np_key = flow.tensor(key), np.array(key)
    assert_close(t[flow_key], x[np_key])
    check_grad(lambda a: a[flow_key], [x])


def test_indexing_with_0d_integer_tensor():
    x = _x((4, 3))
    assert_close(tensor(x)[flow.tensor(2)], x[2])


def test_indexing_errors():
    t = flow.ones(3, 4)
    with pytest.raises(IndexError, match=r"\[select\].*5"):
        t[5]
    with pytest.raises(IndexError, match=r"\[index\].*\(3, 4\)"):
        t[0, 0, 0]
    with pytest.raises((TypeError, IndexError), match=r"\[index"):
        t[flow.tensor([0.0, 1.0])]
    with pytest.raises((TypeError, IndexError), match=r"\[index"):
        t[1.5]
    with pytest.raises(IndexError, match=r"\[index_select\]"):
        t[[0, 3]]
    with pytest.raises(IndexError, match="ellipsis"):
        t[..., ...]


def test_setitem_writes_through_views():
    x = _x((3, 4))
    t = tensor(x)
    t[0] = 1.5
    x[0] = 1.5
    t[:, 1] = tensor(np.arange(3.0))
    x[:, 1] = np.arange(3.0)
    t[1:, ::2] = tensor(np.array([[-1.0, -2.0], [-3.0, -4.0]]))
    x[1:, ::2] = [[-1.0, -2.0], [-3.0, -4.0]]
    t[2, 3] = 7
    x[2, 3] = 7
    assert_close(t, x)
    v0 = t._version
    t[..., 0] = 0.0
    assert t._version == v0 + 1  # one write, one version (as in PyTorch), views included
    t[...] = 1.0
    t[t > 0] = 2.0
    assert t._version == v0 + 3


def test_torch_style_keyword_arguments():
    x = _x((3, 4))
    t = tensor(x)
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    assert_close(t.index_select(dim=1, index=flow.tensor([2, 0])), x[:, [2, 0]])
    assert_close(flow.index_select(t, dim=0, index=flow.tensor([1])), x[[1]])
    assert_close(t.gather(dim=1, index=flow.tensor(idx)), np.take_along_axis(x, idx, 1))
    assert_close(flow.gather(t, dim=1, index=flow.tensor(idx)), np.take_along_axis(x, idx, 1))
    out = flow.scatter_add(
        t, dim=1, index=flow.tensor(idx), src=flow.ones(3, 2, dtype=flow.float64)
    )
    assert_close(out, _np_scatter_add(x, 1, idx, np.ones((3, 2))))
    out = t.scatter_add(dim=1, index=flow.tensor(idx), src=flow.ones(3, 2, dtype=flow.float64))
    assert_close(out, _np_scatter_add(x, 1, idx, np.ones((3, 2))))
