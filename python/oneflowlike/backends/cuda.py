"""flow.backends.cuda, with torch.backends.cuda's names.

flow.backends.cuda.matmul.allow_tf32 = True   # float32 matmuls in TF32 on GPUs (off by default)
flow.backends.cuda.enable_flash_sdp(False)     # attention as its parts, not cuDNN's fused kernel
"""

import contextlib

from .. import _C

__all__ = [
    "enable_flash_sdp",
    "enable_math_sdp",
    "enable_mem_efficient_sdp",
    "flash_sdp_enabled",
    "is_built",
    "math_sdp_enabled",
    "matmul",
    "mem_efficient_sdp_enabled",
    "sdp_kernel",
]


class _Matmul:
    @property
    def allow_tf32(self):
        return _C.matmul_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, allow):
        _C.set_matmul_allow_tf32(bool(allow))

    # Reduced-precision accumulation is what our float16 / bfloat16 matmuls never do: reading
    # gives PyTorch's default answer, and setting it is accepted and has no effect.
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _Matmul()


def is_built():
    """Whether this build has the CUDA backend (torch.backends.cuda.is_built)."""
    return _C.has_backend("cuda")


def enable_flash_sdp(enabled):
    """Whether scaled_dot_product_attention may run as one fused kernel where one serves the call
    (cuDNN's flash attention for float16 / bfloat16 on CUDA); on by default."""
    _C.set_attention_allow_fused(bool(enabled))


def flash_sdp_enabled():
    return _C.attention_allow_fused()


# The memory-efficient kernel is the same fused one here; the math path is always there.
enable_mem_efficient_sdp = enable_flash_sdp
mem_efficient_sdp_enabled = flash_sdp_enabled


def enable_math_sdp(enabled):
    if not enabled:
        raise ValueError(
            "[backends.cuda.enable_math_sdp] the attention as its parts is every call's fallback "
            "and cannot be turned off"
        )


def math_sdp_enabled():
    return True


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True):
    """enable_flash_sdp(enable_flash) inside a `with` block, the setting restored after
    (torch.backends.cuda.sdp_kernel's form)."""
    was = _C.attention_allow_fused()
    _C.set_attention_allow_fused(bool(enable_flash))
    try:
        yield
    finally:
        _C.set_attention_allow_fused(was)
