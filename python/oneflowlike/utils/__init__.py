"""Small utilities (progress bars)."""

from .progress import Progress, progress

__all__ = ["Progress", "progress"]
