"""User errors raise Python exceptions whose message names the op in brackets and the
offending shapes or dtypes; nothing aborts the interpreter."""

import re

import pytest

import oneflowlike as flow
from oneflowlike.nn import functional as F


def _raises(exc, op, *fragments):
    """pytest.raises matching '[op]' and every fragment after it, in any order."""
    pattern = r"\[" + re.escape(op) + r"\]" + "".join(f"(?=.*{re.escape(f)})" for f in fragments)
    return pytest.raises(exc, match=pattern)


# ---- shape mismatches --------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,fn",
    [
        ("add", lambda a, b: a + b),
        ("add", flow.add),
        ("sub", lambda a, b: a - b),
        ("mul", flow.mul),
        ("div", lambda a, b: a / b),
        ("pow", flow.pow),
        ("maximum", flow.maximum),
        ("eq", lambda a, b: a == b),
        ("logical_and", flow.logical_and),
    ],
)
def test_broadcast_mismatch(op, fn):
    with _raises(RuntimeError, op, "(2, 3)", "(4,)"):
        fn(flow.ones(2, 3), flow.ones(4))


def test_where_broadcast_mismatch():
    with _raises(RuntimeError, "where", "(2,)", "(3,)"):
        flow.where(flow.ones(2, dtype=flow.bool), flow.ones(3), flow.ones(3))


@pytest.mark.parametrize(
    "a,b,fragments",
    [
        ((4, 3), (5, 2), ("a is (4, 3)", "b is (5, 2)", "inner dimensions")),
        ((3,), (4,), ("(3,)", "(4,)")),
        ((2, 3), (2,), ("(2, 3)", "(2,)")),
        ((2, 2, 3), (3, 3, 4), ("(2, 2, 3)", "(3, 3, 4)")),
    ],
)
def test_matmul_shape_mismatch(a, b, fragments):
    with _raises(RuntimeError, "matmul", *fragments):
        flow.matmul(flow.ones(*a), flow.ones(*b))
    with _raises(RuntimeError, "matmul"):
        flow.ones(*a) @ flow.ones(*b)


def test_cat_and_stack_mismatch():
    with _raises(RuntimeError, "cat", "(2, 3)", "(3, 3)", "dimension 0"):
        flow.cat([flow.ones(2, 3), flow.ones(3, 3)], dim=1)
    with _raises(RuntimeError, "stack", "(2,)", "(3,)"):
        flow.stack([flow.ones(2), flow.ones(3)])


def test_view_and_reshape_mismatch():
    with _raises(RuntimeError, "view", "(7,)", "6"):
        flow.ones(2, 3).view(7)
    with _raises(RuntimeError, "reshape", "(4, -1)", "6"):
        flow.ones(2, 3).reshape(4, -1)


def test_loss_shape_mismatches():
    with _raises(RuntimeError, "mse_loss", "(2, 3)", "(3, 2)"):
        F.mse_loss(flow.ones(2, 3), flow.ones(3, 2))
    with _raises(RuntimeError, "cross_entropy", "(3, 4)", "(3, 5)"):
        F.cross_entropy(flow.ones(3, 4), flow.ones(3, 5))  # float (probability) target
    with _raises(RuntimeError, "nll_loss", "(3, 4)", "(2,)"):
        F.cross_entropy(flow.ones(3, 4), flow.tensor([0, 1]))
    with _raises(RuntimeError, "nll_loss", "(2, 4, 5)", "(2, 4)"):
        F.cross_entropy(flow.ones(2, 4, 5), flow.zeros(2, 4, dtype=flow.int64))


def test_norm_and_embedding_shape_mismatches():
    with _raises(RuntimeError, "layer_norm", "(3,)", "(2, 4)"):
        F.layer_norm(flow.ones(2, 4), (3,))
    with _raises(RuntimeError, "rms_norm", "(5,)"):
        F.rms_norm(flow.ones(2, 4), (5,))
    with _raises(RuntimeError, "embedding", "(5,)"):
        flow._C.embedding(flow.tensor([0]), flow.ones(5))


