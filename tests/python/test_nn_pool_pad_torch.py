"""Pooling (max, avg, LP, adaptive, fractional, unpool), padding layers and F.pad's modes,
PixelShuffle / PixelUnshuffle / ChannelShuffle, Upsample, grid_sample and affine_grid against
PyTorch: float64 forward, indices, input gradients, extra_repr, float32 spot checks, errors."""

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
torch.set_num_threads(1)  # tiny tensors: threads only add overhead


def _arr(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _close(a, b, tol=1e-10):
    a, b = a.detach().numpy(), b.detach().numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    if b.dtype == np.int64:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def check(fn, tfn, arrays, dtype="float64", tol=1e-10, grad=True):
    """fn / tfn take tensors; outputs (a tensor, or values and indices) and gradients agree."""
    tx = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad) for a in arrays]
    fx = [flow.tensor(a, dtype=getattr(flow, dtype), requires_grad=grad) for a in arrays]
    ty, fy = tfn(*tx), fn(*fx)
    if isinstance(ty, tuple):
        _close(fy[1], ty[1])
        ty, fy = ty[0], fy[0]
    _close(fy, ty, tol)
    if grad:
        g = _arr(tuple(ty.shape), seed=7)
        ty.backward(torch.tensor(g, dtype=ty.dtype))
        fy.backward(flow.tensor(g, dtype=fy.dtype))
        for f, t in zip(fx, tx):
            if f.grad is None:  # flow leaves a gradient that is zero everywhere unset
                assert not t.grad.abs().sum().item()
            else:
                _close(f.grad, t.grad, tol)


def check_module(make, shape, **kw):
    tm, fm = make(torch.nn), make(nn)
    assert repr(fm) == repr(tm)
    check(fm, tm, [_arr(shape)], **kw)


_S = {1: (2, 3, 9), 2: (2, 2, 7, 6), 3: (1, 2, 5, 6, 5)}

POOLS = {}
for _n in (1, 2, 3):
    _shape = _S[_n]
    POOLS[f"max{_n}d"] = (lambda m, n=_n: getattr(m, f"MaxPool{n}d")(3, 2, 1), _shape)
    POOLS[f"max{_n}d_ceil_indices"] = (
        lambda m, n=_n: getattr(m, f"MaxPool{n}d")(2, 2, 1, return_indices=True, ceil_mode=True),
        _shape,
    )
    POOLS[f"max{_n}d_dilation"] = (
        lambda m, n=_n: getattr(m, f"MaxPool{n}d")(2, 1, 1, dilation=2, return_indices=True),
        _shape,
    )
    POOLS[f"avg{_n}d"] = (lambda m, n=_n: getattr(m, f"AvgPool{n}d")(3, 2, 1), _shape)
    POOLS[f"avg{_n}d_ceil_exclude_pad"] = (
        lambda m, n=_n: getattr(m, f"AvgPool{n}d")(
            3, 2, 1, ceil_mode=True, count_include_pad=False
        ),
        _shape,
    )
    POOLS[f"adaptive_avg{_n}d"] = (
        lambda m, n=_n: getattr(m, f"AdaptiveAvgPool{n}d")((4, 3, 2)[:n] if n > 1 else 4),
        _shape,
    )
    POOLS[f"adaptive_max{_n}d"] = (
        lambda m, n=_n: getattr(m, f"AdaptiveMaxPool{n}d")((4, 3, 2)[:n] if n > 1 else 5, True),
        _shape,
    )
    POOLS[f"lp{_n}d"] = (lambda m, n=_n: getattr(m, f"LPPool{n}d")(2, 2, 1, ceil_mode=True), _shape)
POOLS["avg2d_divisor"] = (lambda m: m.AvgPool2d(2, 2, 1, ceil_mode=True, divisor_override=3), _S[2])
POOLS["avg3d_divisor"] = (lambda m: m.AvgPool3d((1, 2, 2), divisor_override=2), _S[3])
POOLS["adaptive_avg2d_none"] = (lambda m: m.AdaptiveAvgPool2d((None, 4)), _S[2])
POOLS["max2d_unbatched"] = (lambda m: m.MaxPool2d((2, 3), (1, 2), return_indices=True), (3, 5, 7))
POOLS["lp1d_p3"] = (lambda m: m.LPPool1d(3.0, 3, 2), _S[1])


