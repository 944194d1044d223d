"""matmul and linear against numpy, with gradients against finite differences."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import FLOAT_DTYPES, assert_close, check_grad, rng, tensor, to_numpy

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((2, 2, 3), (2, 3, 4)),
    ((2, 2, 3), (3, 4)),
    ((3,), (2, 3, 4)),
    ((2, 2, 3), (3,)),
    ((2, 1, 2, 3), (3, 3, 2)),
    ((1, 2, 3), (2, 3, 1)),
    ((4, 1), (1, 2)),
]


def _pair(sa, sb, seed=0):
    r = rng(seed)
    return r.randn(*sa), r.randn(*sb)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_forward_matches_numpy(shapes):
    a, b = _pair(*shapes)
    out = flow.matmul(tensor(a), tensor(b))
    assert_close(out, np.matmul(a, b))
    assert_close(tensor(a) @ tensor(b), np.matmul(a, b))
    assert_close(tensor(a).matmul(tensor(b)), np.matmul(a, b))


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_backward(shapes):
    check_grad(flow.matmul, _pair(*shapes, seed=1))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_matmul_low_precision(dtype):
    dt = FLOAT_DTYPES[dtype]
    a, b = _pair((2, 3, 8), (8, 5))
    at, bt = tensor(a, dtype=dt), tensor(b, dtype=dt)
    out = at @ bt
    assert out.dtype == dt
    ref = to_numpy(at).astype(np.float64) @ to_numpy(bt).astype(np.float64)
    tol = 1e-5 if dt == flow.float32 else 5e-2
    assert_close(out, ref, rtol=tol, atol=tol)


def test_matmul_backward_float32():
    check_grad(flow.matmul, _pair((2, 3), (3, 2)), dtype=flow.float32, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize(
    "make_a,make_b",
    [
        (lambda a: a.t(), lambda b: b),
        (lambda a: a, lambda b: b.t()),
        (lambda a: a.t(), lambda b: b.t()),
        (lambda a: a[:, ::2], lambda b: b[::2]),
        (lambda a: a.t()[1:], lambda b: b.t()[:, 1:]),
    ],
)
def test_matmul_non_contiguous_operands(make_a, make_b):
    a, b = rng().randn(6, 6), rng(1).randn(6, 6)
    ta, tb = make_a(tensor(a)), make_b(tensor(b))
    assert not (ta.is_contiguous() and tb.is_contiguous())
    assert_close(ta @ tb, to_numpy(ta) @ to_numpy(tb))
    check_grad(lambda x, y: make_a(x) @ make_b(y), [a[:4, :4], b[:4, :4]])


def test_matmul_batched_transposed_views():
    a, b = rng().randn(2, 4, 3), rng(1).randn(2, 5, 4)
    out = tensor(a).transpose(1, 2) @ tensor(b).transpose(1, 2)
    assert_close(out, a.transpose(0, 2, 1) @ b.transpose(0, 2, 1))
    perm = tensor(rng(2).randn(3, 2, 4)).permute(1, 0, 2)  # batch stride not outermost
    assert_close(perm @ tensor(b[0].T), to_numpy(perm) @ b[0].T)
    check_grad(lambda x, y: x.transpose(1, 2) @ y.permute(0, 2, 1), [a[:, :2], b[:, :3, :2]])


def test_matmul_with_expanded_operand():
    a = tensor(rng().randn(1, 3, 4)).expand(2, 3, 4)
    b = tensor(rng(1).randn(2, 4, 2))
    assert_close(a @ b, to_numpy(a) @ to_numpy(b))


@pytest.mark.parametrize("dtype", [flow.int64, flow.int32, flow.int8, flow.uint8], ids=str)
def test_matmul_integer_dtypes(dtype):
    r = rng()
    a, b = r.randint(0, 4, size=(2, 3, 4)), r.randint(0, 4, size=(4, 5))
    out = flow.tensor(a).to(dtype) @ flow.tensor(b).to(dtype)
    assert out.dtype == dtype
    assert_close(out.long(), a @ b)
    v = flow.tensor(a[0, 0]).to(dtype) @ flow.tensor(b[:, 0]).to(dtype)
    assert v.shape == ()
    assert int(v.item()) == int(a[0, 0] @ b[:, 0])


@pytest.mark.parametrize(
    "da,db", [(flow.float32, flow.int64), (flow.int32, flow.int64), (flow.float32, flow.float64)]
)
def test_matmul_mixed_dtypes_raise_as_in_pytorch(da, db):
    for device in ("cpu", "meta"):
        a, b = flow.ones(2, 3, dtype=da, device=device), flow.ones(3, 2, dtype=db, device=device)
        with pytest.raises(TypeError, match=r"\[matmul\] expected both operands to have the same"):
            a @ b


def test_matmul_integers():
    out = flow.tensor([[1, 2]]) @ flow.tensor([[3], [4]])
    assert out.dtype == flow.int64
    assert_close(out, np.array([[11]]))


def test_matmul_zero_size_dims():
    out = flow.zeros(0, 3) @ flow.ones(3, 4)
    assert tuple(out.shape) == (0, 4)
    out = flow.ones(2, 0) @ flow.ones(0, 3)
    assert_close(out, np.zeros((2, 3), np.float32))
    a = tensor(np.ones((2, 0)), requires_grad=True)
    b = tensor(np.ones((0, 3)), requires_grad=True)
    (a @ b).sum().backward()
    assert tuple(a.grad.shape) == (2, 0) and tuple(b.grad.shape) == (0, 3)
    check_grad(flow.matmul, [np.zeros((0, 3)), rng().randn(3, 2)])


def test_matmul_of_0d_raises():
    with pytest.raises(RuntimeError, match=r"\[matmul\]"):
        flow.matmul(flow.tensor(1.0), flow.ones(3))


# ---- linear ------------------------------------------------------------------------------


@pytest.mark.parametrize("x_shape", [(5,), (3, 5), (2, 3, 5)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_forward_and_backward(x_shape, bias):
    r = rng()
    x, w, b = r.randn(*x_shape), r.randn(4, 5), r.randn(4)
    F = flow.nn.functional
    out = F.linear(tensor(x), tensor(w), tensor(b) if bias else None)
    assert_close(out, x @ w.T + (b if bias else 0))
    if bias:
        check_grad(lambda x, w, b: F.linear(x, w, b), [x, w, b])
    else:
        check_grad(lambda x, w: F.linear(x, w), [x, w])


def test_linear_with_transposed_weight_view():
    r = rng()
    x, wt = r.randn(3, 5), r.randn(5, 4)
    out = flow.nn.functional.linear(tensor(x), tensor(wt).t())
    assert_close(out, x @ wt)
    check_grad(lambda x, w: flow.nn.functional.linear(x, w.t()), [x, wt])


def test_linear_shape_errors_name_the_op():
    F = flow.nn.functional
    with pytest.raises(RuntimeError, match=r"\[linear\].*\(3, 4\).*\(2, 5\)"):
        F.linear(flow.ones(3, 4), flow.ones(2, 5))
    with pytest.raises(RuntimeError, match=r"\[linear\].*bias"):
        F.linear(flow.ones(3, 5), flow.ones(2, 5), flow.ones(3))
