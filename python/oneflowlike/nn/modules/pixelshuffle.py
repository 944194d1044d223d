"""torch.nn's pixelshuffle modules."""

from ..module import Module

__all__ = []
