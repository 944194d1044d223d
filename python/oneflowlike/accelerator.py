"""flow.accelerator, torch.accelerator's names: the one accelerator this process may use (CUDA)
or none, on which device-generic programs decide where to run."""

from . import cuda as _cuda
from ._C import device as _device

__all__ = [
    "current_accelerator",
    "current_device_index",
    "device_count",
    "is_available",
    "set_device_index",
    "synchronize",
]


def is_available():
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """flow.device("cuda") where a GPU is visible; else None (check_available or not: CUDA is
    the only accelerator this build knows, and without a device it is not current)."""
    return _device("cuda") if _cuda.is_available() else None


def device_count():
    return _cuda.device_count()


def current_device_index():
    return _cuda.current_device() if _cuda.is_available() else -1


def set_device_index(device):
    _cuda.set_device(device)


def synchronize(device=None):
    if _cuda.is_available():
        _cuda.synchronize(device)
