"""oneflowlike: a distributed deep-learning tensor framework with SBP layouts."""

import os as _os


def _prefer_avx512_blas():
    """Debian 12's OpenBLAS (0.3.21) does not know AMD Zen 4 and picks its AVX2 kernels there;
    its SkylakeX kernels run on any CPU with these AVX-512 subsets, about twice as fast. The
    choice is read when OpenBLAS loads, so it is made before importing the extension; an
    OPENBLAS_CORETYPE already set wins."""
    if "OPENBLAS_CORETYPE" in _os.environ:
        return
    try:
        with open("/proc/cpuinfo") as f:
            flags = next(
                (line.split(":", 1)[1].split() for line in f if line.startswith("flags")), []
            )
    except OSError:
        return
    if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}.issubset(flags):
        _os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"


_prefer_avx512_blas()

import numpy as _np  # noqa: E402

from . import _C  # noqa: E402
from ._C import (  # noqa: F401
    Tensor,
    Generator,
    device,
    dtype,
    manual_seed,
    set_num_threads,
    get_num_threads,
    memory_allocated,
    max_memory_allocated,
    reset_peak_memory_stats,
    default_generator,
    is_grad_enabled,
    promote_types,
    result_type,
    from_numpy,
)

# Every op's public functions, bound from the registry's signatures (help(flow.cumsum) shows
# them): flow.add, flow.cumsum, flow.einsum, ...
for _sig in _C.op_signatures():
    if _sig["function"]:
        _name = _sig["schema"].split("(", 1)[0]
        globals()[_name] = getattr(_C, _name)
del _sig, _name

from ._creation import (
    set_default_device,
    get_default_device,
    tensor,
    as_tensor,
)  # noqa: F401,E402,E501
from .autograd.grad_mode import (
    no_grad,
    enable_grad,
    set_grad_enabled,
    inference_mode,
)  # noqa: F401,E402,E501
from ._dtype_info import finfo, iinfo  # noqa: F401,E402
from ._dlpack import from_dlpack  # noqa: F401,E402
from ._tensor_api import (  # noqa: F401,E402
    allclose,
    equal,
    Size,
    numel,
    is_tensor,
    index_copy,
    unique_consecutive,
)

bool = dtype.bool
uint8 = dtype.uint8
int8 = dtype.int8
int32 = dtype.int32
int64 = dtype.int64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64
float = float32
complex64 = dtype.complex64
cfloat = complex64
complex128 = dtype.complex128
cdouble = complex128
double = float64
half = float16
long = int64
int = int32
concat = cat

from . import autograd  # noqa: E402,F401
from . import amp  # noqa: E402,F401
from . import backends  # noqa: E402,F401
from .amp import autocast  # noqa: E402,F401
from . import cuda  # noqa: E402,F401
from . import accelerator  # noqa: E402,F401
from . import random  # noqa: E402,F401
from .random import seed, initial_seed, get_rng_state, set_rng_state  # noqa: E402,F401
from . import nn  # noqa: E402,F401
from . import linalg  # noqa: E402,F401
from . import masked  # noqa: E402,F401
from . import signal  # noqa: E402,F401
from . import fft  # noqa: E402,F401
from ._stft import stft, istft  # noqa: E402,F401
from .linalg import torch_norm as norm, renorm, cdist, chain_matmul, matrix_exp  # noqa: E402,F401
from ._linalg_torch import *  # noqa: E402,F401,F403

Tensor.renorm = renorm
from .signal.windows import hann_window, hamming_window, kaiser_window  # noqa: E402,F401
from .signal.windows import blackman_window, bartlett_window  # noqa: E402,F401
from . import special  # noqa: E402,F401

Tensor.stft = stft
Tensor.istft = istft
from . import optim  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from ._torch_scans import *  # noqa: E402,F401,F403
from ._torch_misc import *  # noqa: E402,F401,F403
from ._tensor_api import _install_tensor_methods  # noqa: E402

_install_tensor_methods()
from ._inplace import install as _install_inplace  # noqa: E402

_install_inplace(Tensor)
del _np
__version__ = "0.1.0"


def is_floating_point(input):
    return input.is_floating_point()


def get_default_dtype():
    """float32: creation ops make float32 unless told otherwise (set_default_dtype is not
    supported yet)."""
    return float32


def set_float32_matmul_precision(precision):
    """torch's switch: "highest" keeps float32 matmuls exact, "high" and "medium" allow TF32 on
    GPUs (backends.cuda.matmul.allow_tf32)."""
    if precision not in ("highest", "high", "medium"):
        raise ValueError(
            f"[set_float32_matmul_precision] expects 'highest', 'high' or 'medium', got "
            f"{precision!r}"
        )
    backends.cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    return "high" if backends.cuda.matmul.allow_tf32 else "highest"


from . import distributed  # noqa: E402,F401
from . import env  # noqa: E402,F401

from . import sbp  # noqa: E402,F401
from .sbp import placement  # noqa: E402,F401
from ._global import boxing  # noqa: E402,F401
from . import auto_parallel  # noqa: E402,F401
from . import _global as _global_mod  # noqa: E402

_global_mod.install(Tensor)
to_global, to_local = _global_mod.to_global, _global_mod.to_local  # OneFlow's functions
globals().update(_tensor_api._tensor_types())  # LongTensor, FloatTensor, ... (dtype checks)
from . import jit  # noqa: E402,F401
from .utils import dlpack as _utils_dlpack  # noqa: E402,F401  (flow.utils.dlpack)
from ._vmap import vmap, func  # noqa: E402,F401  (torch.vmap, torch.func.vmap)
