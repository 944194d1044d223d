"""Embedding (a lookup table of num_embeddings vectors) and EmbeddingBag (sums, means or maxima
of bags of them)."""

__all__ = ["Embedding", "EmbeddingBag"]

import oneflowlike as flow

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from . import _factory


def _padding_index(padding_idx, num_embeddings):
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(
            f"Padding_idx must be within num_embeddings, got padding_idx {padding_idx} for "
            f"{num_embeddings} embeddings"
        )
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _table(cls, num_embeddings, embedding_dim, _weight, _freeze, dtype, device):
    if _weight is None:
        weight = _factory.empty(num_embeddings, embedding_dim, dtype=dtype, device=device)
        return Parameter(weight, requires_grad=not _freeze), True
    if tuple(_weight.shape) != (num_embeddings, embedding_dim):
        raise ValueError(
            f"{cls}: Shape of weight {tuple(_weight.shape)} does not match num_embeddings and "
            f"embedding_dim ({num_embeddings}, {embedding_dim})"
        )
    return Parameter(_weight, requires_grad=not _freeze), False


def _zero_padding_row(weight, padding_idx):
    if padding_idx is not None:
        with flow.no_grad():
            weight.narrow(0, padding_idx, 1).fill_(0)


class Embedding(Module):
    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        _weight=None,
        _freeze=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if sparse:
            raise NotImplementedError("Embedding: sparse gradients (sparse=True) are not supported")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.weight, fresh = _table(
            "Embedding", num_embeddings, embedding_dim, _weight, _freeze, dtype, device
        )
        if fresh:
            self.reset_parameters()

    def reset_parameters(self):
        init.normal_(self.weight)
        _zero_padding_row(self.weight, self.padding_idx)

    def forward(self, input):
        return F.embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self):
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            text += ", sparse=True"
        return text

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
    ):
        if embeddings.dim() != 2:
            raise ValueError(
                f"Embeddings parameter is expected to be 2-dimensional, got "
                f"{tuple(embeddings.shape)}"
            )
        rows, cols = tuple(embeddings.shape)
        return cls(
            rows,
            cols,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
            _weight=embeddings,
            _freeze=freeze,
        )


class EmbeddingBag(Module):
    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        _weight=None,
        include_last_offset=False,
        padding_idx=None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if sparse:
            raise NotImplementedError(
                "EmbeddingBag: sparse gradients (sparse=True) are not supported"
            )
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got {mode!r}")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        self.weight, fresh = _table(
            "EmbeddingBag", num_embeddings, embedding_dim, _weight, False, dtype, device
        )
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        if fresh:
            self.reset_parameters()

    def reset_parameters(self):
        init.normal_(self.weight)
        _zero_padding_row(self.weight, self.padding_idx)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self):
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        text += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        include_last_offset=False,
        padding_idx=None,
    ):
        if embeddings.dim() != 2:
            raise ValueError(
                f"Embeddings parameter is expected to be 2-dimensional, got "
                f"{tuple(embeddings.shape)}"
            )
        rows, cols = tuple(embeddings.shape)
        bag = cls(
            rows,
            cols,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            _weight=embeddings,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag
