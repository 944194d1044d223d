"""torch's cumulative, order-statistic, counting and scatter-reduce functions against PyTorch:
float64 values and gradients, integer inputs, empty and 0-d inputs, errors."""

import pickle

import numpy as np
import pytest
import torch

import oneflowlike as flow

torch.set_num_threads(1)
pytestmark = pytest.mark.unit


def _f(t):
    return flow.tensor(t.detach().numpy(), requires_grad=t.requires_grad)


def _close(ours, ref, tol=1e-10):
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            _close(o, r, tol)
        return
    o = ours.numpy()
    r = ref.detach().numpy()
    assert o.shape == r.shape, (o.shape, r.shape)
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (ours.dtype, ref.dtype)
    np.testing.assert_allclose(o, r, rtol=tol, atol=tol, equal_nan=True)


def _check_grad(fn_flow, fn_torch, x, tol=1e-10, pick=lambda out: out):
    """Values and gradient of input for one random cotangent, float64."""
    t = x.clone().requires_grad_(True)
    f = _f(t)
    ref, ours = pick(fn_torch(t)), pick(fn_flow(f))
    _close(ours, ref, tol)
    g = torch.randn(ref.shape, dtype=ref.dtype, generator=torch.Generator().manual_seed(7))
    ref.backward(g)
    ours.backward(flow.tensor(g.numpy()))
    _close(f.grad, t.grad, tol)


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_values_and_grad_with_zeros(dim):
    x = _x(4, 5)
    x[1, 2] = 0.0
    x[3, 0] = 0.0
    x[2, 3] = x[2, 4] = 0.0
    _check_grad(lambda a: flow.cumprod(a, dim), lambda a: torch.cumprod(a, dim), x)
    _check_grad(lambda a: a.cumprod(-1), lambda a: a.cumprod(-1), _x(7, seed=dim + 1))


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_ties_nan_and_grad(name):
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 1.0, 1.0, 5.0], [2.0, 2.0, float("nan"), 1.0, 7.0, float("nan"), 0.0]], dtype=torch.float64)  # fmt: skip
    for dim in (0, 1):
        r = getattr(torch, name)(x, dim)
        o = getattr(flow, name)(_f(x), dim)
        _close(o.values, r.values)
        assert o.indices.numpy().tolist() == r.indices.tolist()
    x = torch.tensor([2.0, 3.0, 3.0, 1.0, 3.0, 0.5], dtype=torch.float64)
    _check_grad(
        lambda a: getattr(flow, name)(a, 0), lambda a: getattr(torch, name)(a, 0), x,
        pick=lambda o: o[0],
    )  # fmt: skip


def test_logcumsumexp_stable_and_grad():
    x = _x(3, 6)
    x[0, 0] = 800.0  # exp overflows: the scan of logaddexp does not
    x[1, 2] = -float("inf")
    ref = torch.logcumsumexp(x, 1)
    _close(flow.logcumsumexp(_f(x), 1), ref)
    _check_grad(lambda a: flow.logcumsumexp(a, 0), lambda a: torch.logcumsumexp(a, 0), _x(5, 3))
    _close(_f(_x(4)).logcumsumexp(0), torch.logcumsumexp(_x(4), 0))
    # A -inf after a finite value gets no gradient; two leading -inf get NaN, as in PyTorch.
    for vals in ([1.0, -float("inf"), 2.0, 0.5], [-float("inf"), -float("inf"), 1.0]):
        x = torch.tensor(vals, dtype=torch.float64)
        _check_grad(lambda a: flow.logcumsumexp(a, 0), lambda a: torch.logcumsumexp(a, 0), x)


