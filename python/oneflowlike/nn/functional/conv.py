"""torch.nn.functional's convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, conv_tbc, unfold,
fold. Everything lowers to the conv2d kernel and its adjoint (conv2d_input_grad): 1-d as 2-d
with a unit height, 3-d as one grouped 2-d convolution over depth slices gathered into channels."""

import oneflowlike as flow

from .padding import _index, _ntuple

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "fold",
    "unfold",
]


# ---- checks ------------------------------------------------------------------------------


def _shape(t):
    return list(t.shape)


def _check_rank(fn, input, nd):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"[{fn}] expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input, but got input "
            f"of size {_shape(input)}"
        )


def _check_conv(fn, input, weight, bias, groups, nd, transposed=False):
    _check_rank(fn, input, nd)
    if weight.ndim != nd + 2:
        raise RuntimeError(
            f"[{fn}] weight must be {nd + 2}-d, got weight of size {_shape(weight)} for input "
            f"{_shape(input)}"
        )
    if not isinstance(groups, int) or groups < 1:
        raise RuntimeError(f"[{fn}] groups must be a positive integer, got {groups!r}")
    channels = input.shape[1] if input.ndim == nd + 2 else input.shape[0]
    expected = weight.shape[0] if transposed else weight.shape[1] * groups
    if channels != expected:
        raise RuntimeError(
            f"[{fn}] given groups={groups}, weight of size {_shape(weight)}, expected input "
            f"{_shape(input)} to have {expected} channels, but got {channels} channels instead"
        )
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"[{fn}] weight of size {_shape(weight)}: {weight.shape[0]} is not divisible by "
            f"groups={groups}"
        )
    out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(
            f"[{fn}] bias of size {_shape(bias)} does not match the {out_channels} output "
            f"channels of weight {_shape(weight)}"
        )


def _batched(input, nd):
    """(input with a batch dimension, whether it came with one)."""
    return (input, True) if input.ndim == nd + 2 else (input.unsqueeze(0), False)


