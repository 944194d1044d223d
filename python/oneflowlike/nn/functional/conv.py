"""torch.nn.functional's conv functions."""

import oneflowlike as flow

__all__ = []
