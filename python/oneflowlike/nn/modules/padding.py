"""torch.nn's padding modules."""

from ..module import Module

__all__ = []
