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


# linear and bilinear in linear.py, the dropout family in dropout.py, embedding in sparse.py.
from .dropout import *  # noqa: E402,F401,F403
from .linear import *  # noqa: E402,F401,F403


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        # Grouped-query attention: each key/value head serves hq / hk query heads in turn.
        hq, hk = query.shape[-3], key.shape[-3]
        if hk != hq:
            if hk == 0 or hq % hk:
                raise RuntimeError(
                    f"[scaled_dot_product_attention] with enable_gqa the query's {hq} heads must "
                    f"be a multiple of the key's {hk} (query {tuple(query.shape)}, key "
                    f"{tuple(key.shape)})"
                )
            key = key.repeat_interleave(hq // hk, dim=-3)
            value = value.repeat_interleave(hq // value.shape[-3], dim=-3)
    return flow._C.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attn_mask,
        dropout_p=dropout_p,
        is_causal=is_causal,
        scale=scale,
    )


def load_balance(x, ranks, dim=2, inverse=False):
    """x with its sequence (dimension `dim`) in context parallelism's load-balanced order for
    `ranks` ranks, or (inverse=True) back in order: the sequence cut in 2 x ranks chunks, stored
    as chunks 0, 2 ranks - 1, 1, 2 ranks - 2, ..., so that split on the sequence over `ranks`
    ranks, rank r holds chunks r and 2 ranks - 1 - r and every rank's causal rows see as many
    keys. `flow._C.flash_attention(q, k, v, scale, True, balance=ranks)` masks by position on
    tensors in this order; positions (embeddings, rotary angles) are to be put in it too."""
    n = x.shape[dim]
    if ranks < 1 or n % (2 * ranks):
        raise ValueError(
            f"[load_balance] a sequence of {n} (dimension {dim} of {tuple(x.shape)}) does not cut "
            f"into 2 x {ranks} chunks"
        )
    chunk = n // (2 * ranks)
    chunks = [c for r in range(ranks) for c in (r, 2 * ranks - 1 - r)]
    order = [c * chunk + i for c in chunks for i in range(chunk)]
    if inverse:
        order = sorted(range(n), key=order.__getitem__)
    index = flow.tensor(order, dtype=flow.int64, device=x.device if not x.is_global else "cpu")
    if x.is_global:
        index = index.to_global(x.placement, [flow.sbp.broadcast] * len(x.sbp))
    return flow.index_select(x, dim, index)


# ---- normalisation -------------------------------------------------------------------------


# batch_norm, layer_norm, group_norm, rms_norm, normalize... in normalization.py.


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
