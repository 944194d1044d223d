"""torch.nn's rnn modules."""

from ..module import Module

__all__ = []
