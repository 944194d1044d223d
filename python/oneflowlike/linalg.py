"""flow.linalg: the names of torch.linalg that oneflowlike has. Each is an op of the registry
(ops/svd.cpp), bound on the extension module as PyTorch's torch.linalg_<name> aliases are."""

from . import _C

matmul = _C.matmul
svd = _C.linalg_svd
svdvals = _C.linalg_svdvals
pinv = _C.linalg_pinv

__all__ = ["matmul", "svd", "svdvals", "pinv"]
