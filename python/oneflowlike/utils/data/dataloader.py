"""DataLoader: batches of a dataset, loaded in this process or in worker processes."""

import atexit
import itertools
import math
import multiprocessing
import os
import queue
import signal
import time
import weakref
from multiprocessing.reduction import ForkingPickler


import oneflowlike as flow

from . import _collate
from ._random import draw_seed
from ._worker import Fetcher, IterableEnd, WorkerError, WorkerInfo, worker_loop
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader"]

# How often a waiting main process checks that its workers are alive, in seconds.
_POLL_SECONDS = 0.25


def _fail(message, error=ValueError):
    raise error(f"[DataLoader] {message}")


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


class DataLoader:
    """Batches of `dataset`, as torch.utils.data.DataLoader (same arguments and checks).

    Map-style datasets are read in the order of `sampler` (sequential, or a RandomSampler drawing
    from `generator` with `shuffle`), grouped by `batch_sampler` (batch_size and drop_last);
    `batch_size=None` yields single samples. `collate_fn` (default_collate) makes each batch.
    With `num_workers > 0`, worker processes (started with `multiprocessing_context`, "fork" by
    default on Linux) load `prefetch_factor` batches each ahead, delivered in order; see this
    package's docstring for what crosses the process boundary. `persistent_workers` keeps them
    across epochs; `worker_init_fn(worker_id)` runs first in each; a worker's seed is a base seed
    drawn from `generator` each epoch plus its id. `timeout` (seconds, 0: none) bounds the wait
    for one batch. `pin_memory` is accepted and does nothing: batches are host memory already."""

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers=False,
    ):
        if not _is_int(num_workers) or num_workers < 0:
            _fail(f"num_workers is {num_workers!r}: it must be an integer >= 0 (0 loads here)")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            _fail(f"timeout is {timeout!r}: it must be >= 0 seconds (0 waits forever)")
        if num_workers == 0 and prefetch_factor is not None:
            _fail(
                f"prefetch_factor is {prefetch_factor} but num_workers is 0: prefetching needs "
                "workers (leave prefetch_factor None, or set num_workers > 0)"
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not _is_int(prefetch_factor) or prefetch_factor < 1):
            _fail(f"prefetch_factor is {prefetch_factor!r}: it must be an integer >= 1")
        if persistent_workers and num_workers == 0:
            _fail("persistent_workers is True but num_workers is 0: there are no workers to keep")
        if batch_size is not None and (not _is_int(batch_size) or batch_size <= 0):
            _fail(f"batch_size is {batch_size!r}: it must be a positive integer, or None")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler)):
                if value not in (None, False):
                    _fail(
                        f"{name} is {value!r} but the dataset is an IterableDataset: it has no "
                        "indices to order (shuffle inside its __iter__)"
                    )
            if batch_sampler is not None:
                _fail(
                    "batch_sampler is given but the dataset is an IterableDataset: it has no "
                    "indices to batch"
                )
        elif shuffle not in (None, False) and sampler is not None:
            _fail(
                "shuffle is True and a sampler is given: they are exclusive (the sampler "
                "decides the order)"
            )
        if batch_sampler is not None:
            if batch_size != 1 or shuffle not in (None, False) or sampler is not None or drop_last:
                _fail(
                    "batch_sampler is given with batch_size, shuffle, sampler or drop_last: "
                    "it decides all four (leave them at their defaults)"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            _fail("drop_last is True but batch_size is None: there are no batches to drop")
        if not iterable:
            if sampler is None:
                sequential = SequentialSampler(dataset)
                sampler = RandomSampler(dataset, generator=generator) if shuffle else sequential
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self._iterable = iterable
        self._auto_collation = batch_sampler is not None or (iterable and batch_size is not None)
        if collate_fn is None:
            batched = self._auto_collation
            collate_fn = _collate.default_collate if batched else _collate.default_convert
        self.collate_fn = collate_fn
        self._iterator = None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if not self._iterable:
            return len(self._index_sampler)
        n = len(self.dataset)  # TypeError for a stream without a length, as in torch
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        if self._iterator is None:
            self._iterator = _MultiProcessIter(self)
        else:
            self._iterator._reset(self)
        return self._iterator

    def _fetcher(self, collate):
        return Fetcher(
            self.dataset,
            self._iterable,
            self._auto_collation,
            self.batch_size,
            self.drop_last,
            collate,
        )

    def _context(self):
        ctx = self.multiprocessing_context
        if ctx is None:
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            return multiprocessing.get_context(method)
        return multiprocessing.get_context(ctx) if isinstance(ctx, str) else ctx


class _SingleProcessIter:
    def __init__(self, loader):
        self._len = loader
        draw_seed(loader.generator)  # as with workers, so both see the same shuffles
        self._fetcher = loader._fetcher(loader.collate_fn)
        self._fetcher.restart()
        self._indices = None if loader._iterable else iter(loader._index_sampler)

    def __iter__(self):
        return self

    def __next__(self):
        return self._fetcher.fetch(None if self._indices is None else next(self._indices))

    def __len__(self):
        return len(self._len)


# The batch halves of the default collate functions: numpy in the worker, flow here.
_WORKER_HALF = {
    _collate.default_collate: _collate.collate_numpy,
    _collate.default_convert: _collate.convert_numpy,
}


def _rebuild_tensor(array):
    return flow.from_numpy(array)


def _reduce_tensor(t):
    return _rebuild_tensor, (_collate._as_array(t),)


_live_iterators = weakref.WeakSet()


@atexit.register
def _shutdown_live_iterators():
    for it in list(_live_iterators):
        it._shutdown()


class _MultiProcessIter:
    """Tasks (epoch, task, indices) go round-robin to the workers' queues, at most
    prefetch_factor per worker outstanding; results come back on one queue, in any order, and
    are handed out by task number."""

    def __init__(self, loader):
        ForkingPickler.register(flow.Tensor, _reduce_tensor)  # custom collate_fn results
        ctx = loader._context()
        n = loader.num_workers
        self._loader = weakref.ref(loader)  # a persistent loader holds its iterator
        self._persistent = loader.persistent_workers
        self._timeout = loader.timeout
        self._limit = loader.prefetch_factor * n
        self._convert = loader.collate_fn in _WORKER_HALF
        fetcher = loader._fetcher(_WORKER_HALF.get(loader.collate_fn, loader.collate_fn))
        self._shut = False
        self._result_queue = ctx.Queue()
        self._done = ctx.Event()
        self._index_queues, self._workers = [], []
        base_seed = draw_seed(loader.generator)
        try:
            for i in range(n):
                q = ctx.Queue()
                q.cancel_join_thread()  # never wait at exit to flush tasks to a dead worker
                info = WorkerInfo(i, n, base_seed + i, loader.dataset)
                args = (fetcher, q, self._result_queue, self._done, info, loader.worker_init_fn)
                w = ctx.Process(target=worker_loop, args=(*args, os.getpid()), daemon=True)
                w.start()
                self._index_queues.append(q)
                self._workers.append(w)
        except BaseException:
            self._shutdown()
            raise
        _live_iterators.add(self)
        self._epoch = -1
        self._reset(loader)

    def _reset(self, loader):
        n = len(self._workers)
        self._epoch += 1
        self._indices = None if loader._iterable else iter(loader._index_sampler)
        self._send_idx = self._rcvd_idx = self._outstanding = 0
        self._tasks = {}  # task -> (worker,) while awaited, (worker, data) once early
        self._active = [True] * n
        self._cycle = itertools.cycle(range(n))
        for _ in range(self._limit):
            self._put_task()

    def _put_task(self):
        if self._outstanding >= self._limit:
            return
        if self._indices is None:
            index = None
        else:
            index = next(self._indices, StopIteration)
            if index is StopIteration:
                return
        for _ in range(len(self._workers)):
            w = next(self._cycle)
            if self._active[w]:
                break
        else:
            return
        self._index_queues[w].put((self._epoch, self._send_idx, index))
        self._tasks[self._send_idx] = (w,)
        self._outstanding += 1
        self._send_idx += 1

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader())

    def __next__(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._tasks[self._rcvd_idx]
                if len(info) == 2 or self._active[info[0]]:
                    break
                del self._tasks[self._rcvd_idx]  # its worker's stream ended before it
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            if len(self._tasks[self._rcvd_idx]) == 2:
                return self._deliver(self._tasks.pop(self._rcvd_idx)[1])
            epoch, task, data = self._get()
            if epoch != self._epoch:
                continue  # left over from an epoch that was not read to its end
            self._outstanding -= 1
            if isinstance(data, IterableEnd):
                self._active[data.worker_id] = False
                continue
            if task == self._rcvd_idx:
                del self._tasks[task]
                return self._deliver(data)
            if task in self._tasks:
                self._tasks[task] += (data,)

    def _deliver(self, data):
        self._rcvd_idx += 1
        self._put_task()
        if isinstance(data, WorkerError):
            data.reraise()
        return _collate.to_flow(data) if self._convert else data

    def _get(self):
        start = time.monotonic()
        while True:
            wait = _POLL_SECONDS
            if self._timeout:
                wait = max(0.0, min(wait, start + self._timeout - time.monotonic()))
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            for i, w in enumerate(self._workers):
                if not w.is_alive():
                    code = w.exitcode
                    how = f"exit code {code}"
                    if code is not None and code < 0:
                        how = f"signal {signal.Signals(-code).name}"
                    self._shutdown()
                    _fail(
                        f"worker {i} (pid {w.pid}) exited unexpectedly ({how}) while batch "
                        f"{self._rcvd_idx} was awaited",
                        RuntimeError,
                    )
            if self._timeout and time.monotonic() - start >= self._timeout:
                worker = self._tasks[self._rcvd_idx][0]
                _fail(
                    f"timed out after {self._timeout} s waiting for batch {self._rcvd_idx} "
                    f"from worker {worker}",
                    RuntimeError,
                )

    def _shutdown(self):
        if self._shut:
            return
        self._shut = True
        _live_iterators.discard(self)
        self._done.set()
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 1.0  # then a worker busy in a long fetch is terminated
        for w in self._workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
            if w.is_alive():
                w.terminate()
                w.join(timeout=2.0)
        for q in (*self._index_queues, self._result_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        self._shutdown()
