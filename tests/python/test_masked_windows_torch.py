"""Tier (b): flow.masked (torch.masked's reductions and normalizations) and flow.signal.windows
with the torch-level *_window functions, against PyTorch: forward in float64 and float32,
gradients in float64 against torch's autograd (fully masked slices included), integer inputs,
meta device and nn.Graph, and the errors."""

import numpy as np
import pytest
import torch
import torch.signal.windows as tw
from _check import rng

import oneflowlike as flow
import oneflowlike.signal.windows as fw


def _x(shape=(3, 4, 5), seed=0):
    return rng(seed).standard_normal(shape)


def _mask(shape=(3, 4, 5), seed=1):
    m = rng(seed).random(shape) > 0.45
    m[0, 1, :] = False  # a fully masked row along the last dim
    m[1] = False  # a fully masked slice along the first dim
    return m


MASKS = {"none": None, "full": _mask(), "broadcast": _mask()[0]}


def _run(ffn, tfn, arrays, dtype=np.float64, grad=True, rtol=1e-9, atol=1e-11):
    """Compares ffn(flow tensors) with tfn(torch tensors): values (nan where torch has nan),
    dtype, and in float64 the gradients of every input through a random weighting of the
    finite outputs."""
    fx = [flow.tensor(a.astype(dtype), requires_grad=grad) for a in arrays]
    tx = [torch.tensor(a.astype(dtype), requires_grad=grad) for a in arrays]
    fo, to = ffn(*fx), tfn(*tx)
    got, want = fo.detach().numpy(), to.detach().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not grad or not to.requires_grad:
        return
    finite = np.isfinite(want)
    w = rng(7).standard_normal(want.shape) * finite
    (flow.where(flow.tensor(finite), fo, 0.0) * flow.tensor(w)).sum().backward()
    (torch.where(torch.tensor(finite), to, 0.0) * torch.tensor(w)).sum().backward()
    for f, t in zip(fx, tx):
        if t.grad is None:  # a piecewise-constant result (ord=0 norm): ours is zero
            assert not f.grad.numpy().any()
            continue
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def _masks(key):
    m = MASKS[key]
    return (None, None) if m is None else (flow.tensor(m), torch.tensor(m))


# ---------------------------------------------------------------------------------- masked


@pytest.mark.parametrize("key", list(MASKS))
@pytest.mark.parametrize(
    "name", ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]
)
def test_masked_reductions_match_torch_with_gradients(name, key):
    fm, tm = _masks(key)
    for dim, keepdim in [(None, False), (1, True), ((0, 2), False), (-1, False)]:
        _run(
            lambda t: getattr(flow.masked, name)(t, dim=dim, keepdim=keepdim, mask=fm),
            lambda t: getattr(torch.masked, name)(t, dim=dim, keepdim=keepdim, mask=tm),
            [_x()],
        )


@pytest.mark.parametrize("key", list(MASKS))
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "softmax", "log_softmax", "softmin"])
def test_masked_normalizations_match_torch_with_gradients(name, key):
    fm, tm = _masks(key)
    for dim in (0, -1):
        _run(
            lambda t: getattr(flow.masked, name)(t, dim, mask=fm),
            lambda t: getattr(torch.masked, name)(t, dim, mask=tm),
            [_x()],
        )


@pytest.mark.parametrize("key", list(MASKS))
def test_masked_median_normalize_norm_orders_var_corrections(key):
    fm, tm = _masks(key)
    x = [_x()]
    for dim in (0, -1):
        _run(
            lambda t: flow.masked.median(t, dim, mask=fm),
            lambda t: torch.masked.median(t, dim, mask=tm),
            x,
        )
        for ord in (1.0, 2.0):
            _run(
                lambda t: flow.masked.normalize(t, ord, dim, mask=fm),
                lambda t: torch.masked.normalize(t, ord, dim, mask=tm),
                x,
            )
    for ord in (0, 1, 3, 0.5, float("inf"), -float("inf")):
        _run(
            lambda t: flow.masked.norm(t, ord, 1, mask=fm),
            lambda t: torch.masked.norm(t, ord, 1, mask=tm),
            x,
        )
    _run(
        lambda t: flow.masked.var(t, 1, correction=0, keepdim=True, mask=fm),
        lambda t: torch.masked.var(t, 1, correction=0, keepdim=True, mask=tm),
        x,
    )
    _run(
        lambda t: flow.masked.std(t, (0, 1), False, mask=fm),
        lambda t: torch.masked.std(t, (0, 1), False, mask=tm),
        x,
    )


