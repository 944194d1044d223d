"""torch.nn's transformer modules."""

from ..module import Module

__all__ = []
