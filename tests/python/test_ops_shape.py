"""Views and joins: view/reshape/transpose/permute/narrow/expand/squeeze/unsqueeze/flatten,
cat/stack/split/chunk, memory sharing and gradients."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import assert_close, check_grad, rng, tensor, to_numpy


def _x(shape=(2, 3, 4), seed=0):
    return rng(seed).randn(*shape)


def shares_memory(a, b):
    """True when writing through `a` is visible in `b` (both float tensors)."""
    before = to_numpy(b).copy()
    with flow.no_grad():
        a.add_(1.0)
    changed = not np.array_equal(to_numpy(b), before)
    with flow.no_grad():
        a.sub_(1.0)
    return changed


VIEWS = {
    "view": (lambda t: t.view(6, 4), lambda x: x.reshape(6, 4)),
    "view_infer": (lambda t: t.view(-1, 2), lambda x: x.reshape(-1, 2)),
    "view_tuple": (lambda t: t.view((4, 6)), lambda x: x.reshape(4, 6)),
    "reshape": (lambda t: t.reshape(3, 8), lambda x: x.reshape(3, 8)),
    "flow.reshape": (lambda t: flow.reshape(t, (-1,)), lambda x: x.reshape(-1)),
    "transpose": (lambda t: t.transpose(0, 2), lambda x: x.transpose(2, 1, 0)),
    "flow.transpose": (lambda t: flow.transpose(t, -1, 1), lambda x: x.transpose(0, 2, 1)),
    "permute": (lambda t: t.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1)),
    "permute_neg": (lambda t: flow.permute(t, (-1, -3, -2)), lambda x: x.transpose(2, 0, 1)),
    "T": (lambda t: t.T, lambda x: x.T),
    "mT": (lambda t: t.mT, lambda x: np.swapaxes(x, -1, -2)),
    "narrow": (lambda t: t.narrow(2, 1, 2), lambda x: x[:, :, 1:3]),
    "narrow_neg": (lambda t: flow.narrow(t, 1, -2, 2), lambda x: x[:, 1:3]),
    "select": (lambda t: t.select(1, 2), lambda x: x[:, 2]),
    "slice_steps": (lambda t: t[:, ::2, 1::3], lambda x: x[:, ::2, 1::3]),
    "expand": (lambda t: t[:, :1].expand(2, 5, 4), lambda x: np.broadcast_to(x[:, :1], (2, 5, 4))),
    "expand_new_dim": (lambda t: t.expand(3, 2, 3, 4), lambda x: np.broadcast_to(x, (3, 2, 3, 4))),
    "expand_keep": (lambda t: t[:1].expand(-1, 3, 4), lambda x: x[:1]),
    "expand_as": (lambda t: t[0, :1].expand_as(t), lambda x: np.broadcast_to(x[0, :1], x.shape)),
    "squeeze": (lambda t: t[:, :1, None].squeeze(), lambda x: x[:, 0]),
    "squeeze_dim": (lambda t: t[:1, :1].squeeze(1), lambda x: x[:1, 0]),
    "squeeze_dims": (lambda t: flow.squeeze(t[:1, :1], (0, 1)), lambda x: x[0, 0]),
    "squeeze_noop": (lambda t: t.squeeze(0), lambda x: x),
    "unsqueeze": (lambda t: t.unsqueeze(1), lambda x: x[:, None]),
    "unsqueeze_neg": (lambda t: flow.unsqueeze(t, -1), lambda x: x[..., None]),
    "flatten": (lambda t: t.flatten(), lambda x: x.reshape(-1)),
    "flatten_range": (lambda t: flow.flatten(t, 1, 2), lambda x: x.reshape(2, 12)),
    "flatten_start": (lambda t: t.flatten(start_dim=1), lambda x: x.reshape(2, -1)),
    "unflatten": (lambda t: t.unflatten(2, (2, 2)), lambda x: x.reshape(2, 3, 2, 2)),
    "view_as": (lambda t: t.view_as(flow.ones(4, 6)), lambda x: x.reshape(4, 6)),
    "t_2d": (lambda t: t[0].t(), lambda x: x[0].T),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_op_forward_and_backward(name):
    fn, ref = VIEWS[name]
    x = _x()
    assert_close(fn(tensor(x)), ref(x))
    check_grad(fn, [x])


@pytest.mark.parametrize(
    "name",
    [
        "view",
        "transpose",
        "permute",
        "narrow",
        "select",
        "slice_steps",
        "expand",
        "squeeze",
        "unsqueeze",
        "flatten",
        "T",
    ],
)
def test_view_ops_share_memory(name):
    fn, _ = VIEWS[name]
    t = tensor(_x())
    v = fn(t)
    assert shares_memory(t, v)
    if name != "expand":  # writing into an expanded view is rejected
        assert shares_memory(v, t)


def test_view_on_non_contiguous_requires_reshape():
    t = tensor(_x()).transpose(0, 1)
    with pytest.raises(RuntimeError, match=r"\[view\].*\(3, 2, 4\)"):
        t.view(-1)
    r = t.reshape(-1)
    assert_close(r, _x().transpose(1, 0, 2).reshape(-1))
    assert not shares_memory(r, t)
    # a view that keeps the non-contiguous dims apart works
    assert_close(t.view(3, 2, 2, 2), _x().transpose(1, 0, 2).reshape(3, 2, 2, 2))


def test_reshape_of_contiguous_is_a_view():
    t = tensor(_x())
    assert shares_memory(t.reshape(4, 6), t)
    assert_close(t[:, 1].reshape(8), _x()[:, 1].reshape(8))


def test_contiguous():
    t = tensor(_x())
    assert t.is_contiguous()
    assert t.contiguous().data_ptr() == t.data_ptr()
    tt = t.transpose(0, 2)
    assert not tt.is_contiguous()
    c = tt.contiguous()
    assert c.is_contiguous()
    assert c.stride() == (6, 2, 1)
    assert_close(c, _x().transpose(2, 1, 0))
    assert not shares_memory(c, tt)
    check_grad(lambda a: a.transpose(0, 1).contiguous() * 2, [_x((2, 3))])


def test_strides_and_offsets_of_views():
    t = flow.zeros(2, 3, 4)
    assert t.stride() == (12, 4, 1)
    assert t.transpose(0, 2).stride() == (1, 4, 12)
    assert t[:, 1].storage_offset() == 4
    assert t[:, :, ::2].stride() == (12, 4, 2)
    assert t[:, :1].expand(2, 5, 4).stride(1) == 0
    assert t.unsqueeze(0).shape == (1, 2, 3, 4)


def test_view_shape_errors():
    t = flow.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"\[view\].*\(4, -1\).*6"):
        t.view(4, -1)
    with pytest.raises(RuntimeError, match=r"\[reshape\].*\(5,\)"):
        t.reshape(5)
    with pytest.raises(RuntimeError, match=r"\[reshape\]"):
        t.reshape(-1, -1)
    with pytest.raises(RuntimeError, match=r"\[expand\].*\(2, 3\)"):
        t.expand(2, 4)
    with pytest.raises(IndexError, match=r"\[narrow\].*\(2, 3\)"):
        t.narrow(1, 2, 2)
    with pytest.raises(RuntimeError, match=r"\[permute\]"):
        t.permute(0, 0)
    with pytest.raises(IndexError, match=r"\[transpose\]"):
        t.transpose(0, 2)
    with pytest.raises(RuntimeError, match=r"\[t\]"):
        flow.ones(2, 3, 4).t()


def test_zero_size_and_0d_views():
    z = flow.zeros(0, 3)
    assert tuple(z.view(3, 0).shape) == (3, 0)
    assert tuple(z.reshape(-1, 3).shape) == (0, 3)
    assert tuple(z.t().shape) == (3, 0)
    assert tuple(z.unsqueeze(1).shape) == (0, 1, 3)
    s = tensor(np.array(2.0))
    assert tuple(s.reshape(1, 1).shape) == (1, 1)
    assert tuple(s.unsqueeze(0).shape) == (1,)
    assert tuple(s.flatten().shape) == (1,)
    assert tuple(flow.ones(1, 1).squeeze().shape) == ()
    check_grad(lambda a: a.reshape(0, 2).t(), [np.zeros((2, 0))])


def test_views_of_views_compose():
    x = _x((4, 6))
    t = tensor(x)
    v = t.t()[1:5:2].unsqueeze(0).expand(3, 2, 4)
    assert_close(v, np.broadcast_to(x.T[1:5:2][None], (3, 2, 4)))
    check_grad(lambda a: a.t()[1:5:2].unsqueeze(0).expand(3, 2, 4), [x])


# ---- cat / stack / split / chunk ---------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat(dim):
    r = rng()
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for i, s in enumerate(shapes):
        s[dim] = i + 1
    xs = [r.randn(*s) for s in shapes]
    out = flow.cat([tensor(x) for x in xs], dim)
    assert_close(out, np.concatenate(xs, axis=dim))
    assert_close(flow.concat([tensor(x) for x in xs], dim=dim), np.concatenate(xs, axis=dim))
    check_grad(lambda *ts: flow.cat(list(ts), dim=dim), [x[:1] for x in xs])


def test_cat_non_contiguous_mixed_dtypes_and_empty():
    a, b = _x((3, 2)), _x((2, 3), seed=1)
    out = flow.cat([tensor(a), tensor(b).t()], 1)
    assert_close(out, np.concatenate([a, b.T], 1))
    mixed = flow.cat([flow.ones(2, dtype=flow.int32), flow.ones(2, dtype=flow.float32)])
    assert mixed.dtype == flow.float32
    with_empty = flow.cat([flow.ones(0, 3), flow.ones(2, 3)])
    assert tuple(with_empty.shape) == (2, 3)
    check_grad(lambda x, y: flow.cat([x, y.t()], 1), [a, b])
    check_grad(lambda x, y: flow.cat([x, y]), [np.zeros((0, 2)), a])


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    xs = [_x((2, 3), seed=i) for i in range(3)]
    out = flow.stack([tensor(x) for x in xs], dim)
    assert_close(out, np.stack(xs, axis=dim))
    check_grad(lambda *ts: flow.stack(list(ts), dim=dim), xs)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_split_by_size(size, dim):
    x = _x((5, 4))
    parts = flow.split(tensor(x), size, dim)
    n = x.shape[dim]
    ref = np.split(x, list(range(size, n, size)), axis=dim)
    assert len(parts) == len(ref)
    for p, r in zip(parts, ref):
        assert_close(p, r)
    t = tensor(x)
    assert shares_memory(t.split(size, dim)[-1], t)
    check_grad(lambda a: flow.split(a, size, dim)[-1] * 2 + flow.split(a, size, dim)[0].sum(), [x])


def test_split_by_sections_and_errors():
    x = _x((6, 2))
    parts = tensor(x).split([1, 0, 5])
    assert [tuple(p.shape) for p in parts] == [(1, 2), (0, 2), (5, 2)]
    assert_close(parts[2], x[1:])
    with pytest.raises(RuntimeError, match=r"\[split\].*\(6, 2\)"):
        tensor(x).split([2, 2])
    with pytest.raises(RuntimeError, match=r"\[split\]"):
        tensor(x).split(0)


@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 7])
def test_chunk(chunks):
    x = _x((6, 3))
    parts = flow.chunk(tensor(x), chunks)
    step = -(-6 // chunks)
    expect = [x[i : i + step] for i in range(0, 6, step)]
    assert len(parts) == len(expect)
    for p, e in zip(parts, expect):
        assert_close(p, e)
    parts_1 = tensor(x).chunk(2, dim=1)
    assert [tuple(p.shape) for p in parts_1] == [(6, 2), (6, 1)]
    check_grad(lambda a: flow.cat(list(flow.chunk(a, chunks))[::-1]), [x])


def test_cat_stack_errors_name_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"\[cat\].*\(2, 3\).*\(2, 4\)"):
        flow.cat([flow.ones(2, 3), flow.ones(2, 4)], 0)
    with pytest.raises(RuntimeError, match=r"\[cat\].*\(2, 3\).*\(3,\)"):
        flow.cat([flow.ones(2, 3), flow.ones(3)])
    with pytest.raises(IndexError, match=r"\[cat\]"):
        flow.cat([flow.ones(2, 3), flow.ones(2, 3)], 2)
    with pytest.raises(RuntimeError, match=r"\[cat\]"):
        flow.cat([])
    with pytest.raises(RuntimeError, match=r"\[stack\].*\(2, 3\).*\(3, 2\)"):
        flow.stack([flow.ones(2, 3), flow.ones(3, 2)])


def test_torch_style_keyword_arguments():
    t = tensor(_x())
    assert tuple(t.transpose(dim0=0, dim1=2).shape) == (4, 3, 2)
    assert tuple(flow.transpose(t, dim0=1, dim1=2).shape) == (2, 4, 3)
    assert tuple(t.unsqueeze(dim=1).shape) == (2, 1, 3, 4)
    assert tuple(flow.unsqueeze(t, dim=0).shape) == (1, 2, 3, 4)
    assert_close(t.narrow(dim=2, start=1, length=2), _x()[:, :, 1:3])
    assert_close(flow.narrow(t, dim=0, start=1, length=1), _x()[1:])
    assert_close(t.select(dim=1, index=0), _x()[:, 0])
    assert tuple(flow.reshape(t, shape=(6, 4)).shape) == (6, 4)
    assert tuple(flow.permute(t, dims=(2, 1, 0)).shape) == (4, 3, 2)
    assert tuple(flow.cat(tensors=[t, t], dim=1).shape) == (2, 6, 4)
    assert tuple(flow.flatten(t, start_dim=1, end_dim=2).shape) == (2, 12)
    assert tuple(t.split(split_size_or_sections=2, dim=2)[0].shape) == (2, 3, 2)
    assert tuple(t.chunk(chunks=3, dim=1)[0].shape) == (2, 1, 4)
