"""F.interpolate, F.upsample and nn.Upsample against PyTorch: every mode (nearest, nearest-exact,
linear, bilinear, bicubic, trilinear, area) with align_corners None/False/True where it applies,
output sizes given and scale factors given (upsampling, downsampling, non-integer factors,
per-dimension factors, recompute_scale_factor), float32 and float64, gradients, meta inputs,
and the errors (wrong rank for the mode, both or neither of size and scale_factor, align_corners
with a non-interpolating mode, non-positive sizes, antialias)."""

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn.functional as F
from _check import rng

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# mode -> the input ranks it takes
MODES = {
    "nearest": (3, 4, 5),
    "nearest-exact": (3, 4, 5),
    "area": (3, 4, 5),
    "linear": (3,),
    "bilinear": (4,),
    "bicubic": (4,),
    "trilinear": (5,),
}
INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
SPATIAL = {3: (7,), 4: (5, 7), 5: (4, 5, 3)}
# size / scale_factor arguments, by the number of spatial dimensions
RESIZES = [
    dict(size=12),
    dict(size=3),
    dict(size=1),
    dict(scale_factor=2),
    dict(scale_factor=0.5),
    dict(scale_factor=1.7),
    dict(scale_factor=0.6),
    dict(scale_factor=1.1),
    dict(scale_factor=2.3, recompute_scale_factor=True),
]
PER_DIM = {
    1: [dict(size=(9,)), dict(scale_factor=(1.5,))],
    2: [dict(size=(8, 4)), dict(size=(5, 7)), dict(scale_factor=(2.0, 0.5))],
    3: [dict(size=(6, 2, 5)), dict(scale_factor=(0.5, 1.5, 3.0))],
}


def _cases():
    for mode, ranks in MODES.items():
        for rank in ranks:
            aligns = (None, False, True) if mode in INTERPOLATING else (None,)
            for align in aligns:
                for kw in RESIZES + PER_DIM[rank - 2]:
                    yield mode, rank, align, kw


def _id(case):
    mode, rank, align, kw = case
    args = ",".join(f"{k}={v}" for k, v in kw.items())
    return f"{mode}-{rank}d-align{align}-{args}"


CASES = list(_cases())


def pair(shape, dtype=np.float32, seed=0):
    a = rng(seed).standard_normal(shape).astype(dtype)
    return flow.tensor(a), torch.tensor(a)


def close(ours, theirs, tol=1e-5):
    got, want = ours.detach().numpy(), theirs.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_matches_torch(case):
    mode, rank, align, kw = case
    x, tx = pair((2, 3) + SPATIAL[rank])
    close(
        F.interpolate(x, mode=mode, align_corners=align, **kw),
        TF.interpolate(tx, mode=mode, align_corners=align, **kw),
    )


