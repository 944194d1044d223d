"""flow.random, torch.random's names over the default generator. The generator is
counter-based (Philox): its whole state is the seed and the offset into its stream, which
get_rng_state packs into a uint8 tensor of 16 bytes, as torch.get_rng_state gives a ByteTensor."""

import contextlib
import random as _py_random

import numpy as np

from . import _C

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


def manual_seed(seed):
    _C.manual_seed(int(seed))
    return _C.default_generator()


def seed():
    """Seeds the default generator with a non-deterministic number and returns it."""
    s = _py_random.SystemRandom().getrandbits(63)
    _C.manual_seed(s)
    return s


def initial_seed():
    return _C.default_generator().initial_seed()


def get_rng_state():
    seed_, offset = _C.default_generator().get_state()
    return _C.from_numpy(np.array([seed_, offset], dtype=np.uint64).view(np.uint8).copy())


def set_rng_state(new_state):
    data = np.ascontiguousarray(np.asarray(new_state.numpy(), dtype=np.uint8))
    if data.shape != (16,):
        raise ValueError(
            f"[set_rng_state] expects the 16-byte state get_rng_state gives, got shape "
            f"{tuple(data.shape)}"
        )
    seed_, offset = data.view(np.uint64).tolist()
    _C.default_generator().set_state((seed_, offset))


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, **kwargs):
    """Restores the default generator's state on exit (one generator serves every device)."""
    if not enabled:
        yield
        return
    state = _C.default_generator().get_state()
    try:
        yield
    finally:
        _C.default_generator().set_state(state)
