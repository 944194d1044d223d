"""torch.nn.functional's vision functions: pixel_shuffle / pixel_unshuffle / channel_shuffle
(reshapes), interpolate and its upsample aliases (the interpolate kernel), affine_grid and
grid_sample (gathers of the input at the grid's neighbours, weighted as ATen weights them)."""

import math
import operator

import oneflowlike as flow

__all__ = [
    "affine_grid",
    "channel_shuffle",
    "grid_sample",
    "interpolate",
    "native_channel_shuffle",
    "pixel_shuffle",
    "pixel_unshuffle",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]


# ---- shuffles ------------------------------------------------------------------------------


def _factor(fn, value, what):
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"[{fn}] {what} must be an int, got {value!r}") from None
    if value < 1:
        raise RuntimeError(f"[{fn}] {what} must be greater than 0, got {value}")
    return value


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = _factor("pixel_shuffle", upscale_factor, "upscale_factor")
    if input.ndim < 3:
        raise RuntimeError(
            f"[pixel_shuffle] expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s) {list(input.shape)}"
        )
    *batch, c, h, w = tuple(input.shape)
    if c % (r * r):
        raise RuntimeError(
            f"[pixel_shuffle] expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input {list(input.shape)} has {c} channels and "
            f"upscale_factor {r}"
        )
    nb = len(batch)
    x = input.reshape(batch + [c // (r * r), r, r, h, w])
    x = x.permute(list(range(nb + 1)) + [nb + 3, nb + 1, nb + 4, nb + 2])
    return x.reshape(batch + [c // (r * r), h * r, w * r])


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = _factor("pixel_unshuffle", downscale_factor, "downscale_factor")
    if input.ndim < 3:
        raise RuntimeError(
            f"[pixel_unshuffle] expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s) {list(input.shape)}"
        )
    *batch, c, h, w = tuple(input.shape)
    if h % r or w % r:
        raise RuntimeError(
            f"[pixel_unshuffle] expects height and width of input {list(input.shape)} to be "
            f"divisible by downscale_factor {r}"
        )
    nb = len(batch)
    x = input.reshape(batch + [c, h // r, r, w // r, r])
    x = x.permute(list(range(nb + 1)) + [nb + 2, nb + 4, nb + 1, nb + 3])
    return x.reshape(batch + [c * r * r, h // r, w // r])


def channel_shuffle(input, groups):
    """(N, g * k, *) -> channels reordered as (k, g): the transpose of a (g, k) grouping."""
    g = _factor("channel_shuffle", groups, "number of groups")
    if input.ndim < 3:
        raise RuntimeError(
            f"[channel_shuffle] expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s) {list(input.shape)}"
        )
    n, c, *rest = tuple(input.shape)
    if c % g:
        raise RuntimeError(
            f"[channel_shuffle] number of channels {c} of input {list(input.shape)} must be "
            f"divisible by groups {g}"
        )
    x = input.reshape([n, g, c // g] + rest).transpose(1, 2)
    return x.reshape([n, c] + rest)


native_channel_shuffle = channel_shuffle


# ---- interpolate -----------------------------------------------------------------------------


_INTERPOLATE_MODES = (
    "nearest",
    "nearest-exact",
    "linear",
    "bilinear",
    "bicubic",
    "trilinear",
    "area",
)


def _spatial_tuple(value, n, what, input_shape):
    """value for each of the n spatial dimensions (one value, or a sequence of n)."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(
                f"[interpolate] {what} {tuple(value)} has {len(value)} entries for the {n} spatial "
                f"dimensions of the input {input_shape}"
            )
        return tuple(value)
    return (value,) * n


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """torch.nn.functional.interpolate: resamples the spatial dimensions of (N, C, ...) input.

    The output size and the scales are resolved here as PyTorch resolves them (a scale_factor
    gives floor(in * scale_factor) and, unless recompute_scale_factor, is the scale the
    coordinates use); flow._C.interpolate builds the weights with ATen's arithmetic."""
    shape = tuple(input.shape)
    if mode not in _INTERPOLATE_MODES:
        raise ValueError(
            f"[interpolate] mode '{mode}' is not one of {', '.join(_INTERPOLATE_MODES)}"
        )
    if len(shape) not in (3, 4, 5):
        raise ValueError(
            f"[interpolate] expects a 3-d, 4-d or 5-d input (N, C, spatial...), got {shape} "
            f"for mode '{mode}'"
        )
    n = len(shape) - 2
    if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError(
            f"[interpolate] align_corners can only be set with the interpolating modes (linear, "
            f"bilinear, bicubic, trilinear), not with mode '{mode}' (input {shape})"
        )
    align_corners = bool(align_corners)
    if antialias and (mode not in ("bilinear", "bicubic") or len(shape) != 4):
        raise ValueError(
            f"[interpolate] antialias=True is for the bilinear and bicubic modes of a 4-d input, "
            f"got mode '{mode}' and input {shape}"
        )
    if (size is None) == (scale_factor is None):
        raise ValueError(
            f"[interpolate] give exactly one of size and scale_factor (input {shape}), got "
            f"size={size} and scale_factor={scale_factor}"
        )
    if size is not None:
        if recompute_scale_factor:
            raise ValueError(
                f"[interpolate] recompute_scale_factor is not meaningful with an explicit size "
                f"(input {shape}, size {size})"
            )
        out = _spatial_tuple(size, n, "size", shape)
        try:
            out = tuple(operator.index(v) for v in out)
        except TypeError:
            raise TypeError(
                f"[interpolate] size must be ints, got {size} (input {shape})"
            ) from None
        scales = (None,) * n
    else:
        scales = tuple(float(s) for s in _spatial_tuple(scale_factor, n, "scale_factor", shape))
        if not all(math.isfinite(s) and s > 0 for s in scales):
            raise ValueError(
                f"[interpolate] scale_factor must be finite and positive, got {scale_factor} "
                f"(input {shape})"
            )
        out = tuple(int(math.floor(float(shape[i + 2]) * scales[i])) for i in range(n))
        if recompute_scale_factor or mode == "area":
            scales = (None,) * n
    if any(v <= 0 for v in out) or any(v <= 0 for v in shape[2:]):
        raise ValueError(
            f"[interpolate] input {shape} and output size {out}: spatial sizes must be greater "
            f"than 0"
        )
    scales = scales + (None,) * (3 - n)
    return flow._C.interpolate(input, list(out), mode, align_corners, *scales, bool(antialias))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """torch.nn.functional.upsample: the old name of interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- affine_grid and grid_sample ---------------------------------------------------------------


def _base_coords(steps, align_corners, dtype, device):
    """ATen's linspace_from_neg_one: pixel centres in [-1, 1] (corners when align_corners)."""
    if steps <= 1:
        return flow.zeros(max(steps, 1), dtype=dtype, device=device)[:steps]
    line = flow.linspace(-1.0, 1.0, steps, dtype=dtype, device=device)
    return line if align_corners else line * ((steps - 1) / steps)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, *spatial, nd) of the affine maps theta (N, nd, nd + 1)."""
    align_corners = bool(align_corners)
    size = [operator.index(s) for s in size]
    nd = len(size) - 2
    if nd not in (2, 3):
        raise NotImplementedError(
            f"[affine_grid] only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if not theta.is_floating_point():
        raise ValueError(f"[affine_grid] expects theta to be floating point, got {theta.dtype}")
    if tuple(theta.shape) != (size[0], nd, nd + 1):
        raise ValueError(
            f"[affine_grid] expected a batch of {nd}D affine matrices of shape "
            f"N x {nd} x {nd + 1} for size {size}, got theta of shape {list(theta.shape)}"
        )
    if min(size) <= 0:
        raise ValueError(f"[affine_grid] expected non-zero, positive output size, got {size}")
    spatial = size[2:]
    dt, dev = theta.dtype, theta.device
    # coordinates in (x, y[, z]) order: x runs along the last spatial dimension
    axes = [_base_coords(s, align_corners, dt, dev) for s in reversed(spatial)]
    columns = []
    for i, line in enumerate(axes):
        shape = [1] * nd
        shape[nd - 1 - i] = spatial[nd - 1 - i]
        columns.append(line.reshape(shape).expand(spatial))
    columns.append(flow.ones(spatial, dtype=dt, device=dev))
    base = flow.stack(columns, dim=-1).reshape(1, -1, nd + 1)
    grid = flow.matmul(base, theta.transpose(1, 2))
    return grid.reshape([size[0]] + spatial + [nd])


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    coord = flow.abs(coord - low)
    flips = flow.floor(coord / span)
    extra = coord - span * flips
    odd = (flips - 2 * flow.floor(flips / 2)) > 0.5
    return flow.where(odd, span - extra + low, extra + low)


def _apply_padding(coord, size, padding_mode, align_corners):
    if padding_mode == "border":
        return flow.clamp(coord, 0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return flow.clamp(coord, 0, size - 1)
    return coord


class _Sampler:
    """Reads input (N, C, *spatial) at integer positions (each (N, *out)), zero outside."""

    def __init__(self, input):
        self.n, self.c = input.shape[0], input.shape[1]
        self.spatial = list(input.shape[2:])
        self.flat = input.reshape(self.n, self.c, -1)

    def read(self, positions):
        inside, flat = None, None
        for pos, size, stride in zip(positions, self.spatial, self._strides()):
            ok = (pos >= 0).logical_and(pos < size)
            inside = ok if inside is None else inside.logical_and(ok)
            term = flow.clamp(pos, 0, size - 1) * stride
            flat = term if flat is None else flat + term
        out_shape = list(flat.shape[1:])
        index = flat.reshape(self.n, 1, -1).expand(self.n, self.c, flat[0].numel())
        values = self.flat.gather(2, index).reshape([self.n, self.c] + out_shape)
        return flow.where(inside.unsqueeze(1), values, flow.zeros_like(values))

    def _strides(self):
        return [math.prod(self.spatial[i + 1 :]) for i in range(len(self.spatial))]


def _cubic_weights(t):
    """ATen's cubic convolution coefficients (A = -0.75) for the 4 taps around t in [0, 1)."""
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDING = ("zeros", "border", "reflection")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples input (N, C, *spatial) at grid (N, *out, nd), grid's last axis in (x, y[, z])."""
    if mode not in _GRID_MODES:
        raise ValueError(
            f"[grid_sample] expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _GRID_PADDING:
        raise ValueError(
            f"[grid_sample] expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    nd = input.ndim - 2
    if nd not in (2, 3) or grid.ndim != input.ndim:
        raise RuntimeError(
            f"[grid_sample] expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(input.shape)} and grid with sizes "
            f"{list(grid.shape)}"
        )
    if grid.shape[0] != input.shape[0] or grid.shape[-1] != nd:
        raise RuntimeError(
            f"[grid_sample] expected grid of shape (N, *out, {nd}) with N = {input.shape[0]} "
            f"for input {list(input.shape)}, but got grid {list(grid.shape)}"
        )
    align_corners = bool(align_corners)
    sampler = _Sampler(input)
    spatial = sampler.spatial
    # per spatial dimension (in input order), the grid's coordinate in pixels
    coords = [_unnormalize(grid[..., nd - 1 - i], spatial[i], align_corners) for i in range(nd)]
    if mode == "bicubic":
        return _bicubic(sampler, coords, padding_mode, align_corners)
    coords = [_apply_padding(x, s, padding_mode, align_corners) for x, s in zip(coords, spatial)]
    if mode == "nearest":
        return sampler.read([flow.round(x).to(flow.int64) for x in coords])
    lows = [flow.floor(x) for x in coords]
    fracs = [x - low for x, low in zip(coords, lows)]
    lows = [low.to(flow.int64) for low in lows]
    out = None
    for corner in range(2**nd):
        bits = [(corner >> (nd - 1 - i)) & 1 for i in range(nd)]
        weight = None
        for b, f in zip(bits, fracs):
            w = f if b else 1 - f
            weight = w if weight is None else weight * w
        term = sampler.read([low + b for low, b in zip(lows, bits)]) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _bicubic(sampler, coords, padding_mode, align_corners):
    """Cubic convolution over the 4 ** nd taps around each point (bicubic, and tricubic for 5-d
    input), each tap moved by the padding mode on its own as ATen's get_value_bounded does."""
    dtype = coords[0].dtype
    lows = [flow.floor(x) for x in coords]
    weights = [_cubic_weights(x - low) for x, low in zip(coords, lows)]
    lows = [low.to(flow.int64) for low in lows]

    def tap(pos, size):
        if padding_mode == "zeros":
            return pos
        return _apply_padding(pos.to(dtype), size, padding_mode, align_corners).to(flow.int64)

    taps = [[tap(low - 1 + i, size) for i in range(4)] for low, size in zip(lows, sampler.spatial)]
    out = None
    for flat in range(4 ** len(coords)):
        digits = [(flat // 4 ** (len(coords) - 1 - d)) % 4 for d in range(len(coords))]
        weight = None
        for d, i in enumerate(digits):
            weight = weights[d][i] if weight is None else weight * weights[d][i]
        term = sampler.read([taps[d][i] for d, i in enumerate(digits)]) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out
