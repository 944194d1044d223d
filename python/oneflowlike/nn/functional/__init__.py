"""torch.nn.functional-style functions: argument normalisation over flow._C kernels."""

import math
import operator

import oneflowlike as flow

_REDUCTIONS = ("none", "mean", "sum")


def _pair(value, name):
    if isinstance(value, int):
        return (value, value)
    pair = tuple(value)
    if len(pair) == 1:
        return (pair[0], pair[0])
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise ValueError(f"{name} must be an int or a pair of ints, got {value}")
    return pair


def _reduction(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:  # the legacy pair of flags
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"{reduction} is not a valid value for reduction; use one of {_REDUCTIONS}"
        )
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


# ---- activations --------------------------------------------------------------------------


def relu(input, inplace=False):
    """``inplace`` is accepted for compatibility; the result is always a new tensor."""
    return flow._C.relu(input)


def relu6(input, inplace=False):
    return flow.clamp(input, 0.0, 6.0)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return flow.where(input > 0, input, input * negative_slope)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return flow._C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return flow._C.silu(input)


def sigmoid(input):
    return flow._C.sigmoid(input)


def tanh(input):
    return flow._C.tanh(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return flow._C.softmax(input, _softmax_dim(input.ndim) if dim is None else dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return flow._C.log_softmax(input, _softmax_dim(input.ndim) if dim is None else dim)


# ---- linear, embedding, dropout, attention -------------------------------------------------


def linear(input, weight, bias=None):
    return flow._C.linear(input, weight, bias)


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq, sparse unsupported")
    if padding_idx is not None:
        num = weight.shape[0]
        if not -num <= padding_idx < num:
            raise ValueError(f"embedding: padding_idx {padding_idx} out of range for {num} rows")
        padding_idx = padding_idx + num if padding_idx < 0 else padding_idx
    return flow._C.embedding(input, weight, padding_idx=padding_idx)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    return flow._C.dropout(input, p=p, training=training)


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None
):
    return flow._C.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attn_mask,
        dropout_p=dropout_p,
        is_causal=is_causal,
        scale=scale,
    )


# ---- normalisation -------------------------------------------------------------------------


