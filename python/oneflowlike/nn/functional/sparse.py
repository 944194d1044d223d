"""torch.nn.functional's sparse functions."""

import oneflowlike as flow

__all__ = []
