"""flow.unique_consecutive and Tensor.unique_consecutive against PyTorch: dim None (the flattened
input) and dim given (runs of equal slices), each combination of return_inverse and
return_counts, dtypes, NaN, empty and 0-d inputs; traced, meta and global inputs raise."""

import numpy as np
import pytest

import oneflowlike as flow

torch = pytest.importorskip("torch")


def same(ours, theirs):
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
        return
    got, want = ours.numpy(), theirs.numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def both(arr):
    return flow.tensor(arr), torch.tensor(arr)


FLAGS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("inverse,counts", FLAGS)
@pytest.mark.parametrize(
    "data",
    [
        [1, 1, 2, 2, 3, 1, 1, 2],
        [[1, 1, 1], [2, 2, 3], [3, 3, 3]],
        [[[0, 0], [0, 1]], [[1, 1], [1, 1]]],
        [5],
        [7, 7, 7, 7],
    ],
)
def test_flattened_matches_torch(data, inverse, counts):
    a = np.array(data, dtype=np.int64)
    ours, theirs = both(a)
    kw = dict(return_inverse=inverse, return_counts=counts)
    same(flow.unique_consecutive(ours, **kw), torch.unique_consecutive(theirs, **kw))
    same(ours.unique_consecutive(**kw), theirs.unique_consecutive(**kw))


@pytest.mark.parametrize("inverse,counts", FLAGS)
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_along_dim_matches_torch(dim, inverse, counts):
    a = np.array(
        [[[1, 1, 2], [1, 1, 2], [0, 3, 3]], [[1, 1, 2], [1, 1, 2], [0, 3, 3]]], dtype=np.int32
    )
    a = np.concatenate([a, a[:1], a[1:] * 2], axis=0)  # (4, 3, 3) with runs on every axis
    ours, theirs = both(a)
    kw = dict(return_inverse=inverse, return_counts=counts, dim=dim)
    same(flow.unique_consecutive(ours, **kw), torch.unique_consecutive(theirs, **kw))
    same(ours.unique_consecutive(**kw), theirs.unique_consecutive(**kw))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.bool_])
def test_dtypes_match_torch(dtype):
    a = np.array([0, 0, 1, 1, 1, 0, 1, 1], dtype=dtype)
    ours, theirs = both(a)
    same(
        flow.unique_consecutive(ours, return_inverse=True, return_counts=True),
        torch.unique_consecutive(theirs, return_inverse=True, return_counts=True),
    )


def test_bfloat16_keeps_its_dtype():
    x = flow.tensor([1.5, 1.5, 2.0, 1.5]).to(flow.bfloat16)
    out, counts = flow.unique_consecutive(x, return_counts=True)
    assert out.dtype == flow.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), [1.5, 2.0, 1.5])
    np.testing.assert_array_equal(counts.numpy(), [2, 1, 1])


def test_nan_runs_are_not_merged_as_in_torch():
    a = np.array([1.0, np.nan, np.nan, 2.0, 2.0], dtype=np.float32)
    ours, theirs = both(a)
    kw = dict(return_inverse=True, return_counts=True)
    o, t = flow.unique_consecutive(ours, **kw), torch.unique_consecutive(theirs, **kw)
    np.testing.assert_array_equal(o[0].numpy(), t[0].numpy())  # NaN == NaN here
    same(o[1:], t[1:])


def test_empty_and_zero_d_match_torch():
    for a in (np.zeros((0,), np.float32), np.zeros((2, 0), np.float32), np.array(3.0, np.float32)):
        ours, theirs = both(a)
        kw = dict(return_inverse=True, return_counts=True)
        same(flow.unique_consecutive(ours, **kw), torch.unique_consecutive(theirs, **kw))
    ours, theirs = both(np.zeros((0, 3), np.float32))
    kw = dict(return_inverse=True, return_counts=True, dim=0)
    same(flow.unique_consecutive(ours, **kw), torch.unique_consecutive(theirs, **kw))


def test_what_torch_refuses_raises_naming_the_op():
    with pytest.raises(RuntimeError, match="unique_consecutive.*\\(3, 0\\).*size 0"):
        flow.unique_consecutive(flow.zeros(3, 0), dim=0)
    with pytest.raises(IndexError, match="unique_consecutive.*0-d"):
        flow.unique_consecutive(flow.tensor(3.0), dim=0)


def test_outputs_do_not_require_grad():
    x = flow.tensor([1.0, 1.0, 2.0], requires_grad=True)
    out = flow.unique_consecutive(x)
    assert not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0])


def test_bad_dim_raises_naming_the_op():
    with pytest.raises(IndexError, match="unique_consecutive.*out of range.*\\(2, 3\\)"):
        flow.unique_consecutive(flow.zeros(2, 3), dim=2)


def test_meta_input_raises_naming_the_op():
    with pytest.raises(RuntimeError, match="unique_consecutive.*meta.*\\(4,\\)"):
        flow.unique_consecutive(flow.zeros(4, device="meta"))


def test_traced_input_raises_naming_the_op():
    class G(flow.nn.Graph):
        def build(self, x):
            return flow.unique_consecutive(x)

    with pytest.raises(RuntimeError, match="unique_consecutive.*traced"):
        G()(flow.tensor([1.0, 1.0, 2.0]))
