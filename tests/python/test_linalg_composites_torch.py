"""Tier (b): the composite names of flow.linalg (vector_norm, matrix_norm, norm, cond,
matrix_rank, matrix_power, multi_dot, vecdot, cross, diagonal, vander, matrix_exp) and the
torch-level norm, dist, renorm, cdist, vdot, chain_matmul and cross, against PyTorch: forward in
float64 and float32, gradients in float64 against torch's autograd, meta device, nn.Graph, and
the errors (torch's messages)."""

import numpy as np
import pytest
import torch
from _check import rng

import oneflowlike as flow
from oneflowlike.linalg import _chain_order

pytestmark = [
    pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated"),
    pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim"),
]
INF = float("inf")


def _a(shape, seed=0):
    return rng(seed).standard_normal(shape)


def _run(ffn, tfn, arrays, dtype=np.float64, grad=True, rtol=1e-9, atol=1e-11, grad_rtol=1e-8):
    """ffn(flow tensors) against tfn(torch tensors): shape, dtype and values; in float64 also
    the gradient of every input through a random weighting of the outputs."""
    grad = grad and dtype == np.float64
    fx = [flow.tensor(a.astype(dtype), requires_grad=grad) for a in arrays]
    tx = [torch.tensor(a.astype(dtype), requires_grad=grad) for a in arrays]
    fo, to = ffn(*fx), tfn(*tx)
    got, want = fo.detach().numpy(), to.detach().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not grad or not to.requires_grad:
        return
    if not fo.requires_grad:  # a piecewise-constant result: torch's gradient is zero or absent
        return
    w = rng(7).standard_normal(want.shape)
    (fo * flow.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for f, t in zip(fx, tx):
        if t.grad is None:  # torch's gradient is absent: ours is zero
            assert f.grad is None or not f.grad.numpy().any()
            continue
        scale = max(1.0, np.abs(t.grad.numpy()).max())
        np.testing.assert_allclose(
            f.grad.numpy(), t.grad.numpy(), rtol=grad_rtol, atol=1e-10 * scale
        )


NORM_ORDS = [2, 1, 0, 3, 0.5, -1, INF, -INF]


@pytest.mark.parametrize("ord", NORM_ORDS)
def test_vector_norm(ord):
    for dim, keepdim in [(None, False), (-1, True), ((0, 2), False), ((), False)]:
        for dtype, tol in [(np.float64, 1e-12), (np.float32, 1e-5)]:
            _run(
                lambda x: flow.linalg.vector_norm(x, ord, dim, keepdim),
                lambda x: torch.linalg.vector_norm(x, ord, dim, keepdim),
                [_a((2, 3, 4))],
                dtype=dtype,
                rtol=tol,
            )
    _run(
        lambda x: flow.linalg.vector_norm(x, ord, dtype=flow.float64),
        lambda x: torch.linalg.vector_norm(x, ord, dtype=torch.float64),
        [_a((3, 4))],
        dtype=np.float32,
        rtol=1e-6,
    )


def test_vector_norm_zero_vector_gradient_is_zero_like_torch():
    for ord in (2, 3, 0.5, -1, -2.5, 0):
        _run(
            lambda x: flow.linalg.vector_norm(x, ord, -1),
            lambda x: torch.linalg.vector_norm(x, ord, -1),
            [np.concatenate([np.zeros((1, 3)), _a((1, 3))])],
        )
    _run(lambda a, b: flow.cdist(a, b), lambda a, b: torch.cdist(a, b), [_a((4, 3))] * 2)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, INF, -INF])
def test_matrix_norm(ord):
    for dim in [(-2, -1), (0, 2), (2, 0)]:
        for keepdim in (False, True):
            _run(
                lambda x: flow.linalg.matrix_norm(x, ord, dim, keepdim),
                lambda x: torch.linalg.matrix_norm(x, ord, dim, keepdim),
                [_a((2, 3, 4))],
            )
    _run(
        lambda x: flow.linalg.matrix_norm(x, ord),
        lambda x: torch.linalg.matrix_norm(x, ord),
        [_a((2, 4, 3))],
        dtype=np.float32,
        rtol=1e-5,
    )


