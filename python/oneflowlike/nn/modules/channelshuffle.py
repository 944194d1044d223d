"""torch.nn's channelshuffle modules."""

from ..module import Module

__all__ = []
