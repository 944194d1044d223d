"""What runs in a DataLoader worker process: fetch the samples of each task it is sent, batch
them with numpy, send the batch back; and the messages it exchanges with the main process."""

import os
import queue
import random
import traceback

import numpy as np

import oneflowlike as flow

__all__ = ["WorkerInfo", "get_worker_info"]

_worker_info = None


class WorkerInfo:
    """In a DataLoader worker: `id` (0 .. num_workers - 1), `num_workers`, `seed` (this worker's:
    the loader's base seed + id) and `dataset` (this worker's copy)."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info():
    """This worker's WorkerInfo in a DataLoader worker process; None in the main process."""
    return _worker_info


class IterableEnd:
    """A worker's iterable dataset is exhausted for this epoch."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class WorkerError:
    """An exception raised in a worker, carried to the main process as its type and text."""

    def __init__(self, worker_id, exc):
        self.exc_type = type(exc)
        self.text = (
            f"[DataLoader] worker {worker_id} raised {type(exc).__name__}: {exc}\n"
            "Worker traceback (most recent call last):\n"
            + "".join(traceback.format_exception(exc)[1:])
        )

    def reraise(self):
        try:
            err = self.exc_type(self.text)
        except Exception:  # a type that needs other arguments
            err = RuntimeError(self.text)
        try:
            raise err
        finally:
            del err  # no cycle through this frame: the iterator it names is freed with it


class Fetcher:
    """The samples of one task: a list of indices (auto-batching), one index, or the next
    samples of an iterable dataset; then `collate` on them."""

    def __init__(self, dataset, iterable, auto_collation, batch_size, drop_last, collate):
        self.dataset = dataset
        self.iterable = iterable
        self.auto_collation = auto_collation
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.collate = collate
        self._it = None  # iter(dataset) is taken where the samples are read: in the worker

    def restart(self):
        self._it = iter(self.dataset) if self.iterable else None

    def fetch(self, index):
        """The collated batch, or StopIteration when an iterable dataset is exhausted."""
        if not self.iterable:
            if self.auto_collation:
                return self.collate([self.dataset[i] for i in index])
            return self.collate(self.dataset[index])
        if not self.auto_collation:
            return self.collate(next(self._it))
        batch = []
        for sample in self._it:
            batch.append(sample)
            if len(batch) == self.batch_size:
                break
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            raise StopIteration
        return self.collate(batch)


def _seed_everything(seed, worker_id):
    random.seed(seed)
    np.random.seed(np.random.SeedSequence([seed, worker_id]).generate_state(4))
    flow.manual_seed(seed % (1 << 63))  # sets a generator's state: no op runs


def worker_loop(fetcher, index_queue, result_queue, done_event, info, init_fn, parent_pid):
    """Serves tasks (epoch, task, index) until it gets None, the loader is done, or its parent
    is gone; answers (epoch, task, batch) with the batch, a WorkerError or an IterableEnd."""
    global _worker_info
    _worker_info = info
    epoch, exhausted = None, False
    try:
        _seed_everything(info.seed, info.id)
        if init_fn is not None:
            init_fn(info.id)
    except Exception as e:  # reported with the first task
        startup_error = WorkerError(info.id, e)
    else:
        startup_error = None
    while not done_event.is_set():
        try:
            task = index_queue.get(timeout=1.0)
        except queue.Empty:
            if os.getppid() != parent_pid:
                return
            continue
        if task is None:
            break
        task_epoch, task_id, index = task
        if task_epoch != epoch:  # a new epoch (persistent workers): the stream starts over
            epoch, exhausted = task_epoch, False
            try:
                fetcher.restart()
            except Exception as e:
                startup_error = startup_error or WorkerError(info.id, e)
        if startup_error is not None:
            result_queue.put((epoch, task_id, startup_error))
            startup_error = None
            continue
        if exhausted:
            result_queue.put((epoch, task_id, IterableEnd(info.id)))
            continue
        try:
            data = fetcher.fetch(index)
        except StopIteration:
            exhausted = True
            data = IterableEnd(info.id)
        except Exception as e:
            data = WorkerError(info.id, e)
        del index
        result_queue.put((epoch, task_id, data))
    result_queue.cancel_join_thread()  # the main process may have stopped reading