def test_linalg_norm_and_torch_norm_dispatch():
    cases = [((4,), None, None), ((3, 4), None, None), ((3, 4), "nuc", None), ((3, 4), -2, None)]
    cases += [((2, 3, 4), 3, 1), ((2, 3, 4), INF, (0, 2)), ((2, 3, 4), None, (1, 2))]
    for shape, ord, dim in cases:
        _run(
            lambda x: flow.linalg.norm(x, ord, dim),
            lambda x: torch.linalg.norm(x, ord, dim),
            [_a(shape)],
        )
    cases = [("fro", None), ("fro", (0, 1)), ("nuc", None), (3, 1), (None, None), (1, (0, 2))]
    for p, dim in cases:
        shape = (3, 4) if p == "nuc" else (2, 3, 4)
        _run(lambda x: flow.norm(x, p, dim), lambda x: torch.norm(x, p, dim), [_a(shape)])
    _run(lambda x: flow.norm(x, 2, 1, True), lambda x: torch.norm(x, 2, 1, True), [_a((3, 4))])


def test_cond_rank_power():
    b = _a((2, 3, 3))
    for p in (None, 2, -2):
        _run(lambda x: flow.linalg.cond(x, p), lambda x: torch.linalg.cond(x, p), [b])
    _run(lambda x: flow.linalg.cond(x), lambda x: torch.linalg.cond(x), [_a((3, 5))])
    for n in (0, 1, 2, 3, 6):  # n = 0 too: the identity with a zero gradient
        _run(
            lambda x: flow.linalg.matrix_power(x, n),
            lambda x: torch.linalg.matrix_power(x, n),
            [b],
        )
    g = rng(3)
    low = g.standard_normal((2, 5, 2)) @ g.standard_normal((2, 2, 4))
    sym = low[0] @ low[0].T
    for a, kw in [
        (low, {}),
        (low, {"atol": 1.0}),
        (low, {"rtol": 0.5}),
        (low, {"atol": 0.0, "rtol": 0.0}),
        (sym, {"hermitian": True}),
        (np.tril(sym), {"hermitian": True}),
        (np.zeros((3, 3)), {}),
    ]:
        got = flow.linalg.matrix_rank(flow.tensor(a), **kw)
        want = torch.linalg.matrix_rank(torch.tensor(a), **kw)
        assert got.dtype == flow.int64
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = flow.linalg.matrix_rank(flow.tensor(low), tol=1.0).numpy()
    np.testing.assert_array_equal(got, torch.linalg.matrix_rank(torch.tensor(low), tol=1.0))


def test_multi_dot_chooses_cheapest_order_and_matches_torch():
    # (10x100)(100x5)(5x50): ((AB)C) costs 7500, (A(BC)) 75000: the split is after B.
    assert _chain_order([10, 100, 5, 50])[0][2] == 1
    assert _chain_order([50, 5, 100, 10])[0][2] == 0
    shapes = [(3,), (3, 5), (5, 2), (2, 6), (6,)]
    for chain in (shapes, shapes[1:4], shapes[:3], shapes[1:]):
        arrays = [_a(s, i) for i, s in enumerate(chain)]
        _run(
            lambda *m: flow.linalg.multi_dot(list(m)),
            lambda *m: torch.linalg.multi_dot(list(m)),
            arrays,
        )
    arrays = [_a(s, i) for i, s in enumerate(shapes[1:4])]
    _run(lambda *m: flow.chain_matmul(*m), lambda *m: torch.chain_matmul(*m), arrays)
    _run(lambda m: flow.chain_matmul(m), lambda m: torch.chain_matmul(m), arrays[:1])


