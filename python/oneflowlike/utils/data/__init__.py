"""flow.utils.data: PyTorch's data-loading API (Dataset, samplers, DataLoader).

    loader = flow.utils.data.DataLoader(dataset, batch_size=64, shuffle=True, num_workers=2,
                                        generator=flow.Generator().manual_seed(0))
    for x, y in loader: ...

Workers and the framework. The C++ core runs ops on oneTBB thread pools, and oneTBB does not
support a process forked while its threads run: an op in such a child may deadlock. Workers are
forked (the default on Linux: the fastest start, and datasets holding flow tensors, which do not
pickle, need no pickling), so a worker runs no framework op. It fetches samples and batches them
with numpy (`collate_numpy`); flow tensors in samples are read as numpy views of their memory
(`Tensor.numpy()` of a local CPU tensor wraps its storage: no op, no thread pool), and
TensorDataset reads numpy views of its tensors in a worker. The numpy batch crosses the process
boundary (pickled through the result queue) and becomes flow tensors in the main process with
`flow.from_numpy`, which shares the received array's memory: no copy after the pipe.

A custom `collate_fn` runs in the worker as given: it should use numpy too; flow tensors in its
result are sent as numpy and rebuilt with `flow.from_numpy`. `multiprocessing_context="spawn"`
(or "forkserver") starts fresh interpreters, where ops are safe, for datasets that pickle.

Randomness: shuffling, random_split and the workers' base seed draw a seed from a
`flow.Generator` (flow's default generator when none is given, so `flow.manual_seed` fixes
them) and shuffle with numpy seeded by it; the same seed gives the same order, not torch's.
DistributedSampler shuffles exactly as torch's does (same seed and epoch, same indices)."""

from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from . import distributed

__all__ = [
    "DataLoader",
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "ChainDataset",
    "random_split",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "WorkerInfo",
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
    "DistributedSampler",
    "distributed",
]