def _torch_backward_is_not_its_adjoint(mode, rank, align, kw):
    """Where the output size is the input's (nearest: or twice it) but a scale_factor sets other
    coordinates, PyTorch's forward maps with 1 / scale_factor while its backward copies (nearest:
    halves) for 3-d and 5-d nearest and for bicubic: its gradient is not its forward's adjoint
    there. Ours is the adjoint of the forward, which matches PyTorch's."""
    if "scale_factor" not in kw or kw.get("recompute_scale_factor") or align:
        return False
    if not (mode == "nearest" and rank != 4 or mode == "bicubic"):
        return False
    factors = kw["scale_factor"]
    factors = factors if isinstance(factors, tuple) else (factors,) * (rank - 2)
    for n, f in zip(SPATIAL[rank], factors):
        out = int(np.floor(n * f))
        shortcuts = (n, 2 * n) if mode == "nearest" else (n,)
        if out in shortcuts and out / n != f:
            return True
    return False


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_gradient_matches_torch(case):
    mode, rank, align, kw = case
    if _torch_backward_is_not_its_adjoint(mode, rank, align, kw):
        pytest.skip("PyTorch's backward takes out == in as a copy here, unlike its forward")
    x, tx = pair((2, 3) + SPATIAL[rank], np.float64, seed=1)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    y = F.interpolate(x, mode=mode, align_corners=align, **kw)
    ty = TF.interpolate(tx, mode=mode, align_corners=align, **kw)
    g = rng(2).standard_normal(tuple(ty.shape))
    (y * flow.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    close(x.grad, tx.grad, tol=1e-10)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic", "area"])
@pytest.mark.parametrize("align", [None, True])
def test_float64_matches_torch(mode, align):
    if align is not None and mode not in INTERPOLATING:
        pytest.skip("align_corners is only for the interpolating modes")
    x, tx = pair((1, 2, 6, 5), np.float64, seed=3)
    for kw in (dict(size=(11, 3)), dict(scale_factor=1.3)):
        close(
            F.interpolate(x, mode=mode, align_corners=align, **kw),
            TF.interpolate(tx, mode=mode, align_corners=align, **kw),
            tol=1e-12,
        )


def test_nearest_copies_integer_tensors_exactly():
    a = rng(4).randint(0, 255, (1, 2, 3, 5)).astype(np.uint8)
    for kw in (dict(size=(7, 4)), dict(scale_factor=2), dict(scale_factor=0.7)):
        ours = F.interpolate(flow.tensor(a), mode="nearest", **kw)
        theirs = TF.interpolate(torch.tensor(a), mode="nearest", **kw)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_nearest_keeps_inf_and_nan():
    a = np.array([[[1.0, np.inf, -np.inf, np.nan]]], dtype=np.float32)
    ours = F.interpolate(flow.tensor(a), scale_factor=2, mode="nearest")
    theirs = TF.interpolate(torch.tensor(a), scale_factor=2, mode="nearest")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_upsample_module_and_aliases_match_torch():
    x, tx = pair((2, 3, 4, 6), seed=5)
    for kw in (
        dict(scale_factor=2, mode="nearest"),
        dict(size=(5, 9), mode="bilinear", align_corners=True),
        dict(scale_factor=(1.5, 0.5), mode="bicubic"),
    ):
        close(flow.nn.Upsample(**kw)(x), torch.nn.Upsample(**kw)(tx))
    close(
        flow.nn.UpsamplingNearest2d(scale_factor=3)(x),
        torch.nn.UpsamplingNearest2d(scale_factor=3)(tx),
    )
    close(
        flow.nn.UpsamplingBilinear2d(size=(7, 7))(x), torch.nn.UpsamplingBilinear2d(size=(7, 7))(tx)
    )
    close(
        F.upsample(x, size=(3, 3), mode="bilinear"), TF.upsample(tx, size=(3, 3), mode="bilinear")
    )
    m = flow.nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(m) == repr(torch.nn.Upsample(scale_factor=2, mode="bilinear"))


def test_upsample_module_gradient_matches_torch():
    x, tx = pair((1, 2, 3, 4), np.float64, seed=6)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    flow.nn.Upsample(scale_factor=2.5, mode="bilinear")(x).square().sum().backward()
    torch.nn.Upsample(scale_factor=2.5, mode="bilinear")(tx).square().sum().backward()
    close(x.grad, tx.grad, tol=1e-10)


def test_meta_input_gives_the_output_shape():
    x = flow.empty(2, 3, 5, 7, device="meta")
    y = F.interpolate(x, scale_factor=(2, 0.5), mode="bilinear")
    assert y.device.type == "meta" and tuple(y.shape) == (2, 3, 10, 3)
    y = F.interpolate(x, size=4, mode="nearest")
    assert y.device.type == "meta" and tuple(y.shape) == (2, 3, 4, 4)


@pytest.mark.parametrize(
    "kw,exc,match",
    [
        (dict(mode="bilinear", size=4), RuntimeError, "interpolate.*bilinear.*4-d.*\\(2, 3, 5\\)"),
        (dict(mode="trilinear", size=4), RuntimeError, "interpolate.*trilinear.*5-d"),
        (dict(mode="bicubic", size=4), RuntimeError, "interpolate.*bicubic.*4-d"),
        (dict(size=4, scale_factor=2), ValueError, "interpolate.*exactly one.*\\(2, 3, 5\\)"),
        (dict(), ValueError, "interpolate.*exactly one.*\\(2, 3, 5\\)"),
        (dict(size=4, align_corners=False), ValueError, "interpolate.*align_corners.*nearest"),
        (dict(size=4, mode="area", align_corners=True), ValueError, "interpolate.*align_corners"),
        (dict(size=0), ValueError, "interpolate.*\\(2, 3, 5\\).*greater than 0"),
        (dict(scale_factor=0.1), ValueError, "interpolate.*\\(2, 3, 5\\).*greater than 0"),
        (dict(size=(4, 4)), ValueError, "interpolate.*size.*\\(2, 3, 5\\)"),
        (dict(size=4, mode="cubic"), ValueError, "interpolate.*mode 'cubic'"),
        (
            dict(size=4, mode="linear", antialias=True),
            ValueError,
            "interpolate.*antialias.*bilinear and bicubic.*\\(2, 3, 5\\)",
        ),
        (dict(size=4, recompute_scale_factor=True), ValueError, "interpolate.*recompute"),
    ],
)
def test_errors_name_interpolate_and_the_shapes(kw, exc, match):
    x = flow.zeros(2, 3, 5)
    kw.setdefault("mode", "nearest")
    with pytest.raises(exc, match=match):
        F.interpolate(x, **kw)


def test_wrong_rank_raises_naming_interpolate():
    with pytest.raises(RuntimeError, match="interpolate.*linear.*3-d.*\\(1, 1, 4, 4\\)"):
        F.interpolate(flow.zeros(1, 1, 4, 4), size=4, mode="linear")
    with pytest.raises(ValueError, match="interpolate.*3-d, 4-d or 5-d.*\\(2, 3\\)"):
        F.interpolate(flow.zeros(2, 3), size=4)
    with pytest.raises(TypeError, match="interpolate.*floating.*int64"):
        F.interpolate(flow.zeros(1, 1, 4, dtype=flow.int64), size=8, mode="linear")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(3, 4), (5, 10), (13, 7), (16, 20)])
def test_antialias_matches_torch_in_values_and_gradients(mode, align_corners, size):
    # timm's resample_patch_embed resizes patches with antialias=True (its default)
    a = np.random.default_rng(7).standard_normal((2, 3, 8, 10)).astype(np.float32)
    x, tx = flow.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    kw = dict(size=size, mode=mode, align_corners=align_corners, antialias=True)
    y, ty = F.interpolate(x, **kw), TF.interpolate(tx, **kw)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    w = np.random.default_rng(8).standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * flow.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_hostile_sizes_and_scales_raise_naming_interpolate():
    x = flow.zeros(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match=r"\[interpolate\].*\(4, 2147483648\) weight.*too large"):
        F.interpolate(x, size=(2**31, 2**31), mode="bilinear")
    with pytest.raises(RuntimeError, match=r"\[interpolate\].*1099511627776 positions: too large"):
        F.interpolate(x, size=(2**40, 3))
    for bad in (float("inf"), float("nan"), -2.0):
        with pytest.raises(ValueError, match=r"\[interpolate\] scale_factor must be finite"):
            F.interpolate(x, scale_factor=bad)
