"""torch.nn.functional's distance functions."""

import oneflowlike as flow

__all__ = []