@pytest.mark.parametrize("case", sorted(POOLS))
def test_pool_modules_match_torch(case):
    make, shape = POOLS[case]
    if case.startswith("lp"):  # x^p of negative inputs is undefined for a fractional p
        tm, fm = make(torch.nn), make(nn)
        assert repr(fm) == repr(tm)
        check(fm, tm, [np.abs(_arr(shape)) + 0.1])
    else:
        check_module(make, shape)


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_matches_torch_given_the_samples(nd):
    shape = (2, 3, 9, 8) if nd == 2 else (2, 2, 7, 8, 6)
    samples = np.random.default_rng(3).random((shape[0], shape[1], nd))
    kernel = (2, 3) if nd == 2 else (2, 3, 2)
    size = (5, 4) if nd == 2 else (4, 5, 3)
    mod = "FractionalMaxPool2d" if nd == 2 else "FractionalMaxPool3d"
    fm = getattr(nn, mod)(kernel, output_size=size, return_indices=True)
    tm = getattr(torch.nn, mod)(kernel, output_size=size, return_indices=True)
    fm._random_samples, tm._random_samples = flow.tensor(samples), torch.tensor(samples)
    check(fm, tm, [_arr(shape)])
    ratio = getattr(nn, mod)(2, output_ratio=0.5)(flow.tensor(_arr(shape)))
    assert tuple(ratio.shape[2:]) == tuple(s // 2 for s in shape[2:])


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_inverts_max_pool_like_torch(nd):
    x = _arr((2, 3) + (6, 4, 4)[:nd])
    tv, ti = getattr(TF, f"max_pool{nd}d")(torch.tensor(x), 2, return_indices=True)
    fv, fi = getattr(F, f"max_pool{nd}d")(flow.tensor(x), 2, return_indices=True)
    _close(fi, ti)
    size = [s + 1 for s in x.shape[2:]]
    tm, fm = getattr(torch.nn, f"MaxUnpool{nd}d")(2), getattr(nn, f"MaxUnpool{nd}d")(2)
    assert repr(fm) == repr(tm)
    check(lambda v: fm(v, fi, size), lambda v: tm(v, ti, size), [tv.numpy()])


PADS = {}
for _n in (1, 2, 3):
    _shape = _S[_n][:2] + tuple(min(s, 4) for s in _S[_n][2:])
    _amounts = (1, 2, 2, 0, 1, 3)[: 2 * _n]
    for _name in ("Reflection", "Replication", "Circular", "Zero"):
        PADS[f"{_name}Pad{_n}d"] = (
            lambda m, n=_n, k=_name, a=_amounts: getattr(m, f"{k}Pad{n}d")(a),
            _shape,
        )
    PADS[f"ConstantPad{_n}d"] = (lambda m, n=_n: getattr(m, f"ConstantPad{n}d")(2, 3.5), _shape)
PADS["ReflectionPad2d_unbatched_int"] = (lambda m: m.ReflectionPad2d(3), (2, 4, 5))
PADS["ZeroPad2d_negative"] = (lambda m: m.ZeroPad2d((-1, 2, 0, -2)), (1, 2, 4, 5))


@pytest.mark.parametrize("case", sorted(PADS))
def test_padding_modules_match_torch(case):
    make, shape = PADS[case]
    check_module(make, shape)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(2, 1), (1, -1, 2, 0), (-1, 2, 1, 1, 0, 2)])
def test_f_pad_modes_with_negative_amounts_match_torch(mode, pad):
    shape = (1, 2, 4, 5, 4)[: 2 + len(pad) // 2]
    check(lambda x: F.pad(x, pad, mode), lambda x: TF.pad(x, pad, mode), [_arr(shape)])


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda m: m.PixelShuffle(2), (2, 8, 3, 2)),
        (lambda m: m.PixelShuffle(3), (9, 2, 2)),
        (lambda m: m.PixelUnshuffle(2), (2, 1, 2, 4, 6)),
        (lambda m: m.ChannelShuffle(3), (2, 6, 3, 2)),
        (lambda m: m.Upsample(scale_factor=2, mode="nearest"), (1, 2, 3, 4)),
        (lambda m: m.Upsample(size=(5, 3, 4), mode="trilinear"), (1, 2, 3, 4, 2)),
        (lambda m: m.UpsamplingBilinear2d(scale_factor=1.5), (1, 2, 3, 4)),
        (lambda m: m.UpsamplingNearest2d(size=5), (1, 2, 3, 4)),
    ],
)
def test_vision_modules_match_torch(make, shape):
    check_module(make, shape)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d_matches_torch(mode, padding_mode, align_corners):
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    check(
        lambda x, g: F.grid_sample(x, g, **kw),
        lambda x, g: TF.grid_sample(x, g, **kw),
        [_arr((2, 2, 5, 4)), _arr((2, 3, 4, 2), seed=1) * 1.3],
    )


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_3d_matches_torch(mode, padding_mode):
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=False)
    check(
        lambda x, g: F.grid_sample(x, g, **kw),
        lambda x, g: TF.grid_sample(x, g, **kw),
        [_arr((1, 2, 4, 3, 3)), _arr((1, 2, 3, 2, 3), seed=1) * 1.3],
    )


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 2)])
def test_affine_grid_matches_torch(size, align_corners):
    nd = len(size) - 2
    check(
        lambda t: F.affine_grid(t, size, align_corners=align_corners),
        lambda t: TF.affine_grid(t, size, align_corners=align_corners),
        [_arr((2, nd, nd + 1))],
    )