def test_integer_and_bool_inputs():
    i = torch.tensor([[3, -1, 2], [0, 5, 5]], dtype=torch.int32)
    _close(flow.cumprod(_f(i), 1), torch.cumprod(i, 1))
    _close(flow.cumprod(_f(i), 0, dtype=flow.float64), torch.cumprod(i, 0, dtype=torch.float64))
    b = torch.tensor([True, False, True])
    _close(flow.cumprod(_f(b), 0), torch.cumprod(b, 0))
    for name in ("cummax", "cummin"):
        r, o = getattr(torch, name)(i, 1), getattr(flow, name)(_f(i), 1)
        _close(o.values, r.values)
        _close(o.indices, r.indices)
    r, o = torch.mode(i, 1), flow.mode(_f(i), 1)
    _close(o.values, r.values)
    _close(o.indices, r.indices)


def test_empty_and_zero_dim():
    e = torch.zeros(0, 3, dtype=torch.float64)
    _close(flow.cumprod(_f(e), 0), torch.cumprod(e, 0))
    _close(flow.logcumsumexp(_f(e), 1), torch.logcumsumexp(e, 1))
    _close(flow.cummax(_f(e), 0).indices, torch.cummax(e, 0).indices)
    s = torch.tensor(2.5, dtype=torch.float64)
    _close(flow.cumprod(_f(s), 0), torch.cumprod(s, 0))
    _close(flow.cummin(_f(s), -1).indices, torch.cummin(s, -1).indices)
    _close(flow.nanmedian(_f(s)), torch.nanmedian(s))
    _close(flow.mode(_f(s)).values, torch.mode(s).values)
    _close(flow.nonzero(_f(s)), torch.nonzero(s))
    _close(flow.unique(_f(s), return_inverse=True), torch.unique(s, return_inverse=True))
    _close(flow.nanmedian(_f(torch.zeros(0, dtype=torch.float64))), torch.nanmedian(torch.zeros(0, dtype=torch.float64)))  # fmt: skip


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.cumprod(x, 2),
        lambda m, x: m.cummax(x, -3),
        lambda m, x: m.logcumsumexp(x, 5),
        lambda m, x: m.nanmedian(x, 2),
        lambda m, x: m.mode(x, 2),
        lambda m, x: m.quantile(x, 0.5, dim=2),
        lambda m, x: m.scatter_reduce(x, 2, m.zeros(1, 1, dtype=m.int64), x, "amax"),
    ],
)
def test_bad_dim_is_an_index_error(call):
    with pytest.raises(IndexError, match="out of range"):
        call(flow, flow.zeros(2, 3))
    with pytest.raises(IndexError):
        call(torch, torch.zeros(2, 3))


def test_nanmedian_and_mode():
    x = _x(4, 5)
    x[0, 1] = x[2, 2] = x[2, 4] = float("nan")
    x[3, 1:] = float("nan")  # the index of an all-NaN row is std::nth_element's pick in PyTorch
    _close(flow.nanmedian(_f(x[3:, 1:]), 1).values, torch.nanmedian(x[3:, 1:], 1).values)
    for dim in (0, 1):
        r, o = torch.nanmedian(x, dim, keepdim=dim == 0), flow.nanmedian(_f(x), dim, dim == 0)
        _close(o.values, r.values)
        _close(o.indices, r.indices)
    _close(flow.nanmedian(_f(x)), torch.nanmedian(x))
    _check_grad(lambda a: flow.nanmedian(a, 1), lambda a: torch.nanmedian(a, 1), _x(3, 6), pick=lambda o: o[0])  # fmt: skip
    m = torch.tensor([[3.0, 1.0, 1.0, 3.0, 2.0], [2, 2, 1, 1, 0], [4, 4, 4, 0, 0]], dtype=torch.float64)  # fmt: skip
    for dim, keep in ((1, False), (0, True)):
        r, o = torch.mode(m, dim, keep), flow.mode(_f(m), dim, keep)
        _close(o.values, r.values)
        _close(o.indices, r.indices)
    _check_grad(lambda a: a.mode(1), lambda a: a.mode(1), m, pick=lambda o: o[0])


