"""Functions and Tensor methods popular model files call (issue 29's coverage list), each a
composite row of its op family: outer/ger, mm, mv, bmm, dot, inner, movedim/moveaxis,
swapaxes/swapdims, broadcast_to, repeat, tile, repeat_interleave, unbind, unflatten,
isfinite/isinf/isnan, nan_to_num. Against PyTorch on the same data, gradients included, and the
wrong shapes raise naming the op."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import check_grad, rng

torch = pytest.importorskip("torch")


def same(ours, theirs):
    """Our result equals PyTorch's: a tensor, or a list/tuple of them, values, dtype and shape."""
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
        return
    want = theirs.detach().numpy()
    got = ours.detach().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)


def pair(*shape, seed=0):
    a = rng(seed).standard_normal(shape).astype(np.float32)
    return flow.tensor(a), torch.tensor(a)


CASES = [
    ("outer", lambda m, a, b: m.outer(a, b), [(3,), (4,)]),
    ("ger", lambda m, a, b: a.ger(b) if m is flow else m.outer(a, b), [(3,), (4,)]),
    ("mm", lambda m, a, b: m.mm(a, b), [(2, 3), (3, 4)]),
    ("mv", lambda m, a, b: a.mv(b), [(2, 3), (3,)]),
    ("bmm", lambda m, a, b: a.bmm(b), [(2, 3, 4), (2, 4, 5)]),
    ("dot", lambda m, a, b: m.dot(a, b), [(5,), (5,)]),
    ("inner", lambda m, a, b: m.inner(a, b), [(2, 3, 4), (5, 4)]),
    ("movedim", lambda m, a: m.movedim(a, 0, 2), [(2, 3, 4)]),
    ("moveaxis", lambda m, a: a.moveaxis(-1, 0), [(2, 3, 4)]),
    ("swapaxes", lambda m, a: m.swapaxes(a, 0, 2), [(2, 3, 4)]),
    ("swapdims", lambda m, a: a.swapdims(1, 2), [(2, 3, 4)]),
    ("broadcast_to", lambda m, a: m.broadcast_to(a, (2, 3, 4)), [(3, 1)]),
    ("repeat", lambda m, a: a.repeat(2, 1, 3), [(3, 2)]),
    ("repeat_list", lambda m, a: a.repeat([2, 2]), [(3, 2)]),
    ("tile", lambda m, a: m.tile(a, (2,)), [(3, 2)]),
    ("repeat_interleave", lambda m, a: m.repeat_interleave(a, 2, dim=1), [(3, 2)]),
    ("repeat_interleave_flat", lambda m, a: a.repeat_interleave(3), [(2, 2)]),
    ("unbind", lambda m, a: m.unbind(a, 1), [(2, 3)]),
    ("unbind_method", lambda m, a: a.unbind(), [(2, 3)]),
    ("unflatten", lambda m, a: m.unflatten(a, 1, (2, 3)), [(4, 6)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch_with_gradients(name, fn, shapes):
    ours, theirs = zip(*(pair(*s, seed=i) for i, s in enumerate(shapes)))
    same(fn(flow, *ours), fn(torch, *theirs))

    def total(*xs):
        out = fn(flow, *xs)
        return sum(o.sum() for o in out) if isinstance(out, (list, tuple)) else out

    check_grad(total, [rng(i).standard_normal(s) for i, s in enumerate(shapes)])


def test_finiteness_tests_and_nan_to_num_match_pytorch():
    a = np.array([1.0, np.nan, np.inf, -np.inf, -2.5, 0.0], dtype=np.float32)
    x, t = flow.tensor(a), torch.tensor(a)
    for name in ("isfinite", "isinf", "isnan"):
        same(getattr(flow, name)(x), getattr(torch, name)(t))
        same(getattr(x, name)(), getattr(t, name)())
    same(flow.nan_to_num(x), torch.nan_to_num(t))
    same(x.nan_to_num(nan=1.0, posinf=9.0, neginf=-9.0), t.nan_to_num(1.0, 9.0, -9.0))
    h = flow.tensor(a).half()
    same(flow.nan_to_num(h), torch.nan_to_num(torch.tensor(a).half()))
    i = flow.tensor([1, 2, 3])
    assert flow.isfinite(i).tolist() == [True] * 3 and not flow.isnan(i).any().item()
    assert flow.nan_to_num(i).tolist() == [1, 2, 3]


def test_wrong_shapes_raise_naming_the_op():
    with pytest.raises(RuntimeError, match=r"\[mm\] expects 2-d and 2-d tensors, got \(2, 3, 4\)"):
        flow.mm(flow.zeros(2, 3, 4), flow.zeros(4, 2))
    with pytest.raises(
        RuntimeError, match=r"\[bmm\] batch sizes differ: \(2, 3, 4\) and \(3, 4, 5\)"
    ):
        flow.bmm(flow.zeros(2, 3, 4), flow.zeros(3, 4, 5))
    with pytest.raises(
        RuntimeError, match=r"\[dot\] the vectors differ in length: \(3,\) and \(4,\)"
    ):
        flow.dot(flow.zeros(3), flow.zeros(4))
    with pytest.raises(RuntimeError, match=r"\[outer\] expects 1-d tensors, got vec2 \(2, 2\)"):
        flow.outer(flow.zeros(3), flow.zeros(2, 2))
    with pytest.raises(RuntimeError, match=r"\[repeat\] needs at least as many repeats"):
        flow.zeros(2, 3).repeat(2)
    with pytest.raises(RuntimeError, match=r"\[repeat_interleave\] repeats must be non-negative"):
        flow.zeros(2).repeat_interleave(-1)
    with pytest.raises(RuntimeError, match=r"\[inner\] the last dimensions differ"):
        flow.inner(flow.zeros(2, 3), flow.zeros(2, 4))


def test_on_global_tensors_they_keep_working_through_their_parts():
    place = flow.placement("cpu", [0])
    x = flow.randn(4, 6).to_global(place, flow.sbp.broadcast)
    assert x.repeat(2, 1).shape == (8, 6) and x.repeat(2, 1).is_global
    assert [u.shape for u in x.unbind(1)][:2] == [(4,), (4,)]
    assert flow.isfinite(x).all().item()


STACKS = {
    "hstack": [[(3,), (4,)], [(2, 3), (2, 1)], [(2, 3, 2), (2, 1, 2)]],
    "vstack": [[(3,), (3,)], [(2, 3), (1, 3)], [(1, 3, 2), (2, 3, 2)]],
    "row_stack": [[(3,), (3,)], [(2, 3), (1, 3)]],
    "dstack": [[(3,), (3,)], [(2, 3), (2, 3)], [(2, 3, 1), (2, 3, 2)]],
    "column_stack": [[(3,), (3,)], [(2, 3), (2,)], [(2, 3, 2), (2, 1, 2)]],
}


@pytest.mark.parametrize(
    "name,shapes", [(n, s) for n, cases in STACKS.items() for s in cases], ids=str
)
def test_numpy_style_stacking_matches_pytorch(name, shapes):
    ours, theirs = zip(*(pair(*s, seed=i) for i, s in enumerate(shapes)))
    same(getattr(flow, name)(list(ours)), getattr(torch, name)(list(theirs)))


@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 3, 4)])
def test_atleast_matches_pytorch(shape):
    x, t = pair(*shape)
    for n in ("atleast_1d", "atleast_2d", "atleast_3d"):
        same(getattr(flow, n)(x), getattr(torch, n)(t))