@pytest.mark.parametrize(
    "fn, tfn, shape",
    [
        (
            lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
            lambda x: TF.max_pool2d(x, 3, 2, 1, ceil_mode=True),
            (2, 3, 6, 5),
        ),
        (lambda x: F.avg_pool3d(x, 2, 1, 1), lambda x: TF.avg_pool3d(x, 2, 1, 1), (1, 2, 3, 4, 3)),
        (
            lambda x: F.adaptive_avg_pool2d(x, 3),
            lambda x: TF.adaptive_avg_pool2d(x, 3),
            (1, 2, 7, 5),
        ),
        (
            lambda x: F.pad(x, (1, 2, 2, 1), "reflect"),
            lambda x: TF.pad(x, (1, 2, 2, 1), "reflect"),
            (1, 2, 4, 4),
        ),
    ],
)
def test_float32_spot_checks(fn, tfn, shape):
    check(fn, tfn, [_arr(shape)], dtype="float32", tol=1e-5)


def test_constant_pad_grows_an_empty_dimension_like_torch():
    check(
        lambda x: F.pad(x, (1, 1, 2, 0), value=2.0),
        lambda x: TF.pad(x, (1, 1, 2, 0), value=2.0),
        [_arr((2, 0, 3))],
    )


def test_pools_run_on_meta():
    x = flow.zeros(2, 3, 8, 8, device="meta")
    assert tuple(F.max_pool2d(x, 3, 2, 1, ceil_mode=True).shape) == (2, 3, 5, 5)
    assert tuple(F.avg_pool2d(x, 3, 2, 1, count_include_pad=False).shape) == (2, 3, 4, 4)
    assert tuple(F.pad(x, (1, 1, 2, 2), "reflect").shape) == (2, 3, 12, 10)


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: F.max_pool2d(flow.zeros(5, 5), 2), r"\[max_pool2d\].*3D or 4D.*\[5, 5\]"),
        (lambda: F.avg_pool3d(flow.zeros(1, 4, 4), 2), r"\[avg_pool3d\].*\[1, 4, 4\]"),
        (lambda: F.max_pool1d(flow.zeros(1, 1, 5), 3, 1, 2), r"\[max_pool1d\] pad should be"),
        (lambda: F.max_pool2d(flow.zeros(1, 1, 2, 2), 3), r"\[max_pool2d\].*too small"),
        (lambda: F.pad(flow.zeros(1, 2, 3), (3, 3), "reflect"), r"\[pad\] reflect.*size 3"),
        (lambda: F.pad(flow.zeros(1, 2, 3), (1, 1), "reflect", 2.0), r"\[pad\].*value"),
        (lambda: F.pad(flow.zeros(3), (1, 1), "replicate"), r"\[pad\].*1D input"),
        (
            lambda: F.pad(flow.zeros(1, 1, 3), (-1, 4), "circular"),
            r"\[pad\] circular.*more than once",
        ),
        (lambda: F.pixel_shuffle(flow.zeros(1, 5, 2, 2), 2), r"\[pixel_shuffle\].*\[1, 5, 2, 2\]"),
        (
            lambda: F.pixel_unshuffle(flow.zeros(1, 1, 3, 4), 2),
            r"\[pixel_unshuffle\].*\[1, 1, 3, 4\]",
        ),
        (lambda: F.channel_shuffle(flow.zeros(1, 5, 2, 2), 2), r"\[channel_shuffle\].*5"),
        (lambda: F.grid_sample(flow.zeros(1, 1, 3, 3), flow.zeros(1, 2, 2, 3)), r"\[grid_sample\]"),
        (lambda: F.affine_grid(flow.zeros(1, 2, 3), (2, 1, 3, 3)), r"\[affine_grid\].*\[1, 2, 3\]"),
        (
            lambda: F.fractional_max_pool2d(flow.zeros(1, 1, 4, 4), 2),
            r"output_size or an output_ratio",
        ),
        (lambda: F.adaptive_max_pool2d(flow.zeros(4), 2), r"\[adaptive_max_pool2d\].*\[4\]"),
        (
            lambda: F.max_unpool2d(flow.zeros(1, 1, 2, 2), flow.tensor([[[[0, 1], [2, 99]]]]), 2),
            r"\[max_unpool2d\].*invalid max index",
        ),
    ],
)
def test_errors_name_the_function_and_shapes(call, pattern):
    with pytest.raises((RuntimeError, ValueError, NotImplementedError), match=pattern):
        call()
