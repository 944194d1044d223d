"""MultiheadAttention (torch layout: in_proj_weight, in_proj_bias, out_proj)."""

__all__ = ["MultiheadAttention"]

import math

import oneflowlike as flow

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from . import _factory
from .linear import Linear


def _additive(mask, dtype):
    """Bool masks (True = not allowed) become 0 / -inf; float masks are already additive."""
    if mask.dtype == flow.bool:
        zeros = flow.zeros(*tuple(mask.shape), dtype=dtype, device=mask.device)
        return zeros.masked_fill(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise TypeError(
            f"MultiheadAttention: only bool and floating types of masks are supported, "
            f"got {mask.dtype}"
        )
    return mask.to(dtype) if mask.dtype != dtype else mask


def _causal_mask(tgt_len, src_len, device=None):
    rows = flow.arange(tgt_len, device=device).unsqueeze(1)
    cols = flow.arange(src_len, device=device).unsqueeze(0)
    return cols > rows


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for MultiheadAttention.out_proj's class (a plain Linear), kept for repr."""


class MultiheadAttention(Module):
    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        batch_first=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim {embed_dim} and num_heads {num_heads} must be positive")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} must be divisible by num_heads {num_heads}")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.add_zero_attn = add_zero_attn

        def param(*shape):
            return Parameter(_factory.empty(*shape, dtype=dtype, device=device))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = param(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = param(embed_dim, embed_dim)
            self.k_proj_weight = param(embed_dim, self.kdim)
            self.v_proj_weight = param(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = param(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, device=device, dtype=dtype
        )
        if add_bias_kv:
            self.bias_k = param(1, 1, embed_dim)
            self.bias_v = param(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _projection_weights(self):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            weights = [self.in_proj_weight.narrow(0, i * e, e) for i in range(3)]
        else:
            weights = [self.q_proj_weight, self.k_proj_weight, self.v_proj_weight]
        if self.in_proj_bias is None:
            return weights, [None] * 3
        return weights, [self.in_proj_bias.narrow(0, i * e, e) for i in range(3)]

    def _check_inputs(self, query, key, value):
        shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
        if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
            raise RuntimeError(
                f"MultiheadAttention: query, key and value must all be 2-D (unbatched) or 3-D "
                f"(batched), got {shapes}"
            )
        if query.shape[-1] != self.embed_dim:
            raise RuntimeError(
                f"MultiheadAttention: was expecting embedding dimension of {self.embed_dim}, "
                f"got {shapes}"
            )
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise RuntimeError(
                f"MultiheadAttention: expected key features {self.kdim} and value features "
                f"{self.vdim}, got {shapes}"
            )
        if tuple(key.shape[:-1]) != tuple(value.shape[:-1]):
            raise RuntimeError(
                f"MultiheadAttention: key's sequence and batch dims do not match value's, got "
                f"{shapes}"
            )

    def _split_heads(self, x):
        n, length, _ = tuple(x.shape)
        return x.reshape(n, length, self.num_heads, self.head_dim).transpose(1, 2)

    def _merged_mask(self, attn_mask, key_padding_mask, n, tgt_len, src_len, dtype):
        mask = None
        if attn_mask is not None:
            mask = _additive(attn_mask, dtype)
            if mask.dim() == 2 and tuple(mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {tuple(mask.shape)}, "
                    f"but should be {(tgt_len, src_len)}."
                )
            if mask.dim() == 3:
                expected = (n * self.num_heads, tgt_len, src_len)
                if tuple(mask.shape) != expected:
                    raise RuntimeError(
                        f"The shape of the 3D attn_mask is {tuple(mask.shape)}, "
                        f"but should be {expected}."
                    )
                mask = mask.reshape(n, self.num_heads, tgt_len, src_len)
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, src_len):
                raise RuntimeError(
                    f"key_padding_mask has shape {tuple(key_padding_mask.shape)}, "
                    f"expected {(n, src_len)}"
                )
            padding = _additive(key_padding_mask, dtype).reshape(n, 1, 1, src_len)
            mask = padding if mask is None else mask + padding
        return mask

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        self._check_inputs(query, key, value)
        batched = query.dim() == 3
        if not batched:  # (L, E): add a batch dimension of 1
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        n, tgt_len, _ = tuple(query.shape)
        src_len = key.shape[1]

        (w_q, w_k, w_v), (b_q, b_k, b_v) = self._projection_weights()
        q = self._split_heads(F.linear(query, w_q, b_q))
        k, v = F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)
        extra = 0  # key positions appended after the source: bias_k/bias_v, then a zero key
        if self.bias_k is not None:
            k = flow.cat([k, self.bias_k.expand(n, 1, self.embed_dim)], 1)
            v = flow.cat([v, self.bias_v.expand(n, 1, self.embed_dim)], 1)
            extra += 1
        if self.add_zero_attn:
            k = flow.cat([k, flow.zeros_like(k.narrow(1, 0, 1))], 1)
            v = flow.cat([v, flow.zeros_like(v.narrow(1, 0, 1))], 1)
            extra += 1
        k, v = self._split_heads(k), self._split_heads(v)

        causal_flag = is_causal and attn_mask is None
        if causal_flag and (need_weights or key_padding_mask is not None or extra):
            attn_mask, causal_flag = _causal_mask(tgt_len, src_len, q.device), False
        mask = self._merged_mask(attn_mask, key_padding_mask, n, tgt_len, src_len, q.dtype)
        if extra and mask is not None:  # the appended keys are never masked
            mask = F.pad(mask, (0, extra))
        dropout_p = self.dropout if self.training else 0.0

        weights = None
        if need_weights:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
            if mask is not None:
                scores = scores + mask
            attn = F.softmax(scores, dim=-1)
            if dropout_p > 0.0:
                attn = F.dropout(attn, dropout_p)
            out = attn @ v
            weights = attn.mean(1) if average_attn_weights else attn
        else:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal_flag
            )
        out = self.out_proj(out.transpose(1, 2).reshape(n, tgt_len, self.embed_dim))
        if not batched:
            out = out.squeeze(0)
            weights = weights.squeeze(0) if weights is not None else None
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights
