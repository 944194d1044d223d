"""torch.nn.functional's pooling functions."""

import oneflowlike as flow

__all__ = []
