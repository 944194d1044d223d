"""Integer arithmetic at its edges: every result or error is PyTorch's (2.15, CPU), for every
integer dtype, and nothing traps (SIGFPE), loops for ever or reads undefined behaviour."""

import numpy as np
import pytest

import oneflowlike as flow

INT_DTYPES = [flow.uint8, flow.int8, flow.int32, flow.int64]
_NP = {flow.uint8: np.uint8, flow.int8: np.int8, flow.int32: np.int32, flow.int64: np.int64}


def _t(values, dtype):
    return flow.tensor(np.array(values, dtype=_NP[dtype]))


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("op", [flow.floor_divide, flow.remainder])
def test_integer_division_by_zero_raises_zero_division_error(op, dtype):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(_t([7, 1], dtype), _t([3, 0], dtype))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_floor_division_operators_raise_on_zero_too(dtype):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        _t([7], dtype) // _t([0], dtype)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        _t([7], dtype) % _t([0], dtype)


@pytest.mark.parametrize("dtype", [flow.int8, flow.int32, flow.int64])
def test_most_negative_by_minus_one_wraps_instead_of_trapping(dtype):
    low = int(np.iinfo(_NP[dtype]).min)
    x, y = _t([low, low, 7], dtype), _t([-1, -1, -1], dtype)
    assert (x // y).tolist() == [low, low, -7]  # PyTorch: MIN // -1 is MIN
    assert (x % y).tolist() == [0, 0, 0]


@pytest.mark.parametrize("dtype", [flow.int8, flow.int32, flow.int64])
def test_floor_division_and_remainder_follow_python_signs(dtype):
    x = _t([-7, 7, -7, 7, 0], dtype)
    y = _t([2, -2, -2, 2, 5], dtype)
    assert (x // y).tolist() == [-4, -4, 3, 3, 0]
    assert (x % y).tolist() == [1, -1, -1, 1, 0]


def test_integer_pow_with_huge_exponent_is_quick_and_wraps():
    big = flow.tensor([2**62, 2**62, 40])
    assert flow.pow(flow.tensor([1, 3, 3]), big).tolist() == [1, 1, -6289078614652622815]
    assert flow.pow(flow.tensor([2]), flow.tensor([64])).tolist() == [0]
    assert flow.pow(flow.tensor([-1]), flow.tensor([2**62 + 1])).tolist() == [-1]


@pytest.mark.parametrize("dtype", [flow.int8, flow.int32, flow.int64])
def test_integer_pow_with_negative_tensor_exponent_truncates_as_pytorch(dtype):
    base = _t([2, 1, -1, -1, 0, 5], dtype)
    exp = _t([-1, -5, -3, -2, 0, 0], dtype)
    assert (base**exp).tolist() == [0, 1, -1, 1, 1, 1]


def test_uint8_pow_wraps():
    assert flow.pow(_t([3], flow.uint8), _t([5], flow.uint8)).tolist() == [243]
    assert flow.pow(_t([2], flow.uint8), _t([9], flow.uint8)).tolist() == [0]


def test_float_floor_division_by_zero_is_inf_not_an_error():
    out = flow.tensor([7.0, -7.0]) // flow.tensor([0.0, 0.0])
    assert out.tolist() == [float("inf"), float("-inf")]


def test_integer_pow_with_a_huge_scalar_exponent_is_quick_and_wraps():
    assert flow.pow(flow.tensor([1, 3, -1]), 2**62).tolist() == [1, 1, 1]
    assert (flow.tensor([3]) ** 40).tolist() == [-6289078614652622815]


def test_integer_pow_with_a_negative_scalar_exponent_raises():
    with pytest.raises(RuntimeError, match="negative integer powers are not allowed"):
        flow.tensor([2]) ** -1
