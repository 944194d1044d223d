"""Datasets: map-style (`__getitem__` and `__len__`) and iterable (`__iter__`), and the ways of
combining them."""

import bisect
import math
import warnings

from ._random import numpy_rng
from ._worker import get_worker_info

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "ChainDataset",
    "random_split",
]


class Dataset:
    """A map-style dataset: `dataset[i]` is sample i. `a + b` concatenates."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples. With workers, each worker iterates its own copy: shard it in
    `__iter__` with get_worker_info() or every worker yields every sample."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample i is (t[i] for t in tensors); every tensor's first dimension is the dataset's
    length. In a DataLoader worker the samples are numpy views of the tensors' rows (indexing a
    tensor is an op, and workers run none; see this package's docstring)."""

    def __init__(self, *tensors):
        sizes = [tuple(t.shape)[0] if len(t.shape) else None for t in tensors]
        if not tensors or None in sizes or len(set(sizes)) != 1:
            raise ValueError(
                "[TensorDataset] needs tensors with one first dimension, got shapes "
                + ", ".join(str(tuple(t.shape)) for t in tensors)
            )
        self.tensors = tensors
        self._arrays = None

    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, int) and not -n <= index < n:
            raise IndexError(f"[TensorDataset] index {index} is out of range for {n} samples")
        if get_worker_info() is not None:
            if self._arrays is None:
                self._arrays = [t.numpy() for t in self.tensors]  # views, no op
            return tuple(a[index] for a in self._arrays)
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return tuple(self.tensors[0].shape)[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("[ConcatDataset] needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError(
                    "[ConcatDataset] cannot index an IterableDataset "
                    f"({type(d).__name__}); chain iterable datasets with ChainDataset"
                )
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"[ConcatDataset] index {index} is out of range for {n} samples")
        index %= n
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def random_split(dataset, lengths, generator=None):
    """Non-overlapping random Subsets of `dataset` with the given lengths, or fractions summing
    to 1 (floor(n * f) each, the remainder handed out one by one from the first, as torch does).
    The permutation is seeded from `generator` (flow's default generator when None)."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1 and all(0 <= f <= 1 for f in lengths):
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"[random_split] split {i} of fraction {lengths[i]} is empty")
        lengths = sizes
    if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in lengths):
        raise ValueError(f"[random_split] lengths {lengths} must be non-negative integers")
    if sum(lengths) != n:
        raise ValueError(
            f"[random_split] lengths {lengths} sum to {sum(lengths)}, but the dataset has {n} samples"
        )
    perm = numpy_rng(generator).permutation(n).tolist()
    out, start = [], 0
    for size in lengths:
        out.append(Subset(dataset, perm[start : start + size]))
        start += size
    return out
