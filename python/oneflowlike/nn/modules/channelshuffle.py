"""ChannelShuffle."""

__all__ = ["ChannelShuffle"]

from .. import functional as F
from ..module import Module


class ChannelShuffle(Module):
    """Splits the channels into `groups` groups and interleaves them."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