def test_masked_argmax_argmin_logaddexp_and_float32():
    m = MASKS["full"]
    for name in ("argmax", "argmin"):
        for dim in (None, 1):
            _run(
                lambda t: getattr(flow.masked, name)(t, dim, mask=flow.tensor(m)),
                lambda t: getattr(torch.masked, name)(t, dim, mask=torch.tensor(m)),
                [_x()],
                grad=False,
            )
    _run(
        lambda a, b: flow.masked.logaddexp(
            a, b, input_mask=flow.tensor(m), other_mask=flow.tensor(m[0])
        ),
        lambda a, b: torch.masked.logaddexp(
            a, b, input_mask=torch.tensor(m), other_mask=torch.tensor(m[0])
        ),
        [_x(), _x(seed=3)],
    )
    for name in ("sum", "mean", "amax", "logsumexp", "norm", "var", "std"):
        _run(
            lambda t: getattr(flow.masked, name)(t, dim=1, mask=flow.tensor(m)),
            lambda t: getattr(torch.masked, name)(t, dim=1, mask=torch.tensor(m)),
            [_x()],
            dtype=np.float32,
            grad=False,
            rtol=1e-5,
            atol=1e-6,
        )
    for name in ("softmax", "cumprod", "median"):
        _run(
            lambda t: getattr(flow.masked, name)(t, -1, mask=flow.tensor(m)),
            lambda t: getattr(torch.masked, name)(t, -1, mask=torch.tensor(m)),
            [_x()],
            dtype=np.float32,
            grad=False,
            rtol=1e-5,
            atol=1e-6,
        )


def test_masked_integer_inputs_dtype_and_scalars():
    xi = rng(4).randint(-5, 6, (3, 4))
    m = rng(5).random((3, 4)) > 0.3
    fx, tx, fm, tm = flow.tensor(xi), torch.tensor(xi), flow.tensor(m), torch.tensor(m)
    for name in ("sum", "prod", "amax", "amin", "argmax", "argmin"):
        got = getattr(flow.masked, name)(fx, 1, mask=fm)
        want = getattr(torch.masked, name)(tx, 1, mask=tm)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(
        flow.masked.median(fx, 1).numpy(), torch.masked.median(tx, 1).numpy()
    )
    with pytest.raises(ValueError, match="fully masked out rows"):
        flow.masked.median(fx, 1, mask=flow.zeros(3, 4, dtype=flow.bool))
    with pytest.raises(ValueError, match="mean.*floating point"):
        flow.masked.mean(fx, 1)
    x = _x()
    _run(
        lambda t: flow.masked.sum(t, 1, dtype=flow.float32),
        lambda t: torch.masked.sum(t, 1, dtype=torch.float32),
        [x],
        grad=False,
        rtol=1e-6,
    )
    _run(lambda t: flow.masked.sum(t), lambda t: torch.masked.sum(t), [np.array(2.5)])
    _run(lambda t: flow.masked.median(t), lambda t: torch.masked.median(t), [np.array(2.5)])


