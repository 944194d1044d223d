"""Where the loaders' randomness comes from: a seed drawn from a `flow.Generator` (the default one
when none is given, so `flow.manual_seed` makes every order reproducible), then numpy seeded with
it. `torch_randperm` is PyTorch's CPU `randperm` for a seed, which DistributedSampler uses so that
its shards equal torch's for the same seed and epoch."""

import numpy as np

import oneflowlike as flow


def draw_seed(generator=None):
    """A 62-bit seed drawn from `generator` (flow's default generator when None), advancing it."""
    kwargs = {} if generator is None else {"generator": generator}
    hi, lo = (int(v) for v in flow.randint(0, 1 << 31, (2,), dtype=flow.int64, **kwargs).numpy())
    return (hi << 31) | lo


def numpy_rng(generator=None):
    return np.random.default_rng(draw_seed(generator))


def torch_randperm(n, seed):
    """The permutation torch.randperm(n) gives after torch.Generator().manual_seed(seed): a
    Fisher-Yates shuffle driven by 32-bit MT19937 draws (numpy's legacy RandomState is the same
    MT19937, seeded the same way, and its full-range uint32 draws are its raw outputs)."""
    if n < 2:
        return list(range(n))
    rs = np.random.RandomState(seed & 0xFFFFFFFF)
    draws = rs.randint(0, 1 << 32, size=n - 1, dtype=np.uint32).astype(np.int64)
    offsets = (draws % np.arange(n, 1, -1, dtype=np.int64)).tolist()
    perm = list(range(n))
    for i, z in enumerate(offsets):
        j = i + z
        perm[i], perm[j] = perm[j], perm[i]
    return perm
