"""flow.nn.parallel: DistributedDataParallel (data parallelism over local tensors)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
