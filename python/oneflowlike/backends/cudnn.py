"""flow.backends.cudnn, with torch.backends.cudnn's names: `flow.backends.cudnn.benchmark = True`
and `flow.backends.cudnn.allow_tf32 = False` (float32 convolutions in TF32, on by default) are
module attributes, as in PyTorch."""

import sys
import types

from .. import _C


def is_available():
    """Whether this build has cuDNN (it comes with the CUDA backend)."""
    return _C.has_backend("cuda")


def version():
    """None: the cuDNN version is not reported by this build (PyTorch gives None without it)."""
    return None


class _CudnnModule(types.ModuleType):
    # Algorithm choice is cuDNN's heuristic, always deterministic for a given shape: benchmark
    # and deterministic are kept as set, for programs that read them back.
    enabled = True
    benchmark = False
    deterministic = False
    benchmark_limit = 10

    @property
    def allow_tf32(self):
        return _C.conv_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, allow):
        _C.set_conv_allow_tf32(bool(allow))


sys.modules[__name__].__class__ = _CudnnModule
