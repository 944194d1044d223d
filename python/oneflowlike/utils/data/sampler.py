"""Samplers: which dataset indices an epoch visits, in what order, and how they are batched.

Random orders come from a seed drawn from the sampler's `flow.Generator` (flow's default generator
when none is given) feeding numpy's PCG64: the same seed gives the same order, but not torch's
order (torch's generator is a different engine)."""

import math

import numpy as np

from ._random import numpy_rng

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]


def _positive_int(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"[{owner}] {name} is {value!r}: it must be a positive integer")


def _in_chunks(count, draw, chunk=1 << 16):
    """`count` independent draws, made `chunk` at a time as they are consumed: a sampler of
    10**10 samples must not hold them all (PyTorch draws lazily too)."""
    for start in range(0, count, chunk):
        yield from draw(min(chunk, count - start)).tolist()


def _bool(owner, name, value):
    if not isinstance(value, bool):
        raise TypeError(f"[{owner}] {name} is {value!r}: it must be True or False")


class Sampler:
    """The base class: `__iter__` yields indices (or, for a batch sampler, lists of them);
    `__len__`, where defined, is how many it yields."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random permutation each epoch; with `replacement`, `num_samples` independent draws.
    Without replacement, `num_samples` above the dataset's length repeats whole permutations."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        _bool("RandomSampler", "replacement", replacement)
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _positive_int("RandomSampler", "num_samples", self.num_samples)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), numpy_rng(self.generator)
        if self.replacement:
            yield from _in_chunks(self.num_samples, lambda k: rng.integers(0, n, size=k))
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in numpy_rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probability proportional to `weights`."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _positive_int("WeightedRandomSampler", "num_samples", num_samples)
        _bool("WeightedRandomSampler", "replacement", replacement)
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(
                f"[WeightedRandomSampler] weights must be 1-d, got shape {tuple(w.shape)}"
            )
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError(
                "[WeightedRandomSampler] weights must be finite, non-negative and not all zero"
            )
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(
                f"[WeightedRandomSampler] num_samples is {num_samples} without replacement, but "
                f"only {np.count_nonzero(w)} weights are non-zero"
            )
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rng = numpy_rng(self.generator)
        p = self.weights / self.weights.sum()
        if self.replacement:
            return _in_chunks(self.num_samples, lambda k: rng.choice(len(p), size=k, p=p))
        chosen = rng.choice(len(p), size=self.num_samples, replace=False, p=p)
        return iter(chosen.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of `batch_size`; the last, shorter one is
    dropped with `drop_last`."""

    def __init__(self, sampler, batch_size, drop_last):
        _positive_int("BatchSampler", "batch_size", batch_size)
        _bool("BatchSampler", "drop_last", drop_last)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
