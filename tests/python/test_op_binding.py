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


# Creation signatures (ApiBind kCreation): the row builds the tensor; _creation._place puts it.
def test_creation_functions_are_bound_from_their_rows_with_the_placing_keywords():
    creation = [s for s in _C.op_signatures() if s["creation"]]
    names = {s["schema"].split("(")[0] for s in creation}
    assert {"zeros", "ones", "empty", "full", "arange", "linspace", "eye", "rand", "randn",
            "randint", "randperm", "zeros_like", "rand_like", "new_zeros", "new_full"} <= names  # fmt: skip
    for s in creation:
        assert "Device? device=None" in s["schema"] and "bool requires_grad=False" in s["schema"]
    assert "Placement? placement=None, SBP? sbp=None" in flow.zeros.__doc__
    assert flow.zeros is _C.zeros and flow.Tensor.new_zeros.__doc__.startswith("new_zeros(")


def test_sizes_as_varargs_one_sequence_or_none():
    assert flow.zeros(2, 3).shape == (2, 3) and flow.ones((2, 3)).shape == (2, 3)
    assert flow.empty([4]).shape == (4,) and flow.zeros(size=(1, 2)).shape == (1, 2)
    assert flow.ones(*()).shape == () and flow.zeros(flow.Size([2])).shape == (2,)
    x = flow.ones(2, 3, dtype=flow.float64)
    assert x.new_zeros(4, 1).shape == (4, 1) and x.new_zeros(4, 1).dtype == flow.float64
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0] and x.new_empty(3).dtype == flow.float64
    assert x.new_ones(2, dtype=flow.int32).dtype == flow.int32


def test_creation_dtypes_follow_pytorch():
    # full: the fill value's kind; arange: int64 when start, end and step are all integers.
    assert flow.full((2,), True).dtype == flow.bool
    assert flow.full((2,), 3).dtype == flow.int64 and flow.full((2,), 3.0).dtype == flow.float32
    assert flow.full((2,), 3, dtype=flow.float64).tolist() == [3.0, 3.0]
    assert flow.arange(5).dtype == flow.int64 and flow.arange(5.0).dtype == flow.float32
    assert flow.arange(0, 10, 2).tolist() == [0, 2, 4, 6, 8]
    assert flow.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert len(flow.arange(0, 1, 0.1)) == 10  # the step as a double, as PyTorch's
    assert flow.arange(flow.tensor(3)).tolist() == [0, 1, 2]  # a one-element tensor as its number
    assert flow.randint(10, (3,)).dtype == flow.int64 and flow.randint(5, 6, (2,)).tolist() == [
        5,
        5,
    ]
    assert flow.randint(low=2, high=3, size=(2,)).tolist() == [2, 2]
    assert flow.randperm(4, dtype=flow.int32).dtype == flow.int32
    assert flow.eye(2, 3).shape == (2, 3) and flow.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    y = flow.ones(2, 2, dtype=flow.float64)
    assert flow.full_like(y, 2).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert flow.zeros_like(y).dtype == flow.float64 and flow.rand_like(y).dtype == flow.float64
    assert flow.randint_like(y, 3, 4).tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert flow.zeros_like(y, device="meta").device.type == "meta"


def test_creation_keywords_device_grad_and_placement():
    x = flow.randn(2, 3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert flow.zeros(2, device="meta").device.type == "meta"
    with flow.device("meta"):
        assert flow.arange(3).device.type == "meta" and flow.eye(2).device.type == "meta"
    with pytest.raises(ValueError, match=r"\[zeros\] sbp= needs placement="):
        flow.zeros(2, sbp=flow.sbp.broadcast)
    with pytest.raises(TypeError, match="argument 'placement' must be Placement or None, not str"):
        flow.ones(2, placement="cpu")
    with pytest.raises(TypeError, match="argument 'sbp' must be SBP or None, not int"):
        flow.ones(2, placement=flow.placement("cpu", ranks=[0]), sbp=0)
    with pytest.raises(TypeError, match=r"\[arange\] no signature fits"):
        flow.arange("5")
    with pytest.raises(TypeError, match="argument 'fill_value' must be Number"):
        flow.full((2,), "x")


def test_placement_on_one_rank_lays_the_tensor_out():
    place = flow.placement("cpu", ranks=[0])
    z = flow.full((2, 2), 3.0, placement=place, sbp=flow.sbp.split(0), requires_grad=True)
    assert z.is_global and z.requires_grad and z.to_local().tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert flow.zeros_like(z).is_global and flow.randn_like(z).sbp == z.sbp
    assert flow.tensor([1, 2], placement=place, sbp=flow.sbp.broadcast).is_global


def test_addcmul_and_addcdiv_in_place_and_not():
    x, a, b = flow.ones(3), flow.tensor([1.0, 2.0, 3.0]), flow.tensor([2.0, 2.0, 2.0])
    assert flow.addcmul(x, a, b, value=0.5).tolist() == [2.0, 3.0, 4.0]
    assert x.addcdiv(a, b).tolist() == [1.5, 2.0, 2.5] and x.tolist() == [1.0, 1.0, 1.0]
    y = x.clone()
    assert y.addcmul_(a, b, value=2) is y and y.tolist() == [5.0, 9.0, 13.0]
