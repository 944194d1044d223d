"""torch.nn.functional's activation functions."""

import oneflowlike as flow

__all__ = []
