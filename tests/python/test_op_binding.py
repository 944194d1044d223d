"""Tier (a)/(b): op functions and Tensor methods bound generically from the registry's
signatures (python/src/op_binding.cpp): argument parsing, overloads, errors, help text."""

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import _C


def test_every_signature_is_bound_where_it_says():
    sigs = _C.op_signatures()
    assert len(sigs) > 100
    for s in sigs:
        name = s["schema"].split("(")[0]
        if s["function"]:
            assert callable(getattr(_C, name)), s["schema"]
        if s["method"]:
            assert callable(getattr(flow.Tensor, name)), s["schema"]


def test_help_text_shows_each_signature():
    assert "cumsum(Tensor input, int dim, *, dtype? dtype=None) -> Tensor" in flow.cumsum.__doc__
    doc = flow.Tensor.max.__doc__
    assert "max(Tensor input, int? dim=None" in doc and "max(Tensor input, Tensor other)" in doc


def test_positional_keyword_and_default_arguments():
    x = flow.tensor([[3.0, 1.0], [2.0, 5.0]])
    np.testing.assert_allclose(flow.sum(x, 1).numpy(), [4.0, 7.0])
    np.testing.assert_allclose(flow.sum(x, dim=1, keepdim=True).numpy(), [[4.0], [7.0]])
    np.testing.assert_allclose(x.sum((0, 1)).numpy(), 11.0)
    np.testing.assert_allclose(x.cumsum(dim=0).numpy(), [[3, 1], [5, 6]])
    assert x.cumsum(0, dtype=flow.float64).dtype == flow.float64


def test_int_lists_as_varargs_or_one_sequence():
    x = flow.arange(6)
    assert x.view(2, 3).shape == (2, 3)
    assert x.view((3, 2)).shape == (3, 2)
    assert x.view([-1]).shape == (6,)
    assert x.reshape(3, 2).permute(1, 0).shape == (2, 3)
    assert flow.reshape(x, (2, 3)).shape == (2, 3)
    assert x.view(flow.float64).dtype == flow.float64  # the same bytes as another dtype


def test_overloads_resolve_by_argument_types():
    x = flow.tensor([[3.0, 1.0], [2.0, 5.0]])
    assert x.max().item() == 5.0
    values, indices = x.max(1)
    assert values.tolist() == [3.0, 5.0] and indices.tolist() == [0, 1]
    assert x.max(dim=0).indices.tolist() == [0, 1]
    assert flow.max(x, flow.full_like(x, 4.0)).tolist() == [[4.0, 4.0], [4.0, 5.0]]
    parts = flow.split(flow.arange(5), 2)
    assert [p.tolist() for p in parts] == [[0, 1], [2, 3], [4]]
    parts = flow.arange(5).split([1, 4])
    assert [p.shape for p in parts] == [(1,), (4,)]
    assert x.scatter(1, flow.tensor([[1], [0]]), 9.0).tolist() == [[3.0, 9.0], [9.0, 5.0]]


def test_in_place_methods_return_the_very_object():
    p = flow.nn.Parameter(flow.zeros(3))
    with flow.no_grad():
        assert p.add_(1) is p
        assert p.mul_(2) is p
        assert p.clamp_(max=1.5) is p
        assert p.uniform_(0, 1) is p
        assert p.zero_() is p
    assert isinstance(p, flow.nn.Parameter)


def test_named_tuples_as_pytorch_returns():
    x = flow.tensor([3.0, 1.0, 2.0])
    r = x.topk(2)
    assert type(r).__name__ == "topk" and r.values.tolist() == [3.0, 2.0]
    assert flow.sort(x, descending=True).indices.tolist() == [0, 2, 1]


def test_python_numbers_keep_their_kind():
    i = flow.tensor([1, 2, 3])
    assert (i**2).dtype == flow.int64 and (i**2).tolist() == [1, 4, 9]
    assert i.pow(0.5).dtype == flow.float32
    assert flow.clamp(i, min=1.5).dtype == flow.float32
    assert flow.clamp(i, max=2).dtype == flow.int64
    assert flow.add(1, 2).item() == 3


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x: flow.cumsum(x, "a"), "argument 'dim' must be int, not str"),
        (lambda x: x.cumsum(0, 1), "positional"),
        (lambda x: x.sum(dim=0, bogus=1), "unexpected keyword argument 'bogus'"),
        (lambda x: x.softmax(), "missing argument 'dim'"),
        (lambda x: x.sort(0, True, True), "positional"),
        (lambda x: flow.exp([1.0]), "argument 'input' must be Tensor, not list"),
        (lambda x: x.transpose(0, 1, dim0=0), "multiple values"),
        (lambda x: x.max("a"), "no signature fits"),
    ],
)
def test_bad_arguments_raise_type_errors_naming_the_op_and_argument(call, message):
    x = flow.ones(2, 2)
    with pytest.raises(TypeError, match=message):
        call(x)


def test_int_arguments_refuse_floats_and_accept_numpy_integers():
    x = flow.ones(2, 3)
    with pytest.raises(TypeError, match="must be int, not float"):
        x.unsqueeze(1.0)
    assert x.unsqueeze(np.int64(0)).shape == (1, 2, 3)