@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_modes_nan_and_grad(interp):
    x = _x(3, 9)
    x[1, 4] = float("nan")
    q = torch.tensor([0.0, 0.25, 0.5, 0.8, 1.0], dtype=torch.float64)
    for fn in ("quantile", "nanquantile"):
        for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"keepdim": True}):
            ref = getattr(torch, fn)(x, q, interpolation=interp, **kw)
            _close(getattr(flow, fn)(_f(x), _f(q), interpolation=interp, **kw), ref)
        ref = getattr(torch, fn)(x, 0.3, dim=1, interpolation=interp)
        _close(getattr(flow, fn)(_f(x), 0.3, dim=1, interpolation=interp), ref)
    y = _x(4, 7, seed=3)
    _check_grad(
        lambda a: flow.quantile(a, flow.tensor([0.1, 0.6], dtype=flow.float64), dim=1, interpolation=interp),  # fmt: skip
        lambda a: torch.quantile(a, torch.tensor([0.1, 0.6], dtype=torch.float64), dim=1, interpolation=interp),  # fmt: skip
        y,
    )
    if interp != "linear":
        return  # only linear interpolation is differentiable in q
    qt = torch.tensor([0.15, 0.7], dtype=torch.float64, requires_grad=True)
    qf = _f(qt)
    torch.quantile(y, qt, interpolation=interp).sum().backward()
    flow.quantile(_f(y), qf, interpolation=interp).sum().backward()
    _close(qf.grad, qt.grad)


def test_quantile_errors():
    x = flow.zeros(3)
    with pytest.raises(RuntimeError, match=r"range \[0, 1\]"):
        flow.quantile(x, 1.5)
    with pytest.raises(ValueError, match="interpolation"):
        flow.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="float or double"):
        flow.quantile(flow.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match="non-empty"):
        flow.quantile(flow.zeros(0), 0.5)


def test_frexp():
    x = torch.tensor([0.0, -0.0, 1.0, -3.0, 0.7, 1e-310, 5e-324, 1.7e308, float("inf"), -float("inf"), float("nan"), 2.0**-1022], dtype=torch.float64)  # fmt: skip
    r, o = torch.frexp(x), flow.frexp(_f(x))
    _close(o.mantissa, r.mantissa, 0)
    _close(o.exponent, r.exponent, 0)
    x32 = torch.tensor([1e-45, 3.4e38, 0.1, -7.5, 1.0 - 2**-24], dtype=torch.float32)
    r, o = torch.frexp(x32), flow.frexp(_f(x32))
    _close(o.mantissa, r.mantissa, 0)
    _close(o.exponent, r.exponent, 0)
    _check_grad(lambda a: flow.frexp(a), lambda a: torch.frexp(a), _x(6) * 100, pick=lambda o: o[0])


def test_unique_nonzero_argwhere():
    x = torch.tensor([[3.0, float("nan"), 1.0], [3.0, 1.0, float("nan")], [0.0, 0.0, 2.0]])
    for kw in ({}, {"return_inverse": True}, {"return_counts": True, "return_inverse": True}):
        _close(flow.unique(_f(x), **kw), torch.unique(x, **kw))
        _close(_f(x).unique(**kw), x.unique(**kw))
    i = torch.tensor([[1, 2, 1], [1, 2, 1], [0, 5, 0]])
    for d in (0, 1, -1):
        kw = {"dim": d, "return_inverse": True, "return_counts": True}
        _close(flow.unique(_f(i), **kw), torch.unique(i, **kw))
    _close(flow.nonzero(_f(x)), torch.nonzero(x))
    _close(flow.nonzero(_f(i), as_tuple=True), torch.nonzero(i, as_tuple=True))
    _close(flow.argwhere(_f(i)), torch.argwhere(i))
    _close(_f(i).nonzero_static(size=7), i.nonzero_static(size=7))
    _close(_f(i).nonzero_static(size=2, fill_value=9), i.nonzero_static(size=2, fill_value=9))
    s = torch.tensor(3.0)
    _close(flow.nonzero_static(_f(s), size=2), torch.nonzero_static(s, size=2))
    back = pickle.loads(pickle.dumps(flow.cummax(_f(x[0]), 0)))  # return types pickle
    assert back.indices.tolist() == torch.cummax(x[0], 0).indices.tolist()
    e = torch.zeros(2, 0)
    _close(flow.nonzero(_f(e)), torch.nonzero(e))
    _close(flow.unique(_f(e), return_counts=True), torch.unique(e, return_counts=True))
    meta = flow.empty(3, device="meta")
    with pytest.raises(RuntimeError, match="depends on the data.*meta"):
        flow.nonzero(meta)
    with pytest.raises(RuntimeError, match="depends on the data.*meta"):
        flow.unique(meta)
    assert tuple(flow.nonzero_static(meta, size=4).shape) == (4, 1)


