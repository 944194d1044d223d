"""torch.*'s layout, reduction and search functions written as composites (issue 44), against
PyTorch: forward in float64 and float32, gradients in float64 against torch's autograd, index
results exactly, and error messages."""

import numpy as np
import pytest
import torch

import oneflowlike as flow

R = np.random.default_rng(1)
X = R.standard_normal((3, 4))
X3 = R.standard_normal((2, 3, 4))
V = R.standard_normal(4)


def _outs(r):
    return list(r) if isinstance(r, (list, tuple)) else [r]


def _compare(fn, arrays, grad=True, ints=(), **kwargs):
    """fn(lib, *tensors) on oneflowlike and torch: values, dtypes and float64 gradients."""
    ft = [flow.tensor(a, requires_grad=grad and i not in ints) for i, a in enumerate(arrays)]
    tt = [torch.tensor(a, requires_grad=grad and i not in ints) for i, a in enumerate(arrays)]
    fo, to = _outs(fn(flow, *ft, **kwargs)), _outs(fn(torch, *tt, **kwargs))
    assert len(fo) == len(to)
    for f, t in zip(fo, to):
        assert tuple(f.shape) == tuple(t.shape), (f.shape, t.shape)
        assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    diff_f = [f for f in fo if f.dtype == flow.float64]
    diff_t = [t for t in to if t.dtype == torch.float64]
    if grad and diff_f:
        ws = [R.standard_normal(tuple(t.shape)) for t in diff_t]
        fx = [t for t in ft if t.requires_grad]
        tx = [t for t in tt if t.requires_grad]
        fg = flow.autograd.grad(diff_f, fx, [flow.tensor(w) for w in ws], allow_unused=True)
        tg = torch.autograd.grad(diff_t, tx, [torch.tensor(w) for w in ws], allow_unused=True)
        for a, b in zip(fg, tg):
            if b is None:
                continue
            np.testing.assert_allclose(a.numpy(), b.numpy(force=True), rtol=1e-9, atol=1e-12)


