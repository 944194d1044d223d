"""torch.nn's fold modules."""

from ..module import Module

__all__ = []
