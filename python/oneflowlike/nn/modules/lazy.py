"""torch.nn's lazy modules."""

from ..module import Module

__all__ = []