def _shape_list(normalized_shape):
    if isinstance(normalized_shape, int):
        return [normalized_shape]
    return list(normalized_shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return flow._C.layer_norm(input, _shape_list(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return flow._C.group_norm(input, num_groups, weight, bias, eps)


def pad(input, pad, mode="constant", value=None):
    """PyTorch's F.pad, constant mode: `pad` gives (before, after) amounts from the last
    dimension backwards; negative amounts crop."""
    return flow._C.pad(input, list(pad), mode, value)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return flow._C.rms_norm(input, _shape_list(normalized_shape), weight, eps)


def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    if not training and (running_mean is None or running_var is None):
        raise ValueError("batch_norm: running_mean and running_var are required in eval mode")
    return flow._C.batch_norm(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )


def normalize(input, p=2.0, dim=1, eps=1e-12):
    if p == 2:
        norm = (input * input).sum(dim, keepdim=True).sqrt()
    else:
        norm = (flow.abs(input) ** p).sum(dim, keepdim=True) ** (1.0 / p)
    return input / flow.clamp(norm, min=eps)


# ---- convolution and pooling ---------------------------------------------------------------


def _pad_bottom_right(input, extra_h, extra_w):
    """Zero-pads one side, for 'same' convolutions whose total padding is odd."""
    n, c, h, w = tuple(input.shape)
    if extra_h:
        zeros = flow.zeros(n, c, extra_h, w, dtype=input.dtype, device=input.device)
        input = flow.cat([input, zeros], dim=2)
        h += extra_h
    if extra_w:
        zeros = flow.zeros(n, c, h, extra_w, dtype=input.dtype, device=input.device)
        input = flow.cat([input, zeros], dim=3)
    return input


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if padding == "valid":
        padding = (0, 0)
    elif padding == "same":
        if stride != (1, 1):
            raise ValueError("conv2d: padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for d, k in zip(dilation, tuple(weight.shape)[2:])]
        input = _pad_bottom_right(input, totals[0] % 2, totals[1] % 2)
        padding = (totals[0] // 2, totals[1] // 2)
    else:
        padding = _pair(padding, "padding")
    return flow._C.conv2d(input, weight, bias, stride, padding, dilation, groups)


def _check_pool_options(name, ceil_mode, **unsupported):
    if ceil_mode:
        raise NotImplementedError(f"{name}: ceil_mode=True is not supported")
    for key, value in unsupported.items():
        if value:
            raise NotImplementedError(f"{name}: {key}={value!r} is not supported")


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    _check_pool_options("max_pool2d", ceil_mode, return_indices=return_indices)
    if _pair(dilation, "dilation") != (1, 1):
        raise NotImplementedError("max_pool2d: dilation != 1 is not supported")
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] else _pair(stride, "stride")
    return flow._C.max_pool2d(input, kernel, stride, _pair(padding, "padding"))


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    _check_pool_options("avg_pool2d", ceil_mode, divisor_override=divisor_override)
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] else _pair(stride, "stride")
    return flow._C.avg_pool2d(
        input, kernel, stride, _pair(padding, "padding"), count_include_pad=count_include_pad
    )


def adaptive_avg_pool2d(input, output_size):
    """Supports output sizes that divide the input size (global pooling included)."""
    out_h, out_w = _pair(output_size, "output_size")
    h, w = tuple(input.shape)[-2:]
    out_h, out_w = out_h or h, out_w or w
    if (out_h, out_w) == (1, 1):
        return input.mean(-1, keepdim=True).mean(-2, keepdim=True)
    if h % out_h or w % out_w:
        raise NotImplementedError(
            f"adaptive_avg_pool2d: output {(out_h, out_w)} must divide input {(h, w)}"
        )
    kernel = (h // out_h, w // out_w)
    return flow._C.avg_pool2d(input, kernel, kernel, (0, 0), count_include_pad=True)


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


# ---- losses --------------------------------------------------------------------------------


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    if weight is not None:
        raise NotImplementedError("cross_entropy: class weights are not supported yet")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    return flow._C.cross_entropy(
        input,
        target,
        ignore_index=ignore_index,
        reduction=_reduction(reduction, size_average, reduce),
        label_smoothing=label_smoothing,
    )


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    if weight is not None:
        raise NotImplementedError("nll_loss: class weights are not supported yet")
    return flow._C.nll_loss(
        input,
        target,
        ignore_index=ignore_index,
        reduction=_reduction(reduction, size_average, reduce),
    )


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return flow._C.mse_loss(input, target, reduction=_reduction(reduction, size_average, reduce))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    loss = flow.abs(input - target)
    return _reduce(loss, _reduction(reduction, size_average, reduce))


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """Stable form: (1 - y) x + (1 + (w_pos - 1) y) (log(1 + e^-|x|) + max(-x, 0))."""
    softplus_neg = flow.log(1.0 + flow.exp(-flow.abs(input))) + flow.clamp(-input, min=0.0)
    if pos_weight is None:
        loss = (1.0 - target) * input + softplus_neg
    else:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(reduction, size_average, reduce))


def one_hot(tensor, num_classes=-1):
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1
    classes = flow.arange(num_classes, dtype=flow.int64, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(flow.int64)


# ---- the rest, one file per concern (torch.nn.functional's names) ----------------------------

from .activation import *  # noqa: E402,F401,F403
from .conv import *  # noqa: E402,F401,F403
from .distance import *  # noqa: E402,F401,F403
from .loss import *  # noqa: E402,F401,F403
from .normalization import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .sparse import *  # noqa: E402,F401,F403
from .vision import *  # noqa: E402,F401,F403
