"""A per-case time limit and the one-line form of an exception, shared by the drivers."""

import contextlib
import random
import signal
import threading
import warnings

import numpy as np


class CaseTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """Raise CaseTimeout after `seconds` (SIGALRM: main thread on Unix only, else no limit). A
    kernel stuck in C++ is interrupted when it returns to Python."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise CaseTimeout(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def describe(exc, limit=160):
    msg = " ".join(str(exc).split())
    if len(msg) > limit:
        msg = msg[: limit - 3] + "..."
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def seed_all(seed=0):
    """The same samples every run: torch's sample generators draw from torch, random and numpy."""
    import torch

    torch.random.default_generator.manual_seed(seed)  # torch.manual_seed queues CUDA seeding
    random.seed(seed)
    np.random.seed(seed)


@contextlib.contextmanager
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
