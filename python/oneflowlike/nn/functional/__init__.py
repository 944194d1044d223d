"""torch.nn.functional-style functions: argument normalisation over flow._C kernels."""

import math
import operator

import oneflowlike as flow

def _pair(value, name):
    if isinstance(value, int):
        return (value, value)
    pair = tuple(value)
    if len(pair) == 1:
        return (pair[0], pair[0])
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise ValueError(f"{name} must be an int or a pair of ints, got {value}")
    return pair


# ---- activations: activation.py, losses: loss.py ------------------------------------------------


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


# ---- encoding -----------------------------------------------------------------------------------


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
