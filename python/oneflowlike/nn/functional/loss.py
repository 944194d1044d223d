"""torch.nn.functional's loss functions."""

import oneflowlike as flow

__all__ = []
