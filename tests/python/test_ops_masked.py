"""Boolean masks and scatter: masked_select, masked_scatter, x[mask] and x[mask] = v, the
in-place masked_fill_ / masked_scatter_ / scatter_, and scatter, against numpy with gradients."""

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import _C
from _check import assert_close, check_grad, rng, tensor


def _mask(*shape, seed=0):
    return rng(seed).rand(*shape) > 0.5


# ---- masked_select and x[mask] -----------------------------------------------------------


def test_masked_select_matches_numpy_with_broadcasting():
    x, m = rng(0).randn(3, 4), _mask(3, 4)
    assert_close(flow.masked_select(tensor(x), flow.tensor(m)), x[m])
    row = _mask(4, seed=1)  # the mask broadcasts over x's rows...
    assert_close(tensor(x).masked_select(flow.tensor(row)), x[np.broadcast_to(row, x.shape)])
    col = rng(2).randn(3, 1)  # ...and x over the mask's columns
    want = np.broadcast_to(col, (3, 4))[m]
    assert_close(flow.masked_select(tensor(col), flow.tensor(m)), want)
    assert tuple(flow.masked_select(flow.ones(2, 2), flow.zeros(2, 2, dtype=flow.bool)).shape) == (
        0,
    )


def test_masked_select_gradient():
    m = flow.tensor(_mask(3, 4, seed=3))
    check_grad(lambda t: flow.masked_select(t, m), [rng(3).randn(3, 4)])
    check_grad(lambda t: flow.masked_select(t, m) * 2.0, [rng(4).randn(3, 1)])  # broadcast x


@pytest.mark.parametrize(
    "key",
    [
        lambda m: m,  # the whole tensor
        lambda m: m[:, :, 0],  # leading dimensions
        lambda m: (slice(None), m[0, :, 0]),  # a dimension after a slice
        lambda m: (Ellipsis, m[0, 0]),  # the last dimension
        lambda m: (0, m[0, :, 0], slice(1, 3)),  # with an int and a slice
        lambda m: (m[:, 0, 0], None),  # then a new axis
    ],
)
def test_boolean_mask_indexing_matches_numpy(key):
    x, m = rng(5).randn(3, 4, 5), _mask(3, 4, 5, seed=5)
    k = key(m)
    tkey = (
        tuple(flow.tensor(i) if isinstance(i, np.ndarray) else i for i in k)
        if isinstance(k, tuple)
        else flow.tensor(k)
    )
    assert_close(tensor(x)[tkey], x[k])


def test_boolean_mask_indexing_from_lists_arrays_and_0d_masks():
    x = rng(6).randn(3, 2)
    assert_close(tensor(x)[[True, False, True]], x[[True, False, True]])
    assert_close(tensor(x)[np.array([False, True, True])], x[np.array([False, True, True])])
    assert tuple(tensor(x)[flow.tensor(True)].shape) == (1, 3, 2)
    assert tuple(tensor(x)[flow.tensor(False)].shape) == (0, 3, 2)


def test_boolean_mask_indexing_gradient():
    m = flow.tensor(_mask(3, 4, seed=7))
    check_grad(lambda t: t[m], [rng(7).randn(3, 4)])
    check_grad(lambda t: t[:, m[0]] * 3.0, [rng(8).randn(3, 4)])


def test_boolean_mask_indexing_errors():
    x = flow.ones(3, 4)
    with pytest.raises(IndexError, match=r"\[index\] the mask of shape \(4,\) does not match"):
        x[flow.ones(4, dtype=flow.bool)]
    with pytest.raises(IndexError, match=r"\[index\] only one tensor/list index"):
        x[flow.ones(3, dtype=flow.bool), flow.tensor([0])]
    with pytest.raises(TypeError, match=r"\[masked_select\] mask must be a bool tensor"):
        flow.masked_select(x, flow.ones(3, 4))
    with pytest.raises(RuntimeError, match=r"\[masked_select\].*cannot be broadcast"):
        flow.masked_select(x, flow.ones(2, 4, dtype=flow.bool))


