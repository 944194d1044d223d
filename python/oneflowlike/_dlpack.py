"""DLPack exchange (utils/dlpack.py re-exports it, as torch.utils.dlpack): zero-copy through the
tensor's numpy view, for CPU tensors of numpy's dtypes."""

import numpy as np

from . import _C


def _dlpack_source(t, op):
    """The zero-copy numpy view a DLPack exchange goes through (CPU and numpy's dtypes only)."""
    if t.is_global:
        raise TypeError(f"[{op}] a global tensor has no single buffer: to_local() it first")
    if t.device.type != "cpu":
        raise TypeError(
            f"[{op}] only CPU tensors are exchanged through DLPack here; this one is on "
            f"{t.device} (.cpu() it first)"
        )
    if t.dtype == _C.dtype.bfloat16:
        raise TypeError(f"[{op}] bfloat16 has no DLPack exchange here (.float() it first)")
    return t.detach().numpy()


class _Capsule:
    """A DLPack capsule as an object numpy's from_dlpack takes (it wants __dlpack__)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def from_dlpack(ext):
    """A tensor sharing the memory of `ext`: an object with __dlpack__ (a numpy array, a PyTorch
    or JAX CPU tensor) or a DLPack capsule (to_dlpack's). CPU memory and numpy's dtypes only."""
    if type(ext).__name__ == "PyCapsule":
        ext = _Capsule(ext)
    try:
        arr = np.from_dlpack(ext)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise TypeError(
            f"[from_dlpack] cannot take {type(ext).__name__} through DLPack: {e} (CPU memory "
            "and numpy's dtypes only)"
        ) from None
    return _C.from_numpy(arr)
