"""flow.signal: torch.signal's window functions (flow.signal.windows)."""

from . import windows

__all__ = ["windows"]
