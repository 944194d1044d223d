"""flow.utils.data's DataLoader with worker processes: the same batches in the same order as in
one process, iterable datasets sharded with get_worker_info, worker_init_fn, persistent workers,
and failures that raise instead of hanging (a worker's exception, a worker killed), with no
worker left behind."""

import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset
from oneflowlike.utils.data import get_worker_info

pytestmark = pytest.mark.multiprocess


@pytest.fixture(autouse=True)
def no_hang():
    """Fails a test that runs 30 s (a hang) instead of blocking the suite."""

    def hung(signum, frame):
        raise TimeoutError("test_data_workers: a test ran 30 s, it hangs")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def children():
    return multiprocessing.active_children()


def plain(batch):
    if isinstance(batch, flow.Tensor):
        return (str(batch.dtype), batch.numpy().tolist())
    if isinstance(batch, dict):
        return {k: plain(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [plain(v) for v in batch]
    return batch


class Samples(Dataset):
    """Sample i: a dict of a float32 (2,) array, an int, a float and a string."""

    def __init__(self, n=23, fail_at=None, slow=0.0):
        self.n, self.fail_at, self.slow = n, fail_at, slow

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"sample {i} is corrupt")
        time.sleep(self.slow)
        return {"x": np.full(2, i, np.float32), "y": i, "w": i / 2, "name": f"s{i}"}


class Shards(IterableDataset):
    """0..n-1, each worker yielding every num_workers-th one (torch's documented recipe)."""

    def __init__(self, n=10):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


@pytest.mark.parametrize("num_workers", [1, 2])
def test_workers_give_the_same_batches_in_order(num_workers):
    def epoch(n_workers, **kw):
        loader = DataLoader(Samples(), batch_size=4, num_workers=n_workers, **kw)
        return [plain(b) for b in loader]

    assert epoch(num_workers) == epoch(0)
    assert epoch(num_workers, prefetch_factor=1, drop_last=True) == epoch(0, drop_last=True)
    shuffled = {}
    for n in (0, num_workers):
        g = flow.Generator().manual_seed(3)
        shuffled[n] = epoch(n, shuffle=True, generator=g)
    assert shuffled[0] == shuffled[num_workers]
    x = flow.tensor(np.arange(30, dtype=np.float32).reshape(10, 3))
    ds = TensorDataset(x, flow.tensor(np.arange(10)))
    loader = DataLoader(ds, batch_size=3, num_workers=num_workers)
    assert [plain(b) for b in loader] == [plain(b) for b in DataLoader(ds, batch_size=3)]
    assert not children()


def test_iterable_dataset_is_sharded_by_worker_info():
    loader = DataLoader(Shards(), batch_size=2, num_workers=2)
    batches = [b.numpy().tolist() for b in loader]
    assert batches == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]  # round-robin over workers
    assert sorted(v for b in DataLoader(Shards(), num_workers=2) for v in b.numpy()) == list(
        range(10)
    )


def record_worker(worker_id):
    info = get_worker_info()
    with open(
        os.path.join(os.environ["OFL_TEST_DIR"], f"init-{worker_id}-{os.getpid()}"), "w"
    ) as f:
        f.write(f"{info.id} {info.num_workers} {info.seed}")


def test_worker_init_fn_runs_once_per_worker_and_seeds_differ(tmp_path, monkeypatch):
    monkeypatch.setenv("OFL_TEST_DIR", str(tmp_path))
    loader = DataLoader(Samples(40), batch_size=2, num_workers=2, worker_init_fn=record_worker)
    assert len(list(loader)) == 20
    files = sorted(os.listdir(tmp_path))
    assert [f.split("-")[1] for f in files] == ["0", "1"]
    seeds = [int(open(tmp_path / f).read().split()[2]) for f in files]
    assert seeds[1] == seeds[0] + 1


class Draws(Dataset):
    """Sample i: a number from numpy's global generator, which each worker seeds."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return np.random.randint(1 << 30)


def test_worker_seeds_follow_the_generator():
    def draws(seed):
        loader = DataLoader(Draws(), 2, num_workers=2, generator=flow.Generator().manual_seed(seed))
        return [b.numpy().tolist() for b in loader]

    assert draws(0) == draws(0) and draws(0) != draws(1)
    first = draws(0)
    assert first[0] != first[1]  # the two workers draw differently


class Pids(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return os.getpid()


def test_persistent_workers_survive_epochs():
    loader = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
    first = {p for b in loader for p in b.numpy().tolist()}
    second = {p for b in loader for p in b.numpy().tolist()}
    assert first == second and len(first) == 2 and os.getpid() not in first
    partial = iter(loader)
    next(partial)  # an epoch left unfinished: the next one starts over, complete
    assert sum(len(b) for b in loader) == 8
    stream = DataLoader(Shards(6), num_workers=2, persistent_workers=True)
    assert [sorted(int(v) for v in stream) for _ in range(2)] == [list(range(6))] * 2
    del loader, partial, stream
    assert not children()


def test_an_exception_in_a_worker_surfaces_with_its_traceback():
    loader = DataLoader(Samples(fail_at=5), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as err:
        list(loader)
    text = str(err.value)
    assert "[DataLoader] worker 0 raised ValueError: sample 5 is corrupt" in text
    assert "Worker traceback" in text and "__getitem__" in text
    del err
    assert not children()


class Killer(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        if i == 6:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_a_killed_worker_raises_instead_of_hanging():
    with pytest.raises(RuntimeError, match=r"worker \d \(pid \d+\) exited unexpectedly \(signal "):
        list(DataLoader(Killer(), batch_size=2, num_workers=2))
    assert not children()


def test_timeout_raises_when_a_batch_is_late():
    loader = DataLoader(Samples(4, slow=5.0), batch_size=1, num_workers=1, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"timed out after 0.3 s waiting for batch 0 from"):
        next(iter(loader))
    assert time.monotonic() - start < 3.0  # not the 5 s fetch
    assert not children()


def test_breaking_early_leaves_no_live_children():
    for batch in DataLoader(Samples(200), batch_size=2, num_workers=2):
        break
    assert not children()
    it = iter(DataLoader(Samples(200), batch_size=2, num_workers=2))
    next(it)
    assert len(children()) == 2
    del it
    assert not children()


def collate_with_flow_tensors(batch):
    return flow.from_numpy(np.stack([s["x"] for s in batch])), [s["name"] for s in batch]


def test_a_custom_collate_fn_in_a_worker_sends_flow_tensors():
    x, names = next(
        iter(DataLoader(Samples(), 3, num_workers=1, collate_fn=collate_with_flow_tensors))
    )
    assert isinstance(x, flow.Tensor) and x.numpy().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert names == ["s0", "s1", "s2"]


def test_spawned_workers_load_a_dataset_of_flow_tensors():
    ds = TensorDataset(flow.tensor(np.arange(6, dtype=np.float32)))
    loader = DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert [b[0].numpy().tolist() for b in loader] == [[0, 1, 2, 3], [4, 5]]


EXITS_WITH_LIVE_WORKERS = """
import numpy as np
from oneflowlike.utils.data import DataLoader
persistent = DataLoader(np.arange(100.0), batch_size=2, num_workers=2, persistent_workers=True)
next(iter(persistent))
midway = iter(DataLoader(np.arange(100.0), batch_size=2, num_workers=2))
next(midway)
print("done")
"""


def test_the_interpreter_exits_with_workers_still_running():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", EXITS_WITH_LIVE_WORKERS], capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
