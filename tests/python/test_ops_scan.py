"""cumsum, tril and triu against numpy, with gradients, on the meta device, and their errors."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import assert_close, check_grad, rng, tensor


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cumsum_matches_numpy(dim):
    x = rng(0).randn(3, 4, 5)
    assert_close(flow.cumsum(tensor(x), dim), np.cumsum(x, axis=dim))
    assert_close(tensor(x).cumsum(dim), np.cumsum(x, axis=dim))
    assert_close(tensor(x).permute(2, 0, 1).cumsum(dim), np.cumsum(x.transpose(2, 0, 1), dim))


def test_cumsum_dtypes():
    ints = flow.tensor([[1, 2, 3], [4, 5, 6]], dtype=flow.int32)
    assert ints.cumsum(1).dtype == flow.int64  # integers accumulate in int64, as in PyTorch
    assert_close(ints.cumsum(1), [[1, 3, 6], [4, 9, 15]])
    mask = flow.tensor([True, False, True, True])
    assert mask.cumsum(0).dtype == flow.int64
    assert_close(mask.cumsum(0), [1, 1, 2, 3])
    out = flow.cumsum(ints, 0, dtype=flow.float64)
    assert out.dtype == flow.float64
    assert_close(out, [[1, 2, 3], [5, 7, 9]])
    assert flow.ones(3, dtype=flow.float16).cumsum(0).dtype == flow.float16
    assert float(flow.tensor(2.0).cumsum(0)) == 2.0


@pytest.mark.parametrize("dim", [0, 1])
def test_cumsum_gradient_and_second_order(dim):
    check_grad(lambda t: flow.cumsum(t, dim), [rng(1).randn(4, 3)])
    check_grad(lambda t: flow.cumsum(t * t, dim), [rng(2).randn(3, 4)])
    x = tensor(rng(3).randn(5), requires_grad=True)
    (g,) = flow.autograd.grad(flow.cumsum(x * x, 0).sum(), [x], create_graph=True)
    assert_close(g, 2 * x.detach().numpy() * np.arange(5, 0, -1))
    (gg,) = flow.autograd.grad(g.sum(), [x])
    assert_close(gg, 2.0 * np.arange(5, 0, -1))


def test_cumsum_errors():
    with pytest.raises(IndexError, match=r"\[cumsum\].*dimension 2"):
        flow.ones(3, 4).cumsum(2)
    with pytest.raises(TypeError, match=r"\[cumsum\].*bool"):
        flow.ones(3).cumsum(0, dtype=flow.bool)


@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
def test_tril_triu_match_numpy(diagonal):
    x = rng(4).randn(2, 4, 5)
    assert_close(flow.tril(tensor(x), diagonal), np.tril(x, diagonal))
    assert_close(flow.triu(tensor(x), diagonal), np.triu(x, diagonal))
    assert_close(tensor(x).tril(diagonal=diagonal), np.tril(x, diagonal))
    assert_close(tensor(x).transpose(1, 2).triu(diagonal), np.triu(x.transpose(0, 2, 1), diagonal))


def test_tril_of_ones_is_the_causal_mask_and_keeps_dtype():
    mask = flow.tril(flow.ones(4, 4, dtype=flow.bool))
    assert mask.dtype == flow.bool
    assert_close(mask, np.tril(np.ones((4, 4), bool)))
    assert_close(flow.ones(3, 2, dtype=flow.int64).triu(), np.triu(np.ones((3, 2), np.int64)))


@pytest.mark.parametrize("fn", [flow.tril, flow.triu])
def test_tril_triu_gradient(fn):
    check_grad(lambda t: fn(t, 1), [rng(5).randn(3, 4)])
    check_grad(lambda t: fn(t * t, -1), [rng(6).randn(2, 3, 3)])


def test_tril_triu_errors():
    with pytest.raises(RuntimeError, match=r"\[tril\] expects a tensor of at least 2 dim.*\(3,\)"):
        flow.tril(flow.ones(3))
    with pytest.raises(RuntimeError, match=r"\[triu\]"):
        flow.tensor(1.0).triu()


def test_scan_ops_on_meta_give_shapes_dtypes_gradients_and_the_same_errors():
    x = flow.zeros(2, 3, 4, device="meta", requires_grad=True)
    y = flow.cumsum(x, 1) + flow.tril(x) + flow.triu(x, 1)
    assert y.device.type == "meta" and tuple(y.shape) == (2, 3, 4)
    assert flow.zeros(3, dtype=flow.int32, device="meta").cumsum(0).dtype == flow.int64
    y.sum().backward()
    assert x.grad.device.type == "meta" and tuple(x.grad.shape) == (2, 3, 4)

    def message(device):
        with pytest.raises(RuntimeError) as e:
            flow.tril(flow.zeros(3, device=device))
        return str(e.value)

    assert message("meta") == message("cpu")
