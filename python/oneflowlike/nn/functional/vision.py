"""torch.nn.functional's vision functions."""

import oneflowlike as flow

__all__ = []