def test_boolean_mask_indexing_on_meta_and_global_says_the_shape_depends_on_the_data():
    x = flow.zeros(3, 4, device="meta")
    with pytest.raises(
        RuntimeError, match=r"\[masked_select\] the output shape depends on the data"
    ):
        x[x > 0]
    with pytest.raises(RuntimeError, match=r"depends on the data.*meta tensor"):
        flow.masked_select(x, flow.ones(4, dtype=flow.bool, device="meta"))
    g = _C.sbp_simulated_global(flow.ones(2, 4), [4, 4], flow.sbp.split(0), 0, 2)
    with pytest.raises(RuntimeError, match=r"depends on the data.*global tensor"):
        g[g > 0]
    # Errors that do not depend on the data are the same as on the cpu.
    with pytest.raises(TypeError, match=r"\[masked_select\] mask must be a bool tensor"):
        flow.masked_select(x, x)


# ---- x[mask] = value ---------------------------------------------------------------------


def test_setitem_with_a_mask_and_a_number_fills():
    x = rng(9).randn(3, 4)
    t = tensor(x)
    version = t._version
    t[t < 0] = -float("inf")
    x[x < 0] = -np.inf
    assert_close(t, x)
    assert t._version > version
    t[:, flow.tensor([True, False, True, False])] = 7
    x[:, [True, False, True, False]] = 7
    assert_close(t, x)
    t[flow.tensor([[True] * 4, [False] * 4, [True] * 4])] = flow.tensor([2.5])  # one element
    x[[0, 2]] = 2.5
    assert_close(t, x)


def test_setitem_with_a_mask_and_a_tensor_writes_in_row_major_order():
    x, m = rng(10).randn(3, 4), _mask(3, 4, seed=10)
    t = tensor(x)
    values = np.arange(m.sum(), dtype=np.float64)
    t[flow.tensor(m)] = tensor(values)
    x[m] = values
    assert_close(t, x)
    rows = np.array([True, False, True])
    t[flow.tensor(rows)] = tensor(np.array([1.0, 2.0, 3.0, 4.0]))  # broadcast over the rows
    x[rows] = [1.0, 2.0, 3.0, 4.0]
    assert_close(t, x)
    with pytest.raises(RuntimeError, match=r"\[setitem\] a value of shape \(3,\) cannot be broad"):
        t[flow.tensor(rows)] = flow.ones(3, dtype=flow.float64)


def test_setitem_with_a_mask_on_meta_fills():
    x = flow.zeros(3, 4, device="meta")
    x[x > 0] = 1.0
    assert x.device.type == "meta" and tuple(x.shape) == (3, 4)


def test_setitem_with_a_mask_is_recorded_by_autograd():
    x = tensor(rng(11).randn(3, 4), requires_grad=True)
    y = x * 2.0
    y[flow.tensor(_mask(3, 4, seed=11))] = 0.0
    y.sum().backward()
    assert_close(x.grad, np.where(_mask(3, 4, seed=11), 0.0, 2.0))


# ---- masked_fill_ ------------------------------------------------------------------------


def test_masked_fill_in_place():
    x, m = rng(12).randn(3, 4), _mask(4, seed=12)
    t = tensor(x)
    version = t._version
    out = t.masked_fill_(flow.tensor(m), 5.0)
    assert out is t and t._version == version + 1
    assert_close(t, np.where(m, 5.0, x))
    t.masked_fill_(flow.tensor(m), flow.tensor(-1.0))
    assert_close(t, np.where(m, -1.0, x))


