"""ATen's native_* functions and the integer-coded samplers as composites: native_batch_norm,
native_layer_norm and native_group_norm (output with the saved statistics),
native_dropout_backward, max_pool2d_with_indices_backward, grid_sampler_2d / grid_sampler_3d;
and nn.functional.multi_head_attention_forward with PyTorch's full signature."""

import math

import oneflowlike as flow

from . import _C

__all__ = [
    "native_batch_norm",
    "native_layer_norm",
    "native_group_norm",
    "native_dropout_backward",
    "max_pool2d_with_indices_backward",
    "grid_sampler_2d",
    "grid_sampler_3d",
]

_HALF = (_C.dtype.float16, _C.dtype.bfloat16)


def _compute(x):
    return x.to(_C.dtype.float32) if x.dtype in _HALF else x


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, save_mean, save_invstd): batch norm over all dimensions but 1. Training
    normalises with the batch statistics, returns them (mean and 1/sqrt(var + eps)) and updates
    the running ones in place (unbiased variance); eval uses the running ones and returns empty
    statistics."""
    shape = tuple(input.shape)
    if len(shape) < 2:
        raise RuntimeError(
            f"[native_batch_norm] input must be at least 2-d (N, C, ...), got {shape}"
        )
    c = shape[1]
    for name, t in (
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ):
        if t is not None and t.numel() != c:
            raise RuntimeError(
                f"[native_batch_norm] {name} should contain {c} elements not {t.numel()}"
            )
    per = (1, c) + (1,) * (len(shape) - 2)
    x = _compute(input)
    if training:
        axes = (0,) + tuple(range(2, len(shape)))
        mean = x.mean(axes)
        centered = x - mean.reshape(per)
        var = (centered * centered).mean(axes)
        invstd = flow.rsqrt(var + eps)
        count = input.numel() // max(c, 1)
        with flow.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(
                    mean.detach().to(running_mean.dtype) * momentum
                )
            if running_var is not None:
                unbiased = var.detach() * (count / max(count - 1, 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        y = centered * invstd.reshape(per)
        save_mean, save_invstd = mean.detach(), invstd.detach()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "[native_batch_norm] running_mean and running_var are needed in eval"
            )
        rm, rv = running_mean.to(x.dtype), running_var.to(x.dtype)
        y = (x - rm.reshape(per)) * flow.rsqrt(rv + eps).reshape(per)
        save_mean = flow.empty(0, dtype=x.dtype, device=input.device)
        save_invstd = flow.empty(0, dtype=x.dtype, device=input.device)
    y = _affine(y, weight, bias, per).to(input.dtype)
    return y, save_mean, save_invstd


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd), the statistics over the trailing normalized_shape dimensions kept
    as size-1 dimensions."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    shape = tuple(input.shape)
    axis = len(shape) - len(ns)
    if axis < 0 or shape[axis:] != ns:
        raise RuntimeError(
            f"[native_layer_norm] Given normalized_shape={list(ns)}, expected input with shape "
            f"[*, {', '.join(map(str, ns))}], but got input of size {list(shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(
                f"[native_layer_norm] {name} of shape {tuple(t.shape)} does not match "
                f"normalized_shape {ns}"
            )
    x = _compute(input)
    axes = tuple(range(axis, len(shape)))
    if input.numel() == 0:
        stat = flow.zeros(shape[:axis] + (1,) * len(ns), dtype=x.dtype, device=input.device)
        return input.clone(), stat, stat.clone()
    mean = x.mean(axes, keepdim=True)
    centered = x - mean
    rstd = flow.rsqrt((centered * centered).mean(axes, keepdim=True) + eps)
    y = _affine(centered * rstd, weight, bias, ns).to(input.dtype)
    return y, mean.detach(), rstd.detach()


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(output, mean, rstd) of group norm; mean and rstd are (N, group) and differentiable."""
    shape = tuple(input.shape)
    if input.numel() != N * C * HxW or (len(shape) > 1 and shape[:2] != (N, C)):
        raise RuntimeError(
            f"[native_group_norm] input of shape {shape} does not hold N={N} x C={C} x HxW={HxW}"
        )
    if group <= 0 or C % group:
        raise RuntimeError(
            f"[native_group_norm] Expected number of channels in input to be divisible by "
            f"num_groups, but got input of shape {list(shape)} and num_groups={group}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(
                f"[native_group_norm] {name} should contain {C} elements not {t.numel()}"
            )
    x = _compute(input).reshape(N, group, (C // group) * HxW)
    mean = x.mean(-1)
    centered = x - mean.unsqueeze(-1)
    rstd = flow.rsqrt((centered * centered).mean(-1) + eps)
    y = (centered * rstd.unsqueeze(-1)).reshape(shape)
    y = _affine(y, weight, bias, (1, C) + (1,) * (len(shape) - 2)).to(input.dtype)
    return y, _tied(mean, weight, bias), _tied(rstd, weight, bias)


def _tied(t, *others):
    """t, made to depend (with zero gradient) on the others that require grad: ATen marks every
    output of native_group_norm differentiable when any input is."""
    if not _C.is_grad_enabled() or t.requires_grad:
        return t
    for o in others:
        if o is not None and o.requires_grad:
            t = t + o.masked_fill(flow.ones_like(o, dtype=_C.dtype.bool), 0.0).sum()
    return t


def native_dropout_backward(grad_output, mask, scale):
    """grad_output * mask * scale: dropout's gradient given its keep mask."""
    if tuple(mask.shape) != tuple(grad_output.shape):
        raise RuntimeError(
            f"[native_dropout_backward] mask of shape {tuple(mask.shape)} does not match "
            f"grad_output of shape {tuple(grad_output.shape)}"
        )
    return grad_output * (mask.to(grad_output.dtype) * scale)


def max_pool2d_with_indices_backward(
    grad_output, input, kernel_size, stride, padding, dilation, ceil_mode, indices
):
    """max_pool2d's input gradient: each output's gradient added at the position its index
    names in its (H * W) plane. Zero gradient with respect to input, as PyTorch's."""
    if tuple(grad_output.shape) != tuple(indices.shape):
        raise RuntimeError(
            f"[max_pool2d_with_indices_backward] grad_output of shape "
            f"{tuple(grad_output.shape)} does not match indices of shape {tuple(indices.shape)}"
        )
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"[max_pool2d_with_indices_backward] expected a 3-d or 4-d input, got shape "
            f"{tuple(input.shape)}"
        )
    shape = tuple(input.shape)
    planes = math.prod(shape[:-2])
    # A zero tensor that depends on input, so the result is differentiable in input (zero).
    everywhere = flow.ones_like(input, dtype=_C.dtype.bool)
    base = input.masked_fill(everywhere, 0.0).reshape(planes, -1)
    index = indices.to(_C.dtype.int64).reshape(planes, -1)
    grad = base.scatter_add(1, index, grad_output.to(input.dtype).reshape(planes, -1))
    return grad.reshape(shape)


_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def _grid_sampler(name, nd, input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != nd + 2:
        raise RuntimeError(f"[{name}] expected a {nd + 2}-d input, got shape {tuple(input.shape)}")
    modes = _MODES[:2] if nd == 3 else _MODES
    if interpolation_mode not in range(len(modes)):
        raise RuntimeError(
            f"[{name}] interpolation_mode {interpolation_mode} is not one of "
            f"{dict(enumerate(modes))}"
        )
    if padding_mode not in range(len(_PADDINGS)):
        raise RuntimeError(
            f"[{name}] padding_mode {padding_mode} is not one of {dict(enumerate(_PADDINGS))}"
        )
    return flow.nn.functional.grid_sample(
        input, grid, _MODES[interpolation_mode], _PADDINGS[padding_mode], bool(align_corners)
    )


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample on 4-d input with ATen's integer codes: interpolation 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection."""
    return _grid_sampler(
        "grid_sampler_2d", 2, input, grid, interpolation_mode, padding_mode, align_corners
    )


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample on 5-d input (interpolation 0 bilinear, 1 nearest)."""
    return _grid_sampler(
        "grid_sampler_3d", 3, input, grid, interpolation_mode, padding_mode, align_corners
    )
