"""torch.nn.functional's activation functions, as composites of flow ops.

Each ``inplace=True`` writes the result into ``input`` and returns ``input``, as torch does."""

import math
import warnings

import oneflowlike as flow

__all__ = [
    "celu",
    "celu_",
    "elu",
    "elu_",
    "gelu",
    "glu",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "log_softmax",
    "logsigmoid",
    "mish",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _write(input, result, inplace):
    """torch's in-place contract: the result lands in ``input``, which is returned."""
    if not inplace:
        return result
    input.copy_(result)
    return input


def _source(input, inplace):
    # An in-place op must not overwrite a tensor its own backward saved: compute from a copy.
    if inplace and flow.is_grad_enabled() and input.requires_grad:
        return input.clone()
    return input


def _softplus_stable(z):
    """log(1 + e^z) without overflow, with finite gradients everywhere."""
    return flow.log1p(flow.exp(-flow.abs(z))) + flow.clamp(z, min=0.0)


# ---- piecewise linear ------------------------------------------------------------------------


def _threshold(input, limit, value, inplace):
    x = _source(input, inplace)
    return _write(input, flow.where(x > limit, x, value), inplace)


def threshold(input, threshold, value, inplace=False):
    return _threshold(input, threshold, value, inplace)


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, True)


def relu(input, inplace=False):
    x = _source(input, inplace)
    return _write(input, flow._C.relu(x), inplace)


def relu_(input):
    return relu(input, inplace=True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError(
            f"hardtanh: min_val cannot be greater than max_val ({min_val} > {max_val})"
        )
    x = _source(input, inplace)
    # torch's gradient is zero on the boundaries themselves, which clamp's is not.
    inside = (x > min_val).logical_and(x < max_val)
    out = flow.where(inside, x, flow.clamp(x, min_val, max_val).detach())
    return _write(input, out, inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    x = _source(input, inplace)
    return _write(input, flow.where(x > 0, x, x * negative_slope), inplace)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def prelu(input, weight):
    """Slope ``weight`` per channel (dim 1; a 1-d input has one channel) or one shared slope."""
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(
            f"[prelu] Mismatch of parameter numbers and input channel size. Found parameter "
            f"numbers = {weight.numel()} and channel size = {channels} (input {tuple(input.shape)})"
        )
    if weight.numel() == 1:
        weight = weight.reshape([])
    elif input.ndim >= 2:
        weight = weight.reshape([channels] + [1] * (input.ndim - 2))
    return flow.where(input > 0, input, weight * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Training: a slope drawn from U(lower, upper) per element; eval: their mean."""
    if lower > upper:
        raise RuntimeError(
            f"[rrelu] Lower bound should be less than or equal to the upper bound, got "
            f"lower={lower}, upper={upper}"
        )
    x = _source(input, inplace)
    if training:
        slope = flow.rand_like(x.detach()) * (upper - lower) + lower
    else:
        slope = (lower + upper) / 2.0
    return _write(input, flow.where(x >= 0, x, x * slope), inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def hardshrink(input, lambd=0.5):
    return flow.where((input >= -lambd).logical_and(input <= lambd), 0.0, input)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"[softshrink] lambda must be greater or equal to 0, but found {lambd}")
    shrunk = flow.where(input > lambd, input - lambd, input + lambd)
    return flow.where((input >= -lambd).logical_and(input <= lambd), 0.0, shrunk)


def hardsigmoid(input, inplace=False):
    x = _source(input, inplace)
    return _write(input, hardtanh(x + 3.0, 0.0, 6.0) / 6.0, inplace)


def hardswish(input, inplace=False):
    x = _source(input, inplace)
    # torch's gradient at x = -3 and x = 3 is the middle piece's, x / 3 + 0.5.
    middle = x * (x + 3.0) / 6.0
    out = flow.where(x < -3.0, 0.0, flow.where(x <= 3.0, middle, x))
    return _write(input, out, inplace)


# ---- exponential family ----------------------------------------------------------------------


def elu(input, alpha=1.0, inplace=False):
    x = _source(input, inplace)
    # expm1 of the clamped input keeps the unused branch finite, so its gradient is 0, not nan.
    out = flow.where(x > 0, x, alpha * flow.expm1(flow.clamp(x, max=0.0)))
    return _write(input, out, inplace)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    x = _source(input, inplace)
    out = _SELU_SCALE * flow.where(x > 0, x, _SELU_ALPHA * flow.expm1(flow.clamp(x, max=0.0)))
    return _write(input, out, inplace)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("[celu] ZeroDivisionError: alpha must not be 0")
    x = _source(input, inplace)
    out = flow.where(x > 0, x, alpha * flow.expm1(flow.clamp(x, max=0.0) / alpha))
    return _write(input, out, inplace)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def softplus(input, beta=1.0, threshold=20.0):
    scaled = input * beta
    return flow.where(scaled > threshold, input, _softplus_stable(scaled) / beta)


def logsigmoid(input):
    return -_softplus_stable(-input)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return flow._C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    x = _source(input, inplace)
    return _write(input, flow._C.silu(x), inplace)


def mish(input, inplace=False):
    x = _source(input, inplace)
    return _write(input, x * flow.tanh(_softplus_stable(x)), inplace)


def sigmoid(input):
    return flow._C.sigmoid(input)


def tanh(input):
    return flow._C.tanh(input)


def tanhshrink(input):
    return input - flow.tanh(input)


def softsign(input):
    return input / (1.0 + flow.abs(input))


def glu(input, dim=-1):
    if input.ndim == 0:
        raise RuntimeError("[glu] glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(
            f"[glu] Halving dimension must be even, but dimension {dim % input.ndim} is size "
            f"{size} (input {tuple(input.shape)})"
        )
    a = input.narrow(dim, 0, size // 2)
    b = input.narrow(dim, size // 2, size // 2)
    return a * flow.sigmoid(b)


# ---- softmax family ----------------------------------------------------------------------------


def _softmax_dim(name, ndim):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return flow._C.softmax(input, dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return flow._C.softmax(-input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return flow._C.log_softmax(input, dim)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples Gumbel(0, 1) noise as -log(E), E ~ Exp(1); ``hard`` returns one-hot samples
    whose gradient is the soft sample's (straight-through)."""
    uniform = flow.clamp(flow.rand_like(logits.detach()), min=1e-20)
    gumbels = -flow.log(-flow.log(uniform))
    soft = flow._C.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    hard_sample = flow.zeros_like(logits).scatter(dim, index, 1.0)
    return hard_sample - soft.detach() + soft