def test_masked_fill_in_place_gradient_and_autograd_rules():
    m = flow.tensor(_mask(3, 4, seed=13))
    v = tensor(np.array(3.0), requires_grad=True)
    x = tensor(rng(13).randn(3, 4), requires_grad=True)
    y = x * x
    y.masked_fill_(m, v)
    (y * 2.0).sum().backward()
    assert_close(x.grad, np.where(m.numpy(), 0.0, 4 * x.detach().numpy()))
    assert_close(v.grad, 2.0 * m.numpy().sum())
    with pytest.raises(RuntimeError, match=r"\[masked_fill_\] a leaf tensor"):
        x.masked_fill_(m, 0.0)
    with pytest.raises(RuntimeError, match=r"\[masked_fill_\].*expanded view"):
        flow.zeros(1, 4).expand(3, 4).masked_fill_(m, 1.0)
    with pytest.raises(RuntimeError, match=r"\[masked_fill\].*not broadcastable"):
        flow.zeros(3, 1).masked_fill_(m, 1.0)
    with flow.no_grad():
        x.masked_fill_(m, 0.0)  # allowed on a leaf without grad mode
    assert_close(x.detach()[m], np.zeros(int(m.numpy().sum())))


# ---- masked_scatter ----------------------------------------------------------------------


def test_masked_scatter_matches_numpy():
    x, m = rng(14).randn(3, 4), _mask(3, 4, seed=14)
    source = rng(15).randn(12)
    want = x.copy()
    want[m] = source[: m.sum()]
    assert_close(flow.masked_scatter(tensor(x), flow.tensor(m), tensor(source)), want)
    t = tensor(x)
    assert t.masked_scatter_(flow.tensor(m), tensor(source.reshape(3, 4))) is t
    assert_close(t, want)
    row = _mask(4, seed=16)  # the mask broadcasts to x's shape
    want = x.copy()
    want[np.broadcast_to(row, x.shape)] = source[: 3 * row.sum()]
    assert_close(tensor(x).masked_scatter(flow.tensor(row), tensor(source)), want)


def test_masked_scatter_into_a_strided_view_writes_where_it_lies():
    x, m = rng(14).randn(4, 3), _mask(3, 4, seed=14)
    source = rng(15).randn(12)
    base = tensor(x)
    view = base.t()  # (3, 4), not contiguous
    view.masked_scatter_(flow.tensor(m), tensor(source))
    want = x.T.copy()
    want[m] = source[: m.sum()]
    assert_close(view, want)
    assert_close(base, want.T)


def test_masked_scatter_gradient():
    m = flow.tensor(_mask(3, 4, seed=17))
    check_grad(lambda x, s: flow.masked_scatter(x, m, s), [rng(17).randn(3, 4), rng(18).randn(14)])


def test_masked_scatter_errors():
    x, m = flow.zeros(3, 4), flow.ones(3, 4, dtype=flow.bool)
    with pytest.raises(RuntimeError, match=r"\[masked_scatter\].*selects 12 .*has only 5"):
        flow.masked_scatter(x, m, flow.ones(5))
    with pytest.raises(TypeError, match=r"\[masked_scatter\] the source's dtype float64"):
        flow.masked_scatter(x, m, flow.ones(12, dtype=flow.float64))
    with pytest.raises(RuntimeError, match=r"\[masked_scatter\]"):
        flow.masked_scatter(flow.zeros(5), m, flow.ones(12))
    assert tuple(flow.masked_scatter(flow.zeros(4), m, flow.ones(12)).shape) == (3, 4)


# ---- scatter -----------------------------------------------------------------------------


def _put(x, dim, index, src):
    """x with src's leading region of index's shape written at the indices along dim."""
    out = x.copy()
    np.put_along_axis(out, index, src[tuple(slice(0, s) for s in index.shape)], axis=dim)
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_matches_numpy(dim):
    x, src = rng(19).randn(4, 5), rng(20).randn(4, 5)
    d = dim % 2
    # Distinct indices along dim: a permutation's first rows/columns.
    index = np.argsort(rng(21).rand(4, 5), axis=d)
    index = index[:3] if d == 0 else index[:, :3]
    want = _put(x, d, index, src)
    assert_close(flow.scatter(tensor(x), dim, flow.tensor(index), tensor(src)), want)
    assert_close(tensor(x).scatter(dim, flow.tensor(index), tensor(src)), want)
    want_v = x.copy()
    np.put_along_axis(want_v, index, 1.5, axis=d)
    assert_close(tensor(x).scatter(dim, flow.tensor(index), 1.5), want_v)
    assert_close(tensor(x).scatter(dim, flow.tensor(index), value=1.5), want_v)
    t = tensor(x)
    assert t.scatter_(dim, flow.tensor(index), tensor(src)) is t
    assert_close(t, want)
    t.scatter_(dim, flow.tensor(index), value=-2)
    np.put_along_axis(want, index, -2.0, axis=d)
    assert_close(t, want)


