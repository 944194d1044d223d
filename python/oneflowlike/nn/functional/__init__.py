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


# ---- convolution, pooling, padding, vision: conv.py, pooling.py, padding.py, vision.py -------


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
