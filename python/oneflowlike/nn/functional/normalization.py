"""torch.nn.functional's normalization functions."""

import oneflowlike as flow

__all__ = []
