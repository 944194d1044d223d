"""flow.vmap (and flow.func.vmap) against torch.vmap: in_dims (ints, negative, None, nested
tuples, lists and dicts), out_dims, pytrees in and out, keyword arguments, nesting, gradients,
randomness, and the errors for mismatched structures and sizes."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import rng

torch = pytest.importorskip("torch")


def pair(*shape, seed=0):
    a = rng(seed).standard_normal(shape).astype(np.float32)
    return flow.tensor(a), torch.tensor(a)


def same(ours, theirs):
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and ours.keys() == theirs.keys()
        for k in theirs:
            same(ours[k], theirs[k])
        return
    if isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
        return
    got, want = ours.detach().numpy(), theirs.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_exported_as_torch_names():
    import oneflowlike.func

    assert flow.func.vmap is flow.vmap and oneflowlike.func.vmap is flow.vmap


def test_dot_over_the_batch():
    (a, ta), (b, tb) = pair(5, 3, seed=1), pair(5, 3, seed=2)

    def dot(m):
        return lambda x, y: (x * y).sum()

    same(flow.vmap(dot(flow))(a, b), torch.vmap(dot(torch))(ta, tb))


@pytest.mark.parametrize(
    "in_dims,shapes",
    [
        (0, [(4, 3), (4, 3)]),
        (1, [(3, 4), (3, 4)]),
        (-1, [(3, 4), (3, 4)]),
        ((0, 1), [(4, 3), (3, 4)]),
        ((None, 0), [(3,), (4, 3)]),
        ((2, -2), [(3, 2, 4), (4, 3)]),
    ],
)
@pytest.mark.parametrize("out_dims", [0, 1, -1])
def test_in_dims_and_out_dims_match_torch(in_dims, shapes, out_dims):
    (a, ta), (b, tb) = pair(*shapes[0], seed=3), pair(*shapes[1], seed=4)

    def body(x, y):
        return (x + 1.0).reshape(-1)[:3].unsqueeze(0) * y.reshape(-1)[:1]

    same(
        flow.vmap(body, in_dims=in_dims, out_dims=out_dims)(a, b),
        torch.vmap(body, in_dims=in_dims, out_dims=out_dims)(ta, tb),
    )


def test_nested_inputs_and_outputs():
    (a, ta), (b, tb), (c, tc) = pair(4, 3, seed=5), pair(3, 4, seed=6), pair(3, seed=7)

    def f(pair_in, d):
        x, y = pair_in
        return {"sum": x + y + d["bias"], "parts": (x * 2.0, [y - d["bias"]])}

    in_dims = ((0, 1), {"bias": None})
    ours = flow.vmap(f, in_dims=in_dims, out_dims={"sum": 1, "parts": (0, [-1])})(
        (a, b), {"bias": c}
    )
    theirs = torch.vmap(f, in_dims=in_dims, out_dims={"sum": 1, "parts": (0, [-1])})(
        (ta, tb), {"bias": tc}
    )
    same(ours, theirs)


def test_keyword_arguments_are_not_mapped():
    (a, ta), (w, tw) = pair(4, 3, seed=8), pair(3, seed=9)

    def f(x, *, weight, scale=1.0):
        return (x * weight).sum() * scale

    same(flow.vmap(f)(a, weight=w, scale=2.0), torch.vmap(f)(ta, weight=tw, scale=2.0))


def test_non_tensor_inputs_pass_through_with_in_dim_none():
    a, ta = pair(4, 3, seed=10)
    same(
        flow.vmap(lambda x, k: x * k, in_dims=(0, None))(a, 3.0),
        torch.vmap(lambda x, k: x * k, in_dims=(0, None))(ta, 3.0),
    )


def test_nested_vmap_is_an_outer_product_of_batches():
    (a, ta), (b, tb) = pair(4, 3, seed=11), pair(5, 3, seed=12)

    def dot(x, y):
        return (x * y).sum()

    ours = flow.vmap(flow.vmap(dot, in_dims=(None, 0)), in_dims=(0, None))(a, b)
    theirs = torch.vmap(torch.vmap(dot, in_dims=(None, 0)), in_dims=(0, None))(ta, tb)
    assert tuple(ours.shape) == (4, 5)
    same(ours, theirs)


def test_matmul_per_example_and_gradients_match_torch():
    (a, ta), (w, tw) = pair(6, 3, seed=13), pair(3, 2, seed=14)
    a.requires_grad_(True)
    w.requires_grad_(True)
    ta.requires_grad_(True)
    tw.requires_grad_(True)

    def f(x, m):
        return (x.unsqueeze(0).matmul(m)).tanh().sum(0)

    ours = flow.vmap(f, in_dims=(0, None))(a, w)
    theirs = torch.vmap(f, in_dims=(0, None))(ta, tw)
    same(ours, theirs)
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    same(a.grad, ta.grad)
    same(w.grad, tw.grad)


def test_out_dims_none_for_an_unbatched_output():
    a, ta = pair(4, 3, seed=15)
    c, tc = pair(2, seed=16)
    ours = flow.vmap(lambda x, k: (x * 2.0, k), in_dims=(0, None), out_dims=(0, None))(a, c)
    theirs = torch.vmap(lambda x, k: (x * 2.0, k), in_dims=(0, None), out_dims=(0, None))(ta, tc)
    same(ours, theirs)


def test_randomness():
    a = flow.zeros(4, 3)
    with pytest.raises(RuntimeError, match="vmap.*random"):
        flow.vmap(lambda x: x + flow.rand(3))(a)
    flow.manual_seed(0)
    different = flow.vmap(lambda x: x + flow.rand(3), randomness="different")(a)
    assert not np.allclose(different[0].numpy(), different[1].numpy())
    same_ = flow.vmap(lambda x: x + flow.rand(3), randomness="same")(a)
    for i in range(1, 4):
        np.testing.assert_array_equal(same_[i].numpy(), same_[0].numpy())
    with pytest.raises(ValueError, match="randomness"):
        flow.vmap(lambda x: x, randomness="sometimes")


def test_chunk_size_does_not_change_results():
    a, ta = pair(7, 3, seed=17)
    same(flow.vmap(lambda x: x.exp(), chunk_size=2)(a), torch.vmap(lambda x: x.exp())(ta))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: flow.vmap(lambda x, y: x + y)(flow.zeros(3, 2), flow.zeros(4, 2)), "differ"),
        (lambda: flow.vmap(lambda x: x, in_dims=(0, 0))(flow.zeros(3)), "2 entries for 1"),
        (lambda: flow.vmap(lambda x: x, in_dims=2)(flow.zeros(3, 2)), "shape \\(3, 2\\)"),
        (lambda: flow.vmap(lambda x: x, in_dims=(None,))(flow.zeros(3)), "at least one"),
        (lambda: flow.vmap(lambda x, k: x, in_dims=(0, 0))(flow.zeros(3), 2.0), "float"),
        (lambda: flow.vmap(lambda x: 1.0)(flow.zeros(3)), "must return tensors"),
        (lambda: flow.vmap(lambda x: x, in_dims=[0])(flow.zeros(3)), "in_dims"),
        (lambda: flow.vmap(lambda x: x, out_dims=(0, 0))(flow.zeros(3)), "out_dims"),
    ],
)
def test_errors_name_vmap(call, match):
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert "vmap" in str(info.value)
