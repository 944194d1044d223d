"""Flatten: merges dims start_dim..end_dim into one."""

__all__ = ["Flatten"]

from ..module import Module


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        shape = tuple(input.shape)
        if not shape:
            return input.reshape(1)
        start = self.start_dim % len(shape)
        end = self.end_dim % len(shape)
        if start > end:
            raise ValueError(
                f"Flatten: start_dim {self.start_dim} comes after end_dim {self.end_dim}"
            )
        merged = 1
        for size in shape[start : end + 1]:
            merged *= size
        return input.reshape(*shape[:start], merged, *shape[end + 1 :])

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
