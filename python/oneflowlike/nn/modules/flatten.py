"""Flatten (merges dims start_dim..end_dim into one) and Unflatten (splits one dim)."""

__all__ = ["Flatten", "Unflatten"]

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
                f"Flatten: start_dim {self.start_dim} comes after end_dim {self.end_dim} for "
                f"input of shape {shape}"
            )
        merged = 1
        for size in shape[start : end + 1]:
            merged *= size
        return input.reshape(*shape[:start], merged, *shape[end + 1 :])

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dimension `dim` into `unflattened_size` (one entry may be -1)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, str):
            raise NotImplementedError("Unflatten: named dimensions are not supported")
        if not isinstance(dim, int):
            raise TypeError(f"invalid type of dim: {type(dim).__name__}, expected int")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                f"unflattened_size must be tuple of ints, but found type "
                f"{type(unflattened_size).__name__}"
            )
        for i, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(
                    f"unflattened_size must be tuple of ints, but found element of type "
                    f"{type(size).__name__} at pos {i}"
                )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, tuple(self.unflattened_size))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