# ---- out-of-range dims -------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,fn",
    [
        ("sum", lambda t: t.sum(2)),
        ("mean", lambda t: t.mean(-3)),
        ("amax", lambda t: t.amax(5)),
        ("max", lambda t: t.max(2)),
        ("argmax", lambda t: t.argmax(2)),
        ("softmax", lambda t: t.softmax(2)),
        ("log_softmax", lambda t: flow.log_softmax(t, -3)),
        ("transpose", lambda t: t.transpose(0, 2)),
        ("permute", lambda t: t.permute(0, 2)),
        ("unsqueeze", lambda t: t.unsqueeze(4)),  # the valid range counts the new dim
        ("squeeze", lambda t: t.squeeze(2)),
        ("flatten", lambda t: t.flatten(0, 3)),
        ("narrow", lambda t: t.narrow(2, 0, 1)),
        ("select", lambda t: t.select(-3, 0)),
        ("index_select", lambda t: t.index_select(2, flow.tensor([0]))),
        ("gather", lambda t: t.gather(2, flow.zeros(2, 3, dtype=flow.int64))),
        ("cat", lambda t: flow.cat([t, t], 2)),
        ("stack", lambda t: flow.stack([t, t], 4)),
        ("split", lambda t: t.split(1, 2)),
        ("chunk", lambda t: t.chunk(2, -3)),
        ("size", lambda t: t.size(2)),
        ("logsumexp", lambda t: t.logsumexp(2)),
        ("var", lambda t: t.var(3)),
    ],
)
def test_out_of_range_dim_raises_index_error(op, fn):
    with _raises(IndexError, op, "dimension", "out of range"):
        fn(flow.ones(2, 3))


def test_permute_with_wrong_count_names_shape():
    with _raises(RuntimeError, "permute", "(2, 3)"):
        flow.ones(2, 3).permute(0, 1, 2)


# ---- autograd errors ---------------------------------------------------------------------


def test_backward_through_non_scalar_without_gradient():
    x = flow.ones(2, 3, requires_grad=True)
    with _raises(RuntimeError, "backward", "scalar", "(2, 3)"):
        (x * 2).backward()


def test_autograd_grad_non_scalar_without_grad_outputs():
    x = flow.ones(4, requires_grad=True)
    with _raises(RuntimeError, "autograd.grad", "(4,)"):
        flow.autograd.grad(x * 2, x)


# ---- wrong dtypes ------------------------------------------------------------------------


def test_index_with_float_tensor_raises():
    t = flow.ones(4, 3)
    with pytest.raises((IndexError, TypeError), match=r"\[index(_select)?\].*float32"):
        t[flow.tensor([0.0, 1.0])]
    with pytest.raises((IndexError, TypeError), match=r"\[index"):
        t[0.5]


def test_float_index_arguments_raise_type_error():
    with _raises(TypeError, "gather", "float32"):
        flow.gather(flow.ones(2, 2), 1, flow.ones(2, 2))
    with _raises(TypeError, "scatter_add", "float32"):
        flow.scatter_add(flow.ones(2, 2), 1, flow.ones(2, 2), flow.ones(2, 2))
    with _raises(TypeError, "embedding", "float32"):
        F.embedding(flow.ones(2), flow.ones(3, 2))


def test_loss_target_dtypes():
    with _raises(TypeError, "nll_loss", "float32"):
        F.nll_loss(flow.ones(2, 3), flow.ones(2))
    with _raises(TypeError, "nll_loss", "bool"):
        F.cross_entropy(flow.ones(2, 3), flow.ones(2, dtype=flow.bool))


def test_floating_only_ops_reject_integer_tensors():
    with _raises(TypeError, "mean", "int64"):
        flow.tensor([1, 2]).mean()
    with _raises(TypeError, "layer_norm", "int64"):
        F.layer_norm(flow.tensor([[1, 2]]), (2,))
    with _raises(TypeError, "rand", "int64"):
        flow.rand(2, dtype=flow.int64)
    with _raises(TypeError, "requires_grad", "int64"):
        flow.tensor([1, 2]).requires_grad = True


def test_bool_arithmetic_and_where_condition():
    with _raises(TypeError, "sub", "bool"):
        flow.tensor([True]) - flow.tensor([False])
    with _raises(TypeError, "matmul", "bool"):
        flow.ones(2, 2, dtype=flow.bool) @ flow.ones(2, 2, dtype=flow.bool)
    with _raises(TypeError, "where", "int64"):
        flow.where(flow.tensor([1]), flow.ones(1), flow.ones(1))


def test_non_tensor_operands_raise_type_error():
    with _raises(TypeError, "add", "str"):
        flow.ones(2) + "a"
    with _raises(TypeError, "mul", "dict"):
        flow.mul(flow.ones(2), {})
    with _raises(TypeError, "view", "sizes must be ints"):
        flow.ones(2).view(2.0, 1)
    with _raises(TypeError, "view", "float"):
        flow.ones(2).view(2.0)


def test_unsupported_device_and_in_place_cast_errors():
    if not flow.cuda.is_available():  # (test_cuda.py covers a machine with a GPU)
        with _raises(RuntimeError, "cuda", "not available"):
            flow.zeros(2, device="cuda")
    with _raises(TypeError, "mul_", "float32", "int64"):
        flow.tensor([1, 2]).mul_(1.5)


def test_errors_leave_the_interpreter_usable():
    for _ in range(3):
        with pytest.raises(RuntimeError):
            flow.ones(2) + flow.ones(3)
    assert (flow.ones(2) + flow.ones(2)).sum().item() == 4.0
