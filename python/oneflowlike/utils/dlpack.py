"""DLPack exchange, as torch.utils.dlpack: zero-copy with numpy, PyTorch and any library that
speaks DLPack, for CPU tensors of numpy's dtypes (Tensor.__dlpack__ exports through the tensor's
numpy view; CUDA memory and bfloat16 raise, saying so)."""

from .._dlpack import from_dlpack  # noqa: F401


def to_dlpack(tensor):
    """A DLPack capsule sharing `tensor`'s memory (from_dlpack and torch's take it)."""
    return tensor.__dlpack__()