def test_bincount_histc_histogram():
    i = torch.tensor([1, 3, 3, 0, 7])
    w = torch.tensor([0.5, 1.0, 2.0, -1.0, 4.0], dtype=torch.float64)
    _close(flow.bincount(_f(i)), torch.bincount(i))
    _close(flow.bincount(_f(i), _f(w), minlength=10), torch.bincount(i, w, minlength=10))
    _close(flow.bincount(_f(i), _f(i)), torch.bincount(i, i))
    _close(flow.bincount(_f(torch.zeros(0, dtype=torch.int64))), torch.bincount(torch.zeros(0, dtype=torch.int64)))  # fmt: skip
    with pytest.raises(RuntimeError, match="non-negative"):
        flow.bincount(flow.tensor([1, -2]))
    x = _x(40) * 3
    for dt in (torch.float32, torch.float64):
        xd = x.to(dt)
        _close(flow.histc(_f(xd), bins=7), torch.histc(xd, bins=7))
        _close(_f(xd).histc(5, -1, 2), xd.histc(5, -1, 2))
        _close(flow.histc(_f(torch.ones(3, dtype=dt)), 4), torch.histc(torch.ones(3, dtype=dt), 4))
    xh = x.to(torch.bfloat16)
    oh = flow.histc(flow.tensor(xh.float().numpy()).to(flow.bfloat16), 9, -2.3, 3.1)
    _close(oh.to(flow.float32), torch.histc(xh, 9, -2.3, 3.1).float())
    for kw in ({}, {"density": True}, {"range": (-1.0, 2.0)}, {"weight": w.new_ones(40) * 0.5}):
        kw = dict(kw)
        r = torch.histogram(x, 6, **kw)
        o = flow.histogram(_f(x), 6, **{k: _f(v) if torch.is_tensor(v) else v for k, v in kw.items()})  # fmt: skip
        _close(o, r)
    edges = torch.tensor([-3.0, -1.0, 0.0, 0.5, 4.0], dtype=torch.float64)
    _close(flow.histogram(_f(x), _f(edges)), torch.histogram(x, edges))
    p = _x(30, 2, seed=4)
    r = torch.histogramdd(p, [3, 4], density=True)
    o = flow.histogramdd(_f(p), [3, 4], density=True)
    _close(o.hist, r.hist)
    _close(list(o.bin_edges), list(r.bin_edges))


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x = _x(3, 5)
    src = _x(3, 4, seed=1)
    src[0, 1] = 0.0  # a zero in a product
    index = torch.tensor([[0, 1, 0, 4], [2, 2, 2, 0], [4, 3, 1, 4]])
    # (PyTorch's backward fails when index is smaller than src: the shapes match here.)
    for dim, idx, src in ((1, index, src), (0, index[:, :3] % 3, src[:, :3].contiguous())):
        _check_grad(
            lambda a: flow.scatter_reduce(a, dim, _f(idx), _f(src), reduce, include_self=include_self),  # fmt: skip
            lambda a: torch.scatter_reduce(a, dim, idx, src, reduce, include_self=include_self),
            x,
        )
        s = src.clone().requires_grad_(True)
        fs = _f(s)
        r = torch.scatter_reduce(x, dim, idx, s, reduce, include_self=include_self)
        o = flow.scatter_reduce(_f(x), dim, _f(idx), fs, reduce, include_self=include_self)
        g = torch.randn(r.shape, dtype=torch.float64)
        r.backward(g)
        o.backward(flow.tensor(g.numpy()))
        _close(fs.grad, s.grad)
    xi = torch.tensor([[5, -3, 2, 7, 1]] * 3)
    si = torch.tensor([[2, 9, -4, 1]] * 3)
    r = xi.scatter_reduce(1, index, si, reduce, include_self=include_self)
    _close(_f(xi).scatter_reduce(1, _f(index), _f(si), reduce, include_self=include_self), r)
    y = _f(xi)
    y.scatter_reduce_(1, _f(index), _f(si), reduce, include_self=include_self)
    _close(y, r)
    if reduce != "sum":
        src1 = _x(3, 2, seed=5)
        i1 = torch.tensor([2, 0])
        r = torch.index_reduce(x, 1, i1, src1, reduce, include_self=include_self)
        _close(flow.index_reduce(_f(x), 1, _f(i1), _f(src1), reduce, include_self=include_self), r)


