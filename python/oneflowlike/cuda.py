"""flow.cuda: the CUDA devices, with torch.cuda's names. In a build without the CUDA backend,
or on a machine without a GPU, is_available() is False and device_count() is 0, and what a
program calls before it knows (seeding, is_initialized, the amp names) works as in PyTorch; what
needs a device (synchronize, get_device_name, set_device) raises, naming the device.

Random numbers: one counter-based generator serves every device (a tensor drawn on CUDA equals
the one drawn on the CPU with the same seed), so manual_seed / manual_seed_all seed that one."""

import contextlib

from . import _C
from . import amp as _amp

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
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
    "is_initialized",
    "init",
    "set_device",
    "device",
    "is_bf16_supported",
    "amp",
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
        why = "" if _C.has_backend("cuda") else f" ({_C.backend_missing_reason('cuda')})"
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


def manual_seed(seed):
    """Seeds the generator CUDA draws from (the one every device shares, see above)."""
    _C.manual_seed(int(seed))


manual_seed_all = manual_seed


def seed():
    """Seeds the shared generator with a non-deterministic number."""
    import random

    manual_seed(random.SystemRandom().getrandbits(63))


seed_all = seed


def initial_seed():
    return _C.default_generator().initial_seed()


def is_initialized():
    """Whether CUDA is in use: devices are set up on first use, so this is is_available()."""
    return is_available()


def init():
    if is_available():
        _index(None)


def set_device(device):
    """Checks the device exists; "cuda" means cuda:0 here (no per-thread current device yet),
    so only device 0 can be chosen."""
    if _index(device) != 0:
        raise NotImplementedError(
            f"[cuda.set_device] {device}: only cuda:0 can be the current device in this build"
        )


@contextlib.contextmanager
def device(device):
    """torch.cuda.device(...) as a context: selects the device (see set_device) for the block."""
    if device is not None and not (isinstance(device, int) and device < 0):
        set_device(device)
    yield


def is_bf16_supported(including_emulation=True):
    """bfloat16 kernels run on every device this build's kernels run on (sm_80 and later)."""
    return is_available()


class _AmpNamespace:
    """torch.cuda.amp's names: autocast on CUDA and the GradScaler."""

    GradScaler = _amp.GradScaler

    @staticmethod
    def autocast(enabled=True, dtype=None, cache_enabled=True):
        return _amp.autocast("cuda", dtype=dtype, enabled=enabled)


amp = _AmpNamespace()
