"""flow.backends: numerical switches of the backends, with torch.backends' names.

flow.backends.cuda.matmul.allow_tf32 = True   # float32 matmuls in TF32 on GPUs (off by default)
flow.backends.cuda.enable_flash_sdp(False)     # attention as its parts, not cuDNN's fused kernel
flow.backends.cudnn.allow_tf32 = False        # float32 convolutions in TF32 (on by default)
"""

import contextlib

from . import _C


class _Matmul:
    @property
    def allow_tf32(self):
        return _C.matmul_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, allow):
        _C.set_matmul_allow_tf32(bool(allow))


class _Cuda:
    matmul = _Matmul()

    @staticmethod
    def enable_flash_sdp(enabled):
        """Whether scaled_dot_product_attention may run as one fused kernel where one serves the
        call (cuDNN's flash attention for float16 / bfloat16 on CUDA); on by default."""
        _C.set_attention_allow_fused(bool(enabled))

    @staticmethod
    def flash_sdp_enabled():
        return _C.attention_allow_fused()

    @staticmethod
    @contextlib.contextmanager
    def sdp_kernel(enable_flash=True):
        """enable_flash_sdp(enable_flash) inside a `with` block, the setting restored after
        (torch.backends.cuda.sdp_kernel's form)."""
        was = _C.attention_allow_fused()
        _C.set_attention_allow_fused(bool(enable_flash))
        try:
            yield
        finally:
            _C.set_attention_allow_fused(was)


cuda = _Cuda()


class _Cudnn:
    @property
    def allow_tf32(self):
        return _C.conv_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, allow):
        _C.set_conv_allow_tf32(bool(allow))


cudnn = _Cudnn()