def test_masked_errors():
    x = flow.tensor(_x())
    with pytest.raises(IndexError, match="mask dimensionality higher"):
        flow.masked.sum(x, mask=flow.ones(2, 3, 4, 5, dtype=flow.bool))
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.masked.sum(x, 3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        flow.masked.amax(x, (1, 1))
    with pytest.raises(RuntimeError, match="unbiased and correction"):
        flow.masked.var(x, 1, True, correction=1)


def test_masked_meta_and_graph():
    m = flow.ones(3, 4, 5, device="meta")
    mask = flow.ones(3, 4, 5, device="meta", dtype=flow.bool)
    assert flow.masked.median(m, 1, mask=mask).shape == (3, 5)
    assert flow.masked.std(m, (0, 2), keepdim=True, mask=mask).shape == (1, 4, 1)
    assert flow.masked.cumprod(m, 1, mask=mask).shape == (3, 4, 5)
    x, mk = flow.tensor(_x()), flow.tensor(MASKS["full"])

    def body(t, k):
        return (
            flow.masked.median(t, 1, mask=k).sum()
            + flow.masked.var(t, (0, 2), mask=k).nan_to_num().sum()
            + flow.masked.softmax(t, -1, mask=k).nan_to_num().sum()
            + flow.masked.cumprod(t, 2, mask=k).sum()
        )

    class G(flow.nn.Graph):
        def build(self, t, k):
            return body(t, k)

    np.testing.assert_allclose(G()(x, mk).numpy(), body(x, mk).numpy(), rtol=1e-12)


# --------------------------------------------------------------------------------- windows

WINDOWS = [
    ("bartlett", {}),
    ("blackman", {}),
    ("cosine", {}),
    ("exponential", {"tau": 2.5}),
    ("gaussian", {"std": 0.7}),
    ("general_cosine", {"a": [0.5, 0.3, 0.2]}),
    ("general_hamming", {"alpha": 0.6}),
    ("hamming", {}),
    ("hann", {}),
    ("kaiser", {}),
    ("kaiser", {"beta": 3.0}),
    ("nuttall", {}),
]


@pytest.mark.parametrize("name,kw", WINDOWS, ids=[f"{n}{len(k)}" for n, k in WINDOWS])
def test_signal_windows_match_torch(name, kw):
    for fdt, tdt, tol in [
        (flow.float64, torch.float64, 1e-12),
        (flow.float32, torch.float32, 2e-6),
    ]:
        for M in (0, 1, 2, 5, 8):
            for sym in (True, False):
                got = getattr(fw, name)(M, sym=sym, dtype=fdt, **kw)
                want = getattr(tw, name)(M, sym=sym, dtype=tdt, **kw)
                assert got.dtype == fdt and tuple(got.shape) == tuple(want.shape)
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    assert getattr(fw, name)(4, **kw).dtype == flow.float32
    assert getattr(fw, name)(4, requires_grad=True, **kw).requires_grad


TORCH_WINDOWS = [
    ("hann_window", ()),
    ("hamming_window", ()),
    ("hamming_window", (0.6, 0.3)),
    ("blackman_window", ()),
    ("bartlett_window", ()),
    ("kaiser_window", ()),
    ("kaiser_window", (5.0,)),
]


@pytest.mark.parametrize(
    "name,extra", TORCH_WINDOWS, ids=[f"{n}{len(e)}" for n, e in TORCH_WINDOWS]
)
def test_torch_level_windows_match_torch(name, extra):
    for fdt, tdt, tol in [
        (flow.float64, torch.float64, 1e-12),
        (flow.float32, torch.float32, 2e-6),
    ]:
        for n in (0, 1, 2, 5, 8):
            for periodic in (True, False):
                got = getattr(flow, name)(n, periodic, *extra, dtype=fdt)
                want = getattr(torch, name)(n, periodic, *extra, dtype=tdt)
                assert got.dtype == fdt and tuple(got.shape) == tuple(want.shape)
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    assert getattr(flow, name)(6).dtype == flow.float32


def test_window_errors_meta_and_graph():
    with pytest.raises(ValueError, match="requires non-negative window length, got M=-1"):
        fw.hann(-1)
    with pytest.raises(ValueError, match="expects float32 or float64"):
        fw.gaussian(3, dtype=flow.float16)
    with pytest.raises(ValueError, match="Center must be None"):
        fw.exponential(3, center=1.0)
    with pytest.raises(ValueError, match="Tau must be positive"):
        fw.exponential(3, tau=0.0)
    with pytest.raises(ValueError, match="Coefficients cannot be empty"):
        fw.general_cosine(3, a=[])
    with pytest.raises(TypeError, match="Coefficients must be a list"):
        fw.general_cosine(3, a=1.0)
    with pytest.raises(ValueError, match="beta must be non-negative"):
        fw.kaiser(3, beta=-1.0)
    with pytest.raises(RuntimeError, match="hann_window requires non-negative window_length"):
        flow.hann_window(-1)
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        flow.blackman_window(3, dtype=flow.int64)
    assert fw.kaiser(5, device="meta").shape == (5,)
    assert flow.hann_window(7, device="meta").shape == (7,)

    class G(flow.nn.Graph):
        def build(self, t):
            return t * fw.kaiser(5, dtype=flow.float64) + flow.hann_window(5, dtype=flow.float64)

    x = flow.tensor(_x((5,)))
    want = x * fw.kaiser(5, dtype=flow.float64) + flow.hann_window(5, dtype=flow.float64)
    np.testing.assert_allclose(G()(x).numpy(), want.numpy(), rtol=1e-12)