def _same_padding(fn, weight, stride, dilation, nd):
    """'same' as symmetric padding plus the odd extra on the right (as PyTorch pads)."""
    if any(s != 1 for s in stride):
        raise ValueError(f"[{fn}] padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(dilation, tuple(weight.shape)[2:])]
    return tuple(t // 2 for t in totals), [t % 2 for t in totals]


def _right_pad(input, extras):
    if not any(extras):
        return input
    amounts = []
    for e in reversed(extras):
        amounts += [0, e]
    return flow._C.pad(input, amounts, "constant", None)


# ---- forward convolutions ------------------------------------------------------------------


def _conv3d_2d(x, weight, bias, stride, padding, dilation, groups):
    """conv3d of batched x as one conv2d: the kD depth slices each output depth reads are
    gathered into channels (grouped as the weight's (groups, kD, C / groups) reshape)."""
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    o, cg, kd = weight.shape[0], weight.shape[1], weight.shape[2]
    sd, pd, dd = stride[0], padding[0], dilation[0]
    if pd:
        x = flow._C.pad(x, [0, 0, 0, 0, pd, pd], "constant", None)
    out_d = (d + 2 * pd - dd * (kd - 1) - 1) // sd + 1
    if out_d < 1:
        raise RuntimeError(
            f"[conv3d] input {_shape(x)} (depth padded by {pd}) is smaller than the weight "
            f"{_shape(weight)}'s depth {kd} dilated by {dd}"
        )
    idx = [od * sd + j * dd for od in range(out_d) for j in range(kd)]
    h, w = x.shape[3], x.shape[4]
    slices = x.index_select(2, _index(idx, x.device))  # (N, C, oD * kD, H, W)
    slices = slices.reshape(n, groups, c // groups, out_d, kd, h, w).permute(0, 3, 1, 4, 2, 5, 6)
    slices = slices.reshape(n * out_d, groups * kd * cg, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(o, kd * cg, weight.shape[3], weight.shape[4])
    y = flow._C.conv2d(slices, w2, bias, stride[1:], padding[1:], dilation[1:], groups)
    return y.reshape(n, out_d, o, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)


def _conv(fn, nd, input, weight, bias, stride, padding, dilation, groups):
    _check_conv(fn, input, weight, bias, groups, nd)
    stride = _ntuple(stride, nd, "stride", fn)
    dilation = _ntuple(dilation, nd, "dilation", fn)
    x, batched = _batched(input, nd)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            padding, extras = _same_padding(fn, weight, stride, dilation, nd)
            x = _right_pad(x, extras)
        else:
            raise ValueError(f"[{fn}] invalid padding string {padding!r}, use 'same' or 'valid'")
    else:
        padding = _ntuple(padding, nd, "padding", fn)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation) or any(p < 0 for p in padding):
        raise RuntimeError(
            f"[{fn}] stride {stride} and dilation {dilation} must be positive and padding "
            f"{padding} non-negative"
        )
    if nd == 1:
        y = flow._C.conv2d(
            x.unsqueeze(2),
            weight.unsqueeze(2),
            bias,
            (1, stride[0]),
            (0, padding[0]),
            (1, dilation[0]),
            groups,
        ).squeeze(2)
    elif nd == 2:
        y = flow._C.conv2d(x, weight, bias, stride, padding, dilation, groups)
    else:
        y = _conv3d_2d(x, weight, bias, stride, padding, dilation, groups)
    return y if batched else y.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


# ---- transposed convolutions ---------------------------------------------------------------


def _conv_transpose2d_raw(x, weight, stride, padding, dilation, groups, out_hw):
    """The adjoint of conv2d (conv2d_input_grad) producing spatial size out_hw."""
    attrs = {"stride": list(stride), "dilation": list(dilation), "groups": groups}
    full = [
        (i - 1) * s + d * (k - 1) + 1
        for i, s, d, k in zip(x.shape[2:], stride, dilation, weight.shape[2:])
    ]
    if all(o + 2 * p - f < s for o, p, f, s in zip(out_hw, padding, full, stride)):
        attrs.update(padding=list(padding), input_size=list(out_hw))
        return flow._C.dispatch("conv2d_input_grad", [x, weight], attrs)[0]
    # output_padding >= stride (allowed when dilation is larger) is beyond the adjoint's reach:
    # the unpadded result, cropped by the padding and zero-extended on the right
    attrs.update(padding=[0, 0], input_size=full)
    y = flow._C.dispatch("conv2d_input_grad", [x, weight], attrs)[0]
    amounts = []
    for f, o, p in reversed(list(zip(full, out_hw, padding))):
        amounts += [-p, o + p - f]
    return flow._C.pad(y, amounts, "constant", None)


def _conv_transpose3d_raw(x, weight, stride, padding, dilation, groups, out_size):
    """The adjoint of _conv3d_2d: conv2d's adjoint per depth slice, scattered back over depth."""
    n, cin, din = x.shape[0], x.shape[1], x.shape[2]
    cg, kd = weight.shape[1], weight.shape[2]
    sd, pd, dd = stride[0], padding[0], dilation[0]
    x2 = x.permute(0, 2, 1, 3, 4).reshape(n * din, cin, x.shape[3], x.shape[4])
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(cin, kd * cg, weight.shape[3], weight.shape[4])
    h, w = out_size[1], out_size[2]
    y = _conv_transpose2d_raw(x2, w2, stride[1:], padding[1:], dilation[1:], groups, (h, w))
    y = y.reshape(n, din, groups, kd, cg, h, w).permute(0, 2, 4, 1, 3, 5, 6)
    y = y.reshape(n, groups * cg, din * kd, h, w)
    idx = [od * sd + j * dd for od in range(din) for j in range(kd)]
    depth = max(out_size[0] + 2 * pd, idx[-1] + 1)
    out = flow.zeros(n, groups * cg, depth, h, w, dtype=y.dtype, device=y.device)
    out = out.index_add(2, _index(idx, y.device), y)
    return out.narrow(2, pd, out_size[0])


def _transposed_output_size(fn, x, weight, stride, padding, output_padding, dilation, nd, size):
    spatial = list(x.shape[2:])
    base = [
        (i - 1) * s - 2 * p + d * (k - 1) + 1
        for i, s, p, d, k in zip(spatial, stride, padding, dilation, weight.shape[2:])
    ]
    if size is None:
        out = [b + op for b, op in zip(base, output_padding)]
    else:
        size = list(size)[-nd:] if len(size) in (nd, nd + 2) else None
        if size is None:
            raise ValueError(f"[{fn}] output_size must have {nd} or {nd + 2} elements")
        for o, b, s, d in zip(size, base, stride, dilation):
            if not b <= o < b + max(s, d):
                raise ValueError(
                    f"[{fn}] requested an output size of {size}, but valid sizes range from "
                    f"{base} to {[b + max(s, d) - 1 for b, s, d in zip(base, stride, dilation)]} "
                    f"(for an input of {spatial[-nd:]})"
                )
        out = size
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError(
                f"[{fn}] output padding {tuple(output_padding)} must be smaller than either "
                f"stride {tuple(stride)} or dilation {tuple(dilation)}"
            )
    if any(o < 1 for o in out):
        raise RuntimeError(
            f"[{fn}] input {_shape(x)} with weight {_shape(weight)}, stride {tuple(stride)}, "
            f"padding {tuple(padding)} and dilation {tuple(dilation)} gives the output size "
            f"{out}, which is too small"
        )
    return out


def _conv_transpose(
    fn, nd, input, weight, bias, stride, padding, output_padding, groups, dilation, output_size
):
    _check_conv(fn, input, weight, bias, groups, nd, transposed=True)
    if isinstance(padding, str):
        raise ValueError(
            f"[{fn}] padding must be ints for transposed convolutions, got {padding!r}"
        )
    stride = _ntuple(stride, nd, "stride", fn)
    padding = _ntuple(padding, nd, "padding", fn)
    output_padding = _ntuple(output_padding, nd, "output_padding", fn)
    dilation = _ntuple(dilation, nd, "dilation", fn)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation) or any(p < 0 for p in padding):
        raise RuntimeError(
            f"[{fn}] stride {stride} and dilation {dilation} must be positive and padding "
            f"{padding} non-negative"
        )
    x, batched = _batched(input, nd)
    out = _transposed_output_size(
        fn, x, weight, stride, padding, output_padding, dilation, nd, output_size
    )
    if nd == 1:
        y = _conv_transpose2d_raw(
            x.unsqueeze(2),
            weight.unsqueeze(2),
            (1, stride[0]),
            (0, padding[0]),
            (1, dilation[0]),
            groups,
            (1, out[0]),
        ).squeeze(2)
    elif nd == 2:
        y = _conv_transpose2d_raw(x, weight, stride, padding, dilation, groups, out)
    else:
        y = _conv_transpose3d_raw(x, weight, stride, padding, dilation, groups, out)
    if bias is not None:
        y = y + bias.reshape([1, -1] + [1] * nd)
    return y if batched else y.squeeze(0)


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    return _conv_transpose(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
        dilation, None,
    )  # fmt: skip


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    return _conv_transpose(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
        dilation, None,
    )  # fmt: skip


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    return _conv_transpose(
        "conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
        dilation, None,
    )  # fmt: skip


def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution of a (time, batch, channels) input with a (k, C_in, C_out) weight."""
    if input.ndim != 3 or weight.ndim != 3:
        raise RuntimeError(
            f"[conv_tbc] input {_shape(input)} and weight {_shape(weight)} must both be 3-d"
        )
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(
            f"[conv_tbc] input {_shape(input)} has {input.shape[2]} channels but weight "
            f"{_shape(weight)} expects {weight.shape[1]}"
        )
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return y.permute(2, 0, 1)


# ---- unfold / fold (im2col / col2im) -------------------------------------------------------


def _window_index(size, kernel, stride, padding, dilation):
    """Output length and the (padded) positions each output's kernel taps read, o-major."""
    out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    return out, [o * stride + j * dilation for o in range(out) for j in range(kernel)]


def _fold_args(fn, kernel_size, dilation, padding, stride):
    return (
        _ntuple(kernel_size, 2, "kernel_size", fn),
        _ntuple(dilation, 2, "dilation", fn),
        _ntuple(padding, 2, "padding", fn),
        _ntuple(stride, 2, "stride", fn),
    )


def _fold_windows(fn, spatial, kernel, dilation, padding, stride, shape):
    outs, idxs = [], []
    for size, k, d, p, s in zip(spatial, kernel, dilation, padding, stride):
        if k < 1 or d < 1 or s < 1 or p < 0:
            raise RuntimeError(
                f"[{fn}] kernel_size {kernel}, dilation {dilation} and stride {stride} must be "
                f"positive and padding {padding} non-negative"
            )
        out, idx = _window_index(size, k, s, p, d)
        if out < 1:
            raise RuntimeError(
                f"[{fn}] the spatial size {tuple(spatial)} of input {shape} padded by {padding} "
                f"is smaller than kernel {kernel} dilated by {dilation}"
            )
        outs.append(out)
        idxs.append(idx)
    return outs, idxs


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C * kH * kW, L), the kernel taps of each sliding block."""
    if input.ndim not in (3, 4):
        raise NotImplementedError(
            f"[unfold] input of size {_shape(input)} is not supported: only 3-D (unbatched) or "
            f"4-D (batched) image tensors are"
        )
    kernel, dilation, padding, stride = _fold_args("unfold", kernel_size, dilation, padding, stride)
    x, batched = _batched(input, 2)
    n, c, h, w = tuple(x.shape)
    (oh, ow), (ih, iw) = _fold_windows(
        "unfold", (h, w), kernel, dilation, padding, stride, _shape(input)
    )
    if any(padding):
        x = flow._C.pad(x, [padding[1], padding[1], padding[0], padding[0]], "constant", None)
    cols = x.index_select(2, _index(ih, x.device)).index_select(3, _index(iw, x.device))
    cols = cols.reshape(n, c, oh, kernel[0], ow, kernel[1]).permute(0, 1, 3, 5, 2, 4)
    cols = cols.reshape(n, c * kernel[0] * kernel[1], oh * ow)
    return cols if batched else cols.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, unfold's adjoint: sums the (N, C * kH * kW, L) blocks into (N, C, H, W)."""
    if input.ndim not in (2, 3):
        raise NotImplementedError(
            f"[fold] input of size {_shape(input)} is not supported: only 2-D (unbatched) or "
            f"3-D (batched) inputs are"
        )
    size = _ntuple(output_size, 2, "output_size", "fold")
    kernel, dilation, padding, stride = _fold_args("fold", kernel_size, dilation, padding, stride)
    x = input if input.ndim == 3 else input.unsqueeze(0)
    n, ck, length = tuple(x.shape)
    kk = kernel[0] * kernel[1]
    if ck % kk:
        raise RuntimeError(
            f"[fold] expected the size of dimension 1 of input {_shape(input)} to be divisible by "
            f"the product of kernel_size {kernel}, but got {ck}"
        )
    (oh, ow), (ih, iw) = _fold_windows(
        "fold", size, kernel, dilation, padding, stride, _shape(input)
    )
    if oh * ow != length:
        raise RuntimeError(
            f"[fold] given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match "
            f"the number of sliding blocks {oh} * {ow} = {oh * ow}, but got input {_shape(input)}"
        )
    c = ck // kk
    hp, wp = size[0] + 2 * padding[0], size[1] + 2 * padding[1]
    cols = x.reshape(n, c, kernel[0], kernel[1], oh, ow).permute(0, 1, 4, 2, 5, 3)
    cols = cols.reshape(n, c, oh * kernel[0], ow * kernel[1])
    rows = flow.zeros(n, c, hp, ow * kernel[1], dtype=x.dtype, device=x.device)
    rows = rows.index_add(2, _index(ih, x.device), cols)
    out = flow.zeros(n, c, hp, wp, dtype=x.dtype, device=x.device)
    out = out.index_add(3, _index(iw, x.device), rows)
    if any(padding):
        out = out[:, :, padding[0] : padding[0] + size[0], padding[1] : padding[1] + size[1]]
    return out if input.ndim == 3 else out.squeeze(0)