def test_vecdot_cross_diagonal_vander():
    _run(
        lambda a, b: flow.linalg.vecdot(a, b),
        lambda a, b: torch.linalg.vecdot(a, b),
        [_a((2, 3, 4)), _a((3, 4), 1)],
    )
    _run(
        lambda a, b: flow.linalg.vecdot(a, b, dim=0),
        lambda a, b: torch.linalg.vecdot(a, b, dim=0),
        [_a((3, 4)), _a((3, 4), 1)],
    )
    _run(lambda a, b: flow.vdot(a, b), lambda a, b: torch.vdot(a, b), [_a(5), _a(5, 1)])
    _run(
        lambda a, b: flow.linalg.cross(a, b),
        lambda a, b: torch.linalg.cross(a, b),
        [_a((2, 4, 3)), _a((1, 4, 3), 1)],
    )
    _run(
        lambda a, b: flow.linalg.cross(a, b, dim=0),
        lambda a, b: torch.linalg.cross(a, b, dim=0),
        [_a((3, 4)), _a((3, 4), 1)],
    )
    for shape in [(3, 4), (4, 3), (3, 3)]:
        _run(
            lambda a, b: flow.cross(a, b), lambda a, b: torch.cross(a, b), [_a(shape), _a(shape, 1)]
        )
    x = _a((2, 3, 4))
    for kw in [{}, {"offset": 1}, {"offset": -2}, {"offset": 5}, {"dim1": 0, "dim2": 2}]:
        _run(lambda a: flow.linalg.diagonal(a, **kw), lambda a: torch.linalg.diagonal(a, **kw), [x])
    v = np.array([[1.0, 0.0, 2.0, -1.5], [0.5, 3.0, -2.0, 1.0]])
    for N in (None, 2, 6):
        _run(lambda a: flow.linalg.vander(a, N=N), lambda a: torch.linalg.vander(a, N=N), [v])
    _run(lambda a: flow.linalg.vander(a, N=3), lambda a: torch.linalg.vander(a, N=3), [v[0, 0]])


@pytest.mark.parametrize("scale", [0.01, 0.5, 3.0, 20.0])
def test_matrix_exp(scale):
    a = _a((2, 4, 4), 5) * scale
    want = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
    mag = np.abs(want).max()
    _run(
        lambda x: flow.linalg.matrix_exp(x),
        lambda x: torch.linalg.matrix_exp(x),
        [a],
        rtol=1e-11,
        atol=1e-12 * mag,
        grad_rtol=1e-9,
    )
    _run(
        lambda x: flow.linalg.matrix_exp(x),
        lambda x: torch.linalg.matrix_exp(x),
        [a],
        dtype=np.float32,
        rtol=1e-4,
        atol=2e-6 * mag,
    )
    _run(lambda x: flow.linalg.matrix_exp(x), lambda x: torch.linalg.matrix_exp(x), [a[:, :1, :1]])
    _run(
        lambda x: flow.matrix_exp(x),
        lambda x: torch.matrix_exp(x),
        [a[0]],
        rtol=1e-11,
        atol=1e-12 * mag,
    )


def test_dist_renorm_cdist():
    for p in (2, 1, 3.5, 0, INF):
        _run(
            lambda a, b: flow.dist(a, b, p),
            lambda a, b: torch.dist(a, b, p),
            [_a((3, 4)), _a((4,), 1)],
        )
    for p, dim in [(2, 0), (1, 1), (3, -1)]:
        _run(
            lambda a: flow.renorm(a, p, dim, 1.5),
            lambda a: torch.renorm(a, p, dim, 1.5),
            [_a((3, 4, 2))],
        )
    for p in (2, 1, 0, INF, 1.5):
        _run(
            lambda a, b: flow.cdist(a, b, p),
            lambda a, b: torch.cdist(a, b, p),
            [_a((2, 5, 3)), _a((1, 4, 3), 1)],
        )
    for mode in ("use_mm_for_euclid_dist", "use_mm_for_euclid_dist_if_necessary"):
        _run(
            lambda a, b: flow.cdist(a, b, compute_mode=mode),
            lambda a, b: torch.cdist(a, b, compute_mode=mode),
            [_a((30, 3)), _a((4, 3), 1)],
        )
    _run(
        lambda a, b: flow.cdist(a, b),
        lambda a, b: torch.cdist(a, b),
        [_a((30, 3)), _a((4, 3), 1)],
        dtype=np.float32,
        rtol=1e-5,
        atol=1e-5,
    )


