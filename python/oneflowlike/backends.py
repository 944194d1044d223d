"""flow.backends: numerical switches of the backends, with torch.backends' names.

flow.backends.cuda.matmul.allow_tf32 = True   # float32 matmuls in TF32 on GPUs (off by default)
flow.backends.cudnn.allow_tf32 = False        # float32 convolutions in TF32 (on by default)
"""

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


cuda = _Cuda()


class _Cudnn:
    @property
    def allow_tf32(self):
        return _C.conv_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, allow):
        _C.set_conv_allow_tf32(bool(allow))


cudnn = _Cudnn()
