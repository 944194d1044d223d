"""Small utilities (progress bars, activation checkpointing)."""

from . import checkpoint
from .progress import Progress, progress

__all__ = ["Progress", "progress"]