def test_meta_and_graph():
    m = flow.ones(2, 4, 4, device="meta")
    assert flow.linalg.matrix_norm(m, "nuc", keepdim=True).shape == (2, 1, 1)
    assert flow.linalg.matrix_exp(m).shape == (2, 4, 4)
    assert flow.linalg.matrix_rank(m).shape == (2,)
    assert flow.linalg.vander(m).shape == (2, 4, 4, 4)
    assert flow.cdist(m, m).shape == (2, 4, 4)
    x = flow.tensor(_a((2, 4, 4)))

    def body(t):
        return (
            flow.linalg.matrix_norm(t, "nuc")
            + flow.linalg.vector_norm(t, 3, (1, 2))
            + flow.linalg.cond(t)
            + flow.linalg.matrix_power(t, 3).sum((1, 2))
            + flow.linalg.multi_dot([t[0], t[1], t[0]]).sum()
            + flow.cdist(t, t).sum((1, 2))
            + flow.renorm(t, 2, 0, 1.0).sum((1, 2))
        )

    class G(flow.nn.Graph):
        def build(self, t):
            return body(t)

    np.testing.assert_allclose(G()(x).numpy(), body(x).numpy(), rtol=1e-12)

    class Exp(flow.nn.Graph):
        def build(self, t):
            return flow.linalg.matrix_exp(t)

    with pytest.raises(NotImplementedError, match="matrix_exp under nn.Graph"):
        Exp()(x)


def _raises(exc, match, fn, *args, **kw):
    with pytest.raises(exc, match=match):
        fn(*args, **kw)


def test_errors():
    a, v, sq = flow.randn(2, 3), flow.randn(3), flow.randn(3, 3)
    la = flow.linalg
    _raises(NotImplementedError, "Expected a floating point", la.vector_norm, flow.ones(2).long())
    _raises(
        RuntimeError, "cannot compute the -1 norm on an empty", la.vector_norm, flow.ones(0), -1
    )
    _raises(RuntimeError, "narrowing", la.vector_norm, a.double(), dtype=flow.float32)
    _raises(RuntimeError, "at least 2 dimensions", la.matrix_norm, v)
    _raises(RuntimeError, "Order 3 not supported", la.matrix_norm, a, 3)
    _raises(RuntimeError, "dims must be different", la.matrix_norm, a, dim=(0, 0))
    _raises(RuntimeError, "must be 1D or 2D. Got 3D", la.norm, flow.randn(2, 2, 2), 2)
    _raises(ValueError, "invalid norm type: 3", la.cond, sq, 3)
    _raises(RuntimeError, "batches of square matrices, but they are 2 by 3", la.matrix_power, a, 2)
    _raises(RuntimeError, "batches of square matrices", la.matrix_exp, a)
    _raises(RuntimeError, "expected at least 2 tensors but got 1", la.multi_dot, [a])
    _raises(
        RuntimeError, r"shapes \[2, 3\] and \[2, 3\] cannot be multiplied", la.multi_dot, [a, a]
    )
    _raises(
        RuntimeError, "tensor 1 must be 2D but got 3D", la.multi_dot, [a, flow.randn(3, 2, 2), a]
    )
    _raises(RuntimeError, "same dtype", la.multi_dot, [a, v.double()])
    _raises(RuntimeError, "Expected one or more matrices", flow.chain_matmul)
    _raises(RuntimeError, "vdot.*1-d tensors", flow.vdot, a, a)
    _raises(RuntimeError, "same dtype", la.vecdot, v, v.double())
    _raises(RuntimeError, "same number of dimensions", la.cross, a, v)
    _raises(RuntimeError, "must have size 3", la.cross, flow.randn(2, 4), flow.randn(2, 4))
    _raises(RuntimeError, "N must be greater than 1", la.vander, v, N=1)
    _raises(RuntimeError, "non-positive-norm", flow.renorm, a, 0, 0, 1.0)
    _raises(RuntimeError, "maxnorm to be >= 0", flow.renorm, a, 1, 0, -1.0)
    _raises(RuntimeError, "at least 2D tensors, X1 got: 1D", flow.cdist, v, v)
    _raises(RuntimeError, "same number of columns", flow.cdist, a, flow.randn(2, 4))
    _raises(RuntimeError, "non-negative p", flow.cdist, a, a, -1.0)
    _raises(ValueError, "not a valid value for compute_mode", flow.cdist, a, a, compute_mode="x")
    _raises(RuntimeError, "at least 2 dimensions", la.matrix_rank, v)
