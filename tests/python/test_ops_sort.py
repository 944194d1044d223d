"""sort, argsort and topk against numpy, with gradients, on the meta device, and their errors."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import assert_close, check_grad, rng, tensor


def _distinct(*shape, seed=0):
    """Values without ties, so the order (and the gradient) is unique."""
    return rng(seed).permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 3.0


# ---- sort / argsort ----------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_numpy(dim, descending):
    x = rng(1).randn(3, 4, 5)
    values, indices = flow.sort(tensor(x), dim=dim, descending=descending)
    order = np.argsort(-x if descending else x, axis=dim, kind="stable")
    assert indices.dtype == flow.int64
    assert_close(indices, order)
    assert_close(values, np.take_along_axis(x, order, axis=dim))
    out = tensor(x).sort(dim, descending)
    assert_close(out.values, values.numpy())
    assert_close(out.indices, order)
    assert_close(flow.argsort(tensor(x), dim, descending), order)
    assert_close(tensor(x).argsort(dim=dim, descending=descending), order)


def test_sort_ties_keep_index_order_and_nan_sorts_greatest():
    x = np.array([[2.0, 1.0, 2.0, np.nan, 1.0], [0.0, np.nan, 0.0, 5.0, np.nan]])
    v, i = flow.sort(flow.tensor(x), stable=True)
    assert_close(i, [[1, 4, 0, 2, 3], [0, 2, 3, 1, 4]])
    assert_close(v, np.sort(x, axis=-1), equal_nan=True)
    v, i = flow.sort(flow.tensor(x), descending=True)
    assert_close(i, [[3, 0, 2, 1, 4], [1, 4, 3, 0, 2]])


@pytest.mark.parametrize("dtype", [flow.int64, flow.int32, flow.uint8, flow.bool, flow.float16])
def test_sort_other_dtypes(dtype):
    x = rng(2).randint(0, 2 if dtype == flow.bool else 9, size=(4, 6))
    t = flow.tensor(x).to(dtype)
    v, i = t.sort(1)
    assert v.dtype == dtype
    order = np.argsort(x, axis=1, kind="stable")
    assert_close(i, order)
    assert_close(v.to(flow.int64), np.take_along_axis(x, order, axis=1))


def test_sort_non_contiguous_and_0d_and_empty():
    x = rng(3).randn(5, 3)
    v, i = tensor(x).t().sort(1)
    assert_close(v, np.sort(x.T, axis=1))
    v, i = flow.sort(flow.tensor(2.5))
    assert v.shape == () and float(v) == 2.5 and int(i) == 0
    v, i = flow.sort(flow.zeros(3, 0), dim=1)
    assert tuple(v.shape) == (3, 0) and tuple(i.shape) == (3, 0)


@pytest.mark.parametrize("dim", [0, 1])
def test_sort_gradient(dim):
    check_grad(lambda t: flow.sort(t, dim, descending=True)[0], [_distinct(4, 3)])
    check_grad(lambda t: flow.sort(t.t(), dim)[0], [_distinct(3, 4, seed=1)])


def test_argsort_is_not_differentiable():
    x = tensor(_distinct(3, 4), requires_grad=True)
    assert not flow.argsort(x).requires_grad
    assert flow.sort(x)[0].requires_grad and not flow.sort(x)[1].requires_grad


def test_sort_errors():
    with pytest.raises(IndexError, match=r"\[sort\].*dimension 2"):
        flow.sort(flow.ones(3, 4), dim=2)
    with pytest.raises(IndexError, match=r"\[argsort\]"):
        flow.argsort(flow.ones(3), dim=-2)


# ---- topk --------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_topk_matches_numpy(dim, largest, k):
    x = _distinct(4, 5)
    out = flow.topk(tensor(x), k, dim=dim, largest=largest)
    order = np.argsort(-x if largest else x, axis=dim, kind="stable")
    order = np.take(order, np.arange(k), axis=dim)
    assert_close(out.indices, order)
    assert_close(out.values, np.take_along_axis(x, order, axis=dim))
    values, indices = tensor(x).topk(k, dim, largest, sorted=False)
    assert_close(indices, order)  # always sorted: a valid order for sorted=False


def test_topk_keeps_ties_in_index_order_and_nan_first():
    x = flow.tensor([[1.0, 3.0, 3.0, 2.0], [float("nan"), 0.0, 5.0, 5.0]])
    assert_close(flow.topk(x, 2).indices, [[1, 2], [0, 2]])
    assert_close(flow.topk(x, 2, largest=False).indices, [[0, 3], [1, 2]])


@pytest.mark.parametrize("dim", [0, 1])
def test_topk_gradient(dim):
    check_grad(lambda t: flow.topk(t, 2, dim)[0], [_distinct(4, 3)])
    check_grad(lambda t: flow.topk(t, 1, dim, largest=False)[0] * 3.0, [_distinct(3, 3, seed=2)])


def test_topk_second_order_gradient_flows_through_its_scatter():
    x = tensor(_distinct(3, 4), requires_grad=True)
    (g,) = flow.autograd.grad(flow.topk(x, 2)[0].pow(2).sum(), [x], create_graph=True)
    (gg,) = flow.autograd.grad(g.sum(), [x])
    mask = np.zeros((3, 4))
    np.put_along_axis(mask, flow.topk(x, 2).indices.numpy(), 1.0, axis=1)
    assert_close(gg, 2 * mask)


def test_topk_errors():
    with pytest.raises(
        RuntimeError, match=r"\[topk\] k \(5\) is out of range .* size 4 .*\(3, 4\)"
    ):
        flow.topk(flow.ones(3, 4), 5)
    with pytest.raises(RuntimeError, match=r"\[topk\] k \(-1\)"):
        flow.topk(flow.ones(3, 4), -1)
    with pytest.raises(IndexError, match=r"\[topk\]"):
        flow.topk(flow.ones(3, 4), 1, dim=3)


# ---- meta --------------------------------------------------------------------------------


def test_sort_and_topk_on_meta_give_shapes_dtypes_gradients_and_the_same_errors():
    x = flow.zeros(4, 6, device="meta", requires_grad=True)
    v, i = flow.topk(x, 3, dim=1)
    assert v.device.type == "meta" and tuple(v.shape) == (4, 3) and i.dtype == flow.int64
    s, j = flow.sort(x, dim=0)
    assert tuple(s.shape) == (4, 6) and j.dtype == flow.int64
    assert flow.argsort(x).device.type == "meta"
    (v.sum() + s.sum()).backward()
    assert x.grad.device.type == "meta" and tuple(x.grad.shape) == (4, 6)

    def message(device):
        with pytest.raises(RuntimeError) as e:
            flow.topk(flow.zeros(3, 4, device=device), 7)
        return str(e.value)

    assert message("meta") == message("cpu")
