"""Parameter initialisation (mirrors torch.nn.init); every function fills in place, no grad."""

import math

import numpy as np

import oneflowlike as flow

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "trunc_normal_",
    "orthogonal_",
    "dirac_",
    "sparse_",
]


def _skip_on_meta(fill):
    """Meta tensors have no values to fill: every init function returns them unchanged."""

    def wrapper(tensor, *args, **kwargs):
        if tensor.device.type == "meta":
            return tensor
        return fill(tensor, *args, **kwargs)

    wrapper.__name__, wrapper.__doc__ = fill.__name__, fill.__doc__
    return wrapper


_LINEAR_FNS = {
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
}


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (as torch.nn.init.calculate_gain)."""
    if nonlinearity in _LINEAR_FNS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field = 1
    for size in tuple(tensor.shape)[2:]:
        receptive_field *= size
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


@_skip_on_meta
def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with flow.no_grad():
        tensor.uniform_(a, b, generator=generator)
    return tensor


@_skip_on_meta
def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with flow.no_grad():
        tensor.normal_(mean, std, generator=generator)
    return tensor


@_skip_on_meta
def constant_(tensor, val):
    with flow.no_grad():
        tensor.fill_(val)
    return tensor


def ones_(tensor):
    return constant_(tensor, 1.0)


@_skip_on_meta
def zeros_(tensor):
    with flow.no_grad():
        tensor.zero_()
    return tensor


@_skip_on_meta
def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with flow.no_grad():
        tensor.copy_(
            flow.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device)
        )
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


@_skip_on_meta
def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) truncated to [a, b] by resampling (rejection), then a final clamp."""
    with flow.no_grad():
        tensor.normal_(mean, std, generator=generator)
        for _ in range(16):
            outside = (tensor < a).float() + (tensor > b).float()
            if outside.sum().item() == 0:
                break
            fresh = flow.empty(*tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)
            fresh.normal_(mean, std, generator=generator)
            tensor.copy_(flow.where(outside > 0.5, fresh, tensor))
        tensor.clamp_(a, b)
    return tensor


@_skip_on_meta
def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix over the tensor flattened to (rows, rest), from the QR of a
    normal draw (torch.nn.init's recipe; the QR runs on the host, once, at initialisation)."""
    if tensor.ndim < 2:
        raise ValueError("[orthogonal_] only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows, cols = tensor.shape[0], tensor.numel() // tensor.shape[0]
    drawn = flow.randn(rows, cols, dtype=flow.float64, generator=generator).numpy()
    q, r = np.linalg.qr(drawn.T if rows < cols else drawn)
    q = q * np.sign(np.diag(r))  # makes the decomposition unique, as torch does
    q = q.T if rows < cols else q
    with flow.no_grad():
        tensor.copy_(flow.tensor(gain * q.reshape(tuple(tensor.shape))).to(tensor.dtype))
    return tensor


@_skip_on_meta
def dirac_(tensor, groups=1):
    """Zeros with a one at each kernel's centre for out channel i and in channel i (per group):
    a convolution that keeps its input's channels."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("[dirac_] only tensors with 3, 4, or 5 dimensions are supported")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups != 0:
        raise ValueError(
            f"[dirac_] dim 0 ({tensor.shape[0]}) must be divisible by groups ({groups})"
        )
    values = np.zeros(tuple(tensor.shape))
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1.0
    with flow.no_grad():
        tensor.copy_(flow.tensor(values).to(tensor.dtype))
    return tensor


@_skip_on_meta
def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Normal(0, std) values with a `sparsity` fraction of each column set to zero."""
    if tensor.ndim != 2:
        raise ValueError("[sparse_] only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    keep = np.ones((rows, cols))
    for c in range(cols):
        keep[flow.randperm(rows, generator=generator)[:zeros].numpy(), c] = 0.0
    with flow.no_grad():
        tensor.normal_(0.0, std, generator=generator)
        tensor.mul_(flow.tensor(keep).to(tensor.dtype))
    return tensor


def _deprecated(new):
    def old(*args, **kwargs):
        return new(*args, **kwargs)

    old.__name__ = new.__name__[:-1]
    old.__doc__ = f"Deprecated alias of {new.__name__} (torch.nn.init's old name)."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