def test_scatter_writes_one_hot_rows():
    index = flow.tensor([[2], [0], [3]])
    out = flow.zeros(3, 4).scatter_(1, index, 1.0)
    assert_close(out, np.eye(4)[[2, 0, 3]])


def test_scatter_gradient():
    index = flow.tensor(np.argsort(rng(22).rand(3, 4), axis=1)[:, :2])
    check_grad(
        lambda x, s: flow.scatter(x, 1, index, s), [rng(22).randn(3, 4), rng(23).randn(3, 3)]
    )
    x = tensor(rng(24).randn(3, 4), requires_grad=True)
    y = x * 1.0
    y.scatter_(1, index, 0.0)
    y.sum().backward()
    want = np.ones((3, 4))
    np.put_along_axis(want, index.numpy(), 0.0, axis=1)
    assert_close(x.grad, want)


def test_scatter_errors():
    x = flow.zeros(3, 4)
    with pytest.raises(IndexError, match=r"\[scatter\] index 4 is out of range"):
        x.scatter(1, flow.tensor([[4]]), flow.ones(1, 1))
    with pytest.raises(TypeError, match=r"\[scatter\] the source's dtype float64"):
        x.scatter(1, flow.tensor([[0]]), flow.ones(1, 1, dtype=flow.float64))
    with pytest.raises(TypeError, match=r"\[scatter\] index must be an integer"):
        x.scatter(1, flow.tensor([[0.0]]), flow.ones(1, 1))
    with pytest.raises(RuntimeError, match=r"\[scatter\].*larger than the source"):
        x.scatter(1, flow.tensor([[0, 1]]), flow.ones(1, 1))
    with pytest.raises(RuntimeError, match=r"\[scatter_\] a leaf tensor"):
        flow.zeros(3, 4, requires_grad=True).scatter_(1, flow.tensor([[0]]), 1.0)


def test_scatter_and_masked_scatter_on_meta():
    x = flow.zeros(3, 4, device="meta", requires_grad=True)
    index = flow.zeros(3, 2, dtype=flow.int64, device="meta")
    src = flow.zeros(3, 2, device="meta", requires_grad=True)
    y = flow.scatter(x, 1, index, src) + x.masked_scatter(x > 0, flow.zeros(12, device="meta"))
    assert y.device.type == "meta" and tuple(y.shape) == (3, 4)
    y.sum().backward()
    assert tuple(x.grad.shape) == (3, 4) and tuple(src.grad.shape) == (3, 2)
    z = flow.zeros(3, 4, device="meta")
    z.scatter_(1, index, 1.0).masked_fill_(z > 0, 2.0)
    assert z.device.type == "meta"


def test_in_place_writes_bump_the_version_that_saved_tensors_check():
    x = flow.ones(3, requires_grad=True)
    a = x * 2.0
    b = a * a  # saves a
    a.masked_fill_(a > 0, 0.0)
    with pytest.raises(RuntimeError, match=r"modified by an in-place operation"):
        b.sum().backward()
    s = flow.ones(2, requires_grad=True)
    z = flow.zeros(2, 3)
    z.scatter_(1, flow.tensor([[0], [2]]), s.view(2, 1) * 3.0)  # z takes src's history
    assert z.requires_grad
    z.sum().backward()
    assert_close(s.grad, [3.0, 3.0])
