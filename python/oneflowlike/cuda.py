"""flow.cuda: the CUDA devices, with torch.cuda's names. In a build without the CUDA backend,
or on a machine without a GPU, is_available() is False and device_count() is 0."""

from . import _C

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "synchronize",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "reset_peak_memory_stats",
    "empty_cache",
]


def device_count():
    return _C.device_count("cuda")


def is_available():
    return device_count() > 0


def current_device():
    return 0  # "cuda" means cuda:0 (no per-thread current device yet)


def _index(device):
    """The device index of None (the current device), an int, "cuda:1" or a flow.device."""
    if device is None:
        index = current_device()
    elif isinstance(device, int):
        index = device
    else:
        text = str(device)
        if not text.startswith("cuda"):
            raise ValueError(f"[cuda] {text!r} is not a CUDA device")
        index = int(text.split(":")[1]) if ":" in text else current_device()
    count = device_count()
    if not 0 <= index < count:
        why = "" if _C.has_backend("cuda") else " (this build has no CUDA backend)"
        raise RuntimeError(
            f"[cuda] cuda:{index} is not available: {count} CUDA device"
            f"{'' if count == 1 else 's'} visible{why}"
        )
    return index


def synchronize(device=None):
    """Waits for the work queued on the device."""
    _C.device_synchronize("cuda", _index(device))


def memory_allocated(device=None):
    """Bytes held by tensors on the device now (as the caching allocator rounds them)."""
    return _C.device_memory_stats("cuda", _index(device))["allocated"]


def max_memory_allocated(device=None):
    """The most bytes tensors held on the device since the last reset_peak_memory_stats."""
    return _C.device_memory_stats("cuda", _index(device))["peak"]


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the driver: in tensors and cached for reuse."""
    return _C.device_memory_stats("cuda", _index(device))["reserved"]


def reset_peak_memory_stats(device=None):
    _C.device_reset_peak_memory("cuda", _index(device))


def empty_cache():
    """Gives the allocator's cached free blocks back to the driver."""
    _C.device_empty_cache("cuda")
