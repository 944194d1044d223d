"""torch.nn's distance modules."""

from ..module import Module

__all__ = []