def test_scatter_reduce_meta_and_errors():
    m = flow.empty(3, 4, device="meta")
    out = flow.scatter_reduce(m, 1, flow.empty(3, 2, dtype=flow.int64, device="meta"), m, "amax")
    assert tuple(out.shape) == (3, 4) and out.device.type == "meta"
    x = flow.zeros(3)
    with pytest.raises(RuntimeError, match="out of bounds"):
        flow.scatter_reduce(x, 0, flow.tensor([0, 5]), flow.ones(2), "amax")
    with pytest.raises(RuntimeError, match="reduce argument"):
        flow.scatter_reduce(x, 0, flow.tensor([0]), flow.ones(1), "max")
    with pytest.raises(RuntimeError, match="int64"):
        flow.scatter_reduce(x, 0, flow.tensor([0], dtype=flow.int32), flow.ones(1), "sum")


def test_combinations_and_gradient():
    v = torch.tensor([1.0, 2.5, -1.0, 4.0], dtype=torch.float64)
    for r, rep in ((2, False), (3, True), (1, False), (5, False), (0, False)):
        _close(flow.combinations(_f(v), r, rep), torch.combinations(v, r, rep))
    _check_grad(lambda a: flow.combinations(a, 2), lambda a: torch.combinations(a, 2), v)
    x = _x(4, 5)
    coords = torch.tensor([0.0, 0.5, 1.5, 1.75, 3.0], dtype=torch.float64)
    cases = [
        {},
        {"spacing": 2.0, "edge_order": 2},
        {"spacing": [0.5, 3.0]},
        {"spacing": (coords,), "dim": 1},
        {"spacing": (coords,), "dim": -1, "edge_order": 2},
        {"dim": 0, "edge_order": 2},
    ]
    for kw in cases:
        fk = {k: tuple(_f(c) for c in v) if k == "spacing" and isinstance(v, tuple) else v for k, v in kw.items()}  # fmt: skip
        _close(flow.gradient(_f(x), **fk), torch.gradient(x, **kw))
    _check_grad(lambda a: flow.gradient(a, dim=1)[0], lambda a: torch.gradient(a, dim=1)[0], x)
    _close(flow.gradient(flow.tensor([1, 4, 9, 16])), torch.gradient(torch.tensor([1, 4, 9, 16])))
    with pytest.raises(RuntimeError, match="edge_order"):
        flow.gradient(flow.zeros(2), edge_order=2)


def test_scatter_reduce_prod_inf_stays_in_its_segment():
    # PyTorch's own gradient of the inf element is NaN (inf / inf); the other segments' must match.
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    s = torch.tensor([float("inf"), 2.0, 5.0, 0.5], dtype=torch.float64, requires_grad=True)
    i = torch.tensor([0, 1, 1, 2])
    fs = _f(s)
    r = torch.scatter_reduce(x, 0, i, s, "prod")
    o = flow.scatter_reduce(_f(x), 0, _f(i), fs, "prod")
    _close(o, r)
    r.sum().backward()
    o.sum().backward()
    _close(fs.grad[1:], s.grad[1:])