@pytest.mark.parametrize(
    "amounts,value",
    [((1, 2), 0.0), ((1, 1, 2, 0), 3.5), ((-1, 2), None), ((0, 0, 1, -1, 2, 0), -1.0)],
)
def test_pad_matches_pytorch_with_gradients(amounts, value):
    x, t = pair(3, 4, 5)
    kwargs = {} if value is None else {"value": value}
    same(
        flow.nn.functional.pad(x, amounts, **kwargs), torch.nn.functional.pad(t, amounts, **kwargs)
    )
    check_grad(
        lambda v: flow.nn.functional.pad(v, amounts, **kwargs), [rng(1).standard_normal((3, 4, 5))]
    )


def test_pad_refuses_what_it_cannot_do_naming_it():
    with pytest.raises(RuntimeError, match=r"\[pad\] expects an even number of amounts"):
        flow.nn.functional.pad(flow.zeros(2, 3), (1, 1, 1))
    with pytest.raises(RuntimeError, match=r"\[pad\] crops dimension 1 of \(2, 3\) below 0"):
        flow.nn.functional.pad(flow.zeros(2, 3), (-2, -2))


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4, 2), 4)])
def test_group_norm_matches_pytorch_with_gradients(shape, groups):
    x, t = pair(*shape)
    ours, theirs = flow.nn.GroupNorm(groups, shape[1]), torch.nn.GroupNorm(groups, shape[1])
    w = rng(5).standard_normal(shape[1]).astype(np.float32)
    with flow.no_grad():
        ours.weight.copy_(flow.tensor(w))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
    np.testing.assert_allclose(
        ours(x).detach().numpy(), theirs(t).detach().numpy(), rtol=1e-5, atol=1e-5
    )
    F = flow.nn.functional
    check_grad(
        lambda v, g, b: F.group_norm(v, groups, g, b, 1e-5),
        [
            rng(1).standard_normal(shape),
            rng(2).standard_normal(shape[1]),
            rng(3).standard_normal(shape[1]),
        ],
    )
    with pytest.raises(RuntimeError, match=r"\[group_norm\] num_groups 4 does not divide the 6"):
        F.group_norm(flow.zeros(2, 6, 3), 4)
