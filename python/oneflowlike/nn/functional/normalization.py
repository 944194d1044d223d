"""torch.nn.functional's normalization functions.

batch_norm, layer_norm, group_norm and rms_norm call their ops; instance_norm, local_response_norm
and normalize are composites of reductions, so they run on every kind of tensor (on a global one
the statistics are the whole logical tensor's)."""

import math

import oneflowlike as flow

from .distance import _vector_norm

__all__ = [
    "batch_norm",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "local_response_norm",
    "normalize",
    "rms_norm",
]


def _shape_list(normalized_shape):
    if isinstance(normalized_shape, int):
        return [normalized_shape]
    return list(normalized_shape)


def _values_per_channel(shape):
    return math.prod(shape) // shape[1] if len(shape) > 1 and shape[1] else 0


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
    shape = tuple(input.shape)
    if training and len(shape) >= 2 and _values_per_channel(shape) <= 1:
        raise ValueError(
            f"[batch_norm] expected more than 1 value per channel when training, got input size "
            f"{shape}"
        )
    if not training and (running_mean is None or running_var is None):
        raise ValueError("[batch_norm] running_mean and running_var are required in eval mode")
    return flow._C.batch_norm(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )


def _compute_dtype(dtype):
    return flow.float32 if dtype in (flow.float16, flow.bfloat16) else dtype


def _update_running(running, stat, momentum):
    """running = (1 - momentum) running + momentum stat, outside autograd."""
    with flow.no_grad():
        stat = stat.detach().to(running.dtype)
        running.mul_(1.0 - momentum).add_(stat * momentum)


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Each (sample, channel) normalised over its positions. The running statistics, when
    given, are updated with the batch average of the per-instance ones (unbiased variance), as
    PyTorch does by running batch norm on the (1, N*C, ...) view."""
    shape = tuple(input.shape)
    if len(shape) < 3:
        raise ValueError(
            f"[instance_norm] expected an input (N, C, *) with at least one spatial dim, got "
            f"{shape}"
        )
    c = shape[1]
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(
                f"[instance_norm] {name} of shape {tuple(t.shape)} does not match the {c} channels "
                f"of the input {shape}"
            )
    count = math.prod(shape[2:])
    if use_input_stats and count <= 1:
        raise ValueError(
            f"[instance_norm] expected more than 1 spatial element when training, got input size "
            f"{shape}"
        )
    axes = tuple(range(2, len(shape)))
    per_channel = (1, c) + (1,) * (len(shape) - 2)
    x = input.to(_compute_dtype(input.dtype))
    if use_input_stats:
        mu = x.mean(axes, keepdim=True)
        centered = x - mu
        var = (centered * centered).mean(axes, keepdim=True)
        if running_mean is not None:
            _update_running(running_mean, mu.mean(0).reshape(c), momentum)
        if running_var is not None:
            unbiased = var.mean(0).reshape(c) * (count / max(count - 1, 1))
            _update_running(running_var, unbiased, momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError(
                "[instance_norm] running_mean and running_var are required when use_input_stats "
                "is False"
            )
        centered = x - running_mean.to(x.dtype).reshape(per_channel)
        var = running_var.to(x.dtype).reshape(per_channel)
    y = centered * flow.rsqrt(var + eps)
    if weight is not None:
        y = y * weight.to(x.dtype).reshape(per_channel)
    if bias is not None:
        y = y + bias.to(x.dtype).reshape(per_channel)
    return y.to(input.dtype)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return flow._C.layer_norm(input, _shape_list(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return flow._C.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return flow._C.rms_norm(input, _shape_list(normalized_shape), weight, eps)


def _channel_window_sum(squares, before, after, size):
    """sum of squares[:, c - before : c + after + 1] for every channel c (zeros outside)."""
    shape = tuple(squares.shape)
    pad = [0, 0] * (len(shape) - 2) + [before, after]
    padded = flow._C.pad(squares, pad, "constant", 0.0)
    total = padded.narrow(1, 0, shape[1])
    for shift in range(1, size):
        total = total + padded.narrow(1, shift, shape[1])
    return total


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta."""
    if input.dim() < 3:
        raise ValueError(
            f"[local_response_norm] expected 3D or higher dimensionality input (got {input.dim()} "
            f"dimensions, shape {tuple(input.shape)})"
        )
    if input.numel() == 0:
        return input
    div = _channel_window_sum(input * input, size // 2, (size - 1) // 2, size) / size
    return input / (div * alpha + k) ** beta


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    if out is not None:
        raise NotImplementedError("normalize: the out= argument is not supported")
    norm = _vector_norm(input, p, dim, keepdim=True)
    return input / flow.clamp(norm, min=eps)
