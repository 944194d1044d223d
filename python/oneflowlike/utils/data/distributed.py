"""DistributedSampler: each data-parallel rank visits its own share of the dataset."""

import math

import oneflowlike as flow

from ._random import torch_randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Rank `rank` of `num_replicas` (by default this process's place in the job, from the
    launcher's RANK / WORLD_SIZE through flow.env) visits every num_replicas-th index of one
    permutation, which is the same on every rank: shuffled with `seed + epoch` (call `set_epoch`
    before each epoch) or in order. Without `drop_last`, indices are repeated from the start so
    that the ranks get equal counts; with it, the tail that does not divide evenly is dropped.
    Given the same arguments, each rank's indices equal torch's DistributedSampler's."""

    def __init__(
        self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False
    ):
        num_replicas = flow.env.get_world_size() if num_replicas is None else num_replicas
        rank = flow.env.get_rank() if rank is None else rank
        if num_replicas < 1:
            raise ValueError(
                f"[DistributedSampler] num_replicas is {num_replicas}: it must be >= 1"
            )
        if not 0 <= rank < num_replicas:
            raise ValueError(
                f"[DistributedSampler] rank is {rank}: it must be in [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            pad = self.total_size - len(indices)
            indices += (indices * math.ceil(pad / len(indices)))[:pad] if pad else []
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch seeds the shuffle: every rank must set the same one."""
        self.epoch = epoch
