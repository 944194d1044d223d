"""flow.backends: the backends' switches, as torch.backends' submodules (`import
oneflowlike.backends.cudnn` works, as `import torch.backends.cudnn` does).

flow.backends.cuda.matmul.allow_tf32 = True   # float32 matmuls in TF32 on GPUs (off by default)
flow.backends.cuda.enable_flash_sdp(False)     # attention as its parts, not cuDNN's fused kernel
flow.backends.cudnn.allow_tf32 = False        # float32 convolutions in TF32 (on by default)
"""

from . import cpu, cuda, cudnn, mkldnn, mps, openmp

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp"]