CASES = {
    "flip": (lambda m, x: m.flip(x, [0, 2]), [X3]),
    "fliplr": (lambda m, x: m.fliplr(x), [X]),
    "flipud": (lambda m, x: x.flipud(), [X]),
    "rot90": (lambda m, x: m.rot90(x, 1, [1, 2]), [X3]),
    "rot90_3": (lambda m, x: m.rot90(x, -1), [X]),
    "roll": (lambda m, x: m.roll(x, [1, -3], [0, 2]), [X3]),
    "roll_flat": (lambda m, x: x.roll(5), [X]),
    "diag_vec": (lambda m, x: m.diag(x, 1), [V]),
    "diag_vec_neg": (lambda m, x: m.diag(x, -2), [V]),
    "diag_mat": (lambda m, x: m.diag(x, -1), [X]),
    "diagonal": (lambda m, x: m.diagonal(x, 1, 2, 0), [X3]),
    "diagonal_neg": (lambda m, x: x.diagonal(-1, -1, -2), [X3]),
    "diag_embed": (lambda m, x: m.diag_embed(x, 1, 0, 2), [X]),
    "diagflat": (lambda m, x: m.diagflat(x, -1), [X[:2, :2]]),
    "trace": (lambda m, x: m.trace(x), [X]),
    "take": (lambda m, x: m.take(x, m.tensor([[0, -1], [5, 2]])), [X]),
    "take_along_dim": (lambda m, x: m.take_along_dim(x, m.tensor([[0], [2], [1]]), 1), [X]),
    "take_along_dim_flat": (lambda m, x: m.take_along_dim(x, m.tensor([3, 1])), [X]),
    "tensor_split": (lambda m, x: m.tensor_split(x, 3, 1), [X]),
    "tensor_split_idx": (lambda m, x: x.tensor_split([1, 3], 1), [X]),
    "hsplit": (lambda m, x: m.hsplit(x, 2), [X]),
    "vsplit": (lambda m, x: m.vsplit(x, [1]), [X]),
    "dsplit": (lambda m, x: m.dsplit(x, 2), [X3]),
    "split_with_sizes": (lambda m, x: x.split_with_sizes([1, 3], 1), [X]),
    "meshgrid": (lambda m, a, b: m.meshgrid(a, b, indexing="ij"), [V, V[:3]]),
    "meshgrid_xy": (lambda m, a, b: m.meshgrid([a, b], indexing="xy"), [V, V[:3]]),
    "broadcast_tensors": (lambda m, a, b: m.broadcast_tensors(a, b), [X, V]),
    "cartesian_prod": (lambda m, a, b: m.cartesian_prod(a, b), [V, V[:2]]),
    "block_diag": (lambda m, a, b: m.block_diag(a, b), [X, V]),
    "kron": (lambda m, a, b: m.kron(a, b), [X[:2], X3]),
    "slice_scatter": (lambda m, x, s: m.slice_scatter(x, s, 1, 1, None, 2), [X, X[:, :2]]),
    "select_scatter": (lambda m, x, s: m.select_scatter(x, s, 0, -1), [X, V]),
    "index_fill": (lambda m, x: x.index_fill(1, m.tensor([0, 2]), -1.5), [X]),
    "ravel": (lambda m, x: m.ravel(x.t()), [X]),
    "narrow_copy": (lambda m, x: m.narrow_copy(x, 1, 1, 2), [X]),
    "permute_copy": (lambda m, x: m.permute_copy(x, (2, 0, 1)), [X3]),
    "expand_copy": (lambda m, x: m.expand_copy(x, (2, 4)), [V]),
    "nansum": (lambda m, x: m.nansum(m.where(x > 1, x * float("nan"), x), 1), [X]),
    "nanmean": (lambda m, x: m.nanmean(m.where(x > 1, x * float("nan"), x), 0, True), [X]),
    "count_nonzero": (lambda m, x: m.count_nonzero(m.relu(x), 1), [X]),
    "aminmax": (lambda m, x: m.aminmax(x, dim=1), [X]),
    "std_mean": (lambda m, x: m.std_mean(x, 1), [X]),
    "var_mean": (lambda m, x: m.var_mean(x, [0, 2], correction=0, keepdim=True), [X3]),
    "kthvalue": (lambda m, x: m.kthvalue(x, 2, 0), [X]),
    "median": (lambda m, x: m.median(x), [X]),
    "median_dim": (lambda m, x: x.median(1, keepdim=True), [X]),
    "msort": (lambda m, x: m.msort(x), [X]),
    "cross": (lambda m, a, b: m.cross(a, b, dim=0), [X[:, :2], X[:, 2:]]),
    "diff": (lambda m, x: m.diff(x, 2, 1, prepend=x[:, :1]), [X]),
    "trapezoid": (lambda m, y: m.trapezoid(y, dx=0.5), [X]),
    "trapezoid_x": (lambda m, y, x: m.trapezoid(y, x, dim=1), [X, np.sort(V)]),
    "trapz": (lambda m, y: m.trapz(y, dim=0), [X]),
    "cumulative_trapezoid": (lambda m, y, x: m.cumulative_trapezoid(y, x), [X, np.sort(V)]),
    "dist": (lambda m, a, b: m.dist(a, b), [X, V]),
    "dist_3": (lambda m, a, b: m.dist(a, b, 3), [X, V]),
    "dist_inf": (lambda m, a, b: m.dist(a, b, float("inf")), [X, V]),
    "addmv": (lambda m, i, a, v: m.addmv(i, a, v, beta=0.5, alpha=2), [X[:, 0], X, V]),
    "addr": (lambda m, i, a, b: m.addr(i, a, b, alpha=3), [X, X[:, 0], V]),
    "addbmm": (lambda m, i, a, b: m.addbmm(i, a, b, beta=2), [X[:, :3], X3, X3.transpose(0, 2, 1)]),
    "vdot": (lambda m, a, b: m.vdot(a, b), [V, V[::-1].copy()]),
    "tensordot": (lambda m, a, b: m.tensordot(a, b, 1), [X3, X.T.copy()]),
    "cov": (lambda m, x: m.cov(x), [X]),
    "cov_0": (lambda m, x: m.cov(x, correction=0), [V]),
    "corrcoef": (lambda m, x: m.corrcoef(x), [X]),
    "angle": (lambda m, x: m.angle(x), [X]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_with_gradients(name):
    fn, arrays = CASES[name]
    _compare(fn, arrays)
    if name not in ("cov_0",):  # float32 spot check of values
        fo = _outs(fn(flow, *[flow.tensor(a.astype(np.float32)) for a in arrays]))
        to = _outs(fn(torch, *[torch.tensor(a.astype(np.float32)) for a in arrays]))
        for f, t in zip(fo, to):
            np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


SEARCH = {
    "searchsorted": lambda m, s, v: m.searchsorted(s, v),
    "searchsorted_right": lambda m, s, v: m.searchsorted(s, v, right=True, out_int32=True),
    "searchsorted_side": lambda m, s, v: m.searchsorted(s, v, side="right"),
    "bucketize": lambda m, s, v: m.bucketize(v, s),
    "bucketize_right": lambda m, s, v: m.bucketize(v, s, right=True),
    "isin": lambda m, s, v: m.isin(v, s),
    "isin_invert": lambda m, s, v: m.isin(v, s, invert=True),
    "isclose": lambda m, s, v: m.isclose(v, v + s[:1] * 1e-6, rtol=1e-5),
    "unravel_index": lambda m, s, v: m.unravel_index(m.tensor([0, 5, 11]), (3, 4)),
    "equal": lambda m, s, v: m.equal(s, s),
}


@pytest.mark.parametrize("name", list(SEARCH))
def test_searches_and_comparisons_exactly(name):
    s = np.array([1.0, 2.0, 2.0, 5.0])
    v = np.array([[0.5, 2.0], [5.0, 7.0]])
    fo = _outs(SEARCH[name](flow, flow.tensor(s), flow.tensor(v)))
    to = _outs(SEARCH[name](torch, torch.tensor(s), torch.tensor(v)))
    for f, t in zip(fo, to):
        f = f if isinstance(f, flow.Tensor) else flow.tensor(f)  # equal gives a bool, as torch's
        t = t if isinstance(t, torch.Tensor) else torch.tensor(t)
        assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name
        np.testing.assert_array_equal(f.numpy(), t.numpy())


def test_searchsorted_batched_and_with_sorter():
    seq = np.array([[1, 3, 5], [2, 4, 6]])
    vals = np.array([[3, 6], [1, 7]])
    got = flow.searchsorted(flow.tensor(seq), flow.tensor(vals))
    np.testing.assert_array_equal(
        got.numpy(), torch.searchsorted(torch.tensor(seq), torch.tensor(vals)).numpy()
    )
    raw = np.array([5, 1, 3])
    sorter = np.argsort(raw)
    got = flow.searchsorted(flow.tensor(raw), flow.tensor([2, 4]), sorter=flow.tensor(sorter))
    want = torch.searchsorted(torch.tensor(raw), torch.tensor([2, 4]), sorter=torch.tensor(sorter))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_integer_inputs():
    a = np.arange(12).reshape(3, 4)
    for fn in (
        lambda m, x: m.flip(x, [1]),
        lambda m, x: m.roll(x, 1, 0),
        lambda m, x: m.diag(x),
        lambda m, x: m.trace(x),
        lambda m, x: m.kthvalue(x, 1, 1)[0],
        lambda m, x: m.diff(x),
        lambda m, x: m.kron(x, x),
        lambda m, x: m.count_nonzero(x),
        lambda m, x: m.nansum(x),
    ):
        f, t = fn(flow, flow.tensor(a)), fn(torch, torch.tensor(a))
        assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(f.numpy(), t.numpy())


def test_errors_name_the_op_and_shapes():
    x = flow.ones(3, 4)
    with pytest.raises(RuntimeError, match=r"\[roll\] shifts and dims"):
        flow.roll(x, [1, 2], [0])
    with pytest.raises(RuntimeError, match=r"\[diag\].*\(2, 3, 4\)"):
        flow.diag(flow.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match=r"\[kthvalue\] k \(5\) out of range"):
        flow.kthvalue(x, 5, 1)
    with pytest.raises(RuntimeError, match=r"\[cross\].*size 3"):
        flow.cross(x, x, dim=1)
    with pytest.raises(RuntimeError, match=r"\[hsplit\].*not divisible"):
        flow.hsplit(x, 3)
    with pytest.raises(RuntimeError, match=r"\[flip\].*multiple times"):
        flow.flip(x, [0, 0])
    with pytest.raises(RuntimeError, match=r"\[slice_scatter\].*\(3, 1\)"):
        flow.slice_scatter(x, flow.ones(3, 1), 1, 0, 2)
    with pytest.raises(RuntimeError, match=r"\[searchsorted\] side"):
        flow.searchsorted(flow.ones(3), x, side="middle")


def test_on_meta_and_in_a_graph():
    m = flow.ones(3, 4, device="meta")
    assert flow.roll(m, 1, 0).shape == (3, 4) and flow.diag(m).shape == (3,)
    assert flow.diag_embed(m).shape == (3, 4, 4) and flow.kron(m, m).shape == (9, 16)
    x = flow.tensor(X)

    class G(flow.nn.Graph):
        def build(self, t):
            return flow.roll(flow.flip(t, [1]), 1, 0) + flow.diag(flow.diag(t)).sum()

    want = flow.roll(flow.flip(x, [1]), 1, 0) + flow.diag(flow.diag(x)).sum()
    np.testing.assert_allclose(G()(x).numpy(), want.numpy())
