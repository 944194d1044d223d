"""Shapes whose element or byte count overflows 64 bits raise naming the shape, in creation ops,
views and expand, instead of wrapping to a small (or empty) buffer that is then read past."""

import pytest

import oneflowlike as flow


@pytest.mark.parametrize(
    "make",
    [
        lambda: flow.zeros(2**62),
        lambda: flow.ones(2**62),
        lambda: flow.empty(2**62),
        lambda: flow.randn(2**62),
        lambda: flow.rand(2**61),
        lambda: flow.full((2**62,), 1.0),
        lambda: flow.arange(0, 2**62),
        lambda: flow.zeros(2**32, 2**32),
        lambda: flow.zeros(2**31, 2**31, 4),
    ],
    ids=["zeros", "ones", "empty", "randn", "rand", "full", "arange", "zeros-2d", "zeros-3d"],
)
def test_creation_with_overflowing_size_raises(make):
    with pytest.raises(RuntimeError, match=r"\(\d+"):
        make()


def test_linspace_with_overflowing_steps_raises():
    with pytest.raises(RuntimeError):
        flow.linspace(0, 1, 2**62)


def test_expand_to_an_overflowing_shape_raises_before_any_read():
    x = flow.ones(1, 4)
    with pytest.raises(RuntimeError, match="2305843009213693952|4611686018427387904"):
        x.expand(2**62, 4).contiguous()


def test_empty_shapes_with_huge_other_dims_are_still_empty():
    x = flow.zeros(0, 2**40, 2**40)
    assert x.numel() == 0 and tuple(x.shape) == (0, 2**40, 2**40)


def test_ordinary_large_but_valid_meta_tensors_still_work():
    x = flow.empty(2**40, 2**10, device="meta")  # 4 PiB on meta: no memory, no overflow
    assert tuple(x.shape) == (2**40, 2**10)
