"""torch.nn.functional's padding functions."""

import oneflowlike as flow

__all__ = []
