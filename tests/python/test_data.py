"""flow.utils.data in one process (num_workers=0), against torch.utils.data on the same data
where the result is deterministic: orders, batch shapes and dtypes, collate structure,
DistributedSampler's shards, random_split's sizes; reproducible shuffles; the argument checks.
Worker processes: test_data_workers.py."""

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import oneflowlike as flow
from oneflowlike.utils import data
from oneflowlike.utils.data._collate import to_flow
from oneflowlike.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    random_split,
)

Point = collections.namedtuple("Point", "x y")


def plain(batch):
    """A batch of either library as comparable Python: tensors as (dtype name, list)."""
    if isinstance(batch, (flow.Tensor, torch.Tensor)):
        return (str(batch.dtype).split(".")[-1], batch.numpy().tolist())
    if isinstance(batch, dict):
        return {k: plain(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return (type(batch).__name__, [plain(v) for v in batch])
    if isinstance(batch, (list, tuple)):
        return (type(batch).__name__, [plain(v) for v in batch])
    return batch


class Arrays(Dataset):
    """Sample i: a (2, 3) float32 array filled with i and the label i % 3."""

    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"sample {i} of {self.n}")
        return np.full((2, 3), i, np.float32), i % 3


class Stream(IterableDataset):
    def __init__(self, n=7):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class TorchStream(Stream, tud.IterableDataset):
    """The same stream for torch's DataLoader, which checks for its own base class."""


@pytest.mark.parametrize(
    "batch_size, drop_last",
    [(1, False), (3, False), (3, True), (4, False), (4, True), (None, False)],
)
def test_sequential_batches_equal_torch(batch_size, drop_last):
    ours = DataLoader(Arrays(), batch_size=batch_size, drop_last=drop_last)
    theirs = tud.DataLoader(Arrays(), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]


@pytest.mark.parametrize(
    "samples",
    [
        [1.5, 2.5],
        [1, 2],
        [True, False],
        [np.float32(1), np.float32(2)],
        [np.int32(1), np.int32(2)],
        ["a", "b"],
        [{"x": 1, "y": np.zeros(2, np.int64)}, {"x": 2, "y": np.ones(2, np.int64)}],
        [Point(1, 2.0), Point(3, 4.0)],
        [(1, "a", [1.0, 2.0]), (2, "b", [3.0, 4.0])],
        [[np.arange(3, dtype=np.uint8)], [np.arange(3, dtype=np.uint8)]],
        [np.array(1.0), np.array(2.0)],
        [np.zeros((2, 2), bool), np.ones((2, 2), bool)],
    ],
    ids=lambda s: type(s[0]).__name__,
)
def test_default_collate_equals_torch(samples):
    assert plain(default_collate(samples)) == plain(tud.default_collate(samples))


def test_default_collate_of_flow_tensors_stacks_on_a_new_dim():
    rows = [flow.tensor([[1.0, 2.0]]), flow.tensor([[3.0, 4.0]])]
    batch = default_collate(rows)
    assert isinstance(batch, flow.Tensor) and tuple(batch.shape) == (2, 1, 2)
    np.testing.assert_array_equal(batch.numpy(), [[[1, 2]], [[3, 4]]])
    strided = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).transpose(0, 1)
    np.testing.assert_array_equal(default_collate([strided, strided]).numpy()[1], strided.numpy())


def test_collated_batch_shares_memory_with_numpy():
    array = np.zeros(3, np.float32)
    batch = to_flow({"x": [array]})["x"][0]
    array[0] = 5  # the batch is a view: the worker's array is not copied again
    assert isinstance(batch, flow.Tensor) and batch.numpy().tolist() == [5, 0, 0]


def test_batch_size_none_converts_single_samples_like_torch():
    ours = [plain(b) for b in DataLoader(Arrays(4), batch_size=None)]
    assert ours == [plain(b) for b in tud.DataLoader(Arrays(4), batch_size=None)]


def test_tensor_dataset_subset_and_concat():
    x = flow.tensor(np.arange(12, dtype=np.float32).reshape(6, 2))
    y = flow.tensor(np.arange(6))
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    np.testing.assert_array_equal(ds[2][0].numpy(), [4, 5])
    assert int(ds[-1][1].numpy()) == 5
    with pytest.raises(IndexError, match=r"\[TensorDataset\] index 6 is out of range"):
        ds[6]
    with pytest.raises(ValueError, match=r"\[TensorDataset\].*\(6, 2\), \(5,\)"):
        TensorDataset(x, flow.tensor(np.arange(5)))
    sub = Subset(ds, [5, 0])
    assert len(sub) == 2 and int(sub[0][1].numpy()) == 5
    cat = ConcatDataset([Arrays(3), Arrays(2)])
    theirs = tud.ConcatDataset([Arrays(3), Arrays(2)])
    assert len(cat) == 5 and cat.cumulative_sizes == theirs.cumulative_sizes
    assert [cat[i][1] for i in range(-5, 5)] == [theirs[i][1] for i in range(-5, 5)]
    assert (Arrays(2) + Arrays(3)).cumulative_sizes == [2, 5]
    with pytest.raises(IndexError, match=r"\[ConcatDataset\] index 5"):
        cat[5]
    with pytest.raises(ValueError, match=r"\[ConcatDataset\] needs at least one"):
        ConcatDataset([])
    with pytest.raises(TypeError, match=r"\[ConcatDataset\].*IterableDataset"):
        ConcatDataset([Stream()])
    assert list(Stream(2) + Stream(3)) == [0, 1, 0, 1, 2]


@pytest.mark.parametrize("lengths", [[0.3, 0.7], [0.5, 0.25, 0.25], [0.33, 0.33, 0.34], [4, 6]])
@pytest.mark.parametrize("n", [10, 11])
def test_random_split_sizes_equal_torch_and_partition(lengths, n):
    if isinstance(lengths[0], int):
        lengths = lengths[:-1] + [n - sum(lengths[:-1])]
    g = torch.Generator().manual_seed(0)
    theirs = [len(s) for s in tud.random_split(range(n), lengths, generator=g)]
    parts = random_split(range(n), lengths, generator=flow.Generator().manual_seed(0))
    assert [len(p) for p in parts] == theirs
    assert sorted(i for p in parts for i in p) == list(range(n))


def test_random_split_is_reproducible_and_checks_lengths():
    def split(seed):
        return [
            list(p) for p in random_split(range(20), [5, 15], flow.Generator().manual_seed(seed))
        ]

    assert split(1) == split(1) and split(1) != split(2)
    with pytest.raises(ValueError, match=r"\[random_split\].*sum to 9, but the dataset has 20"):
        random_split(range(20), [4, 5])


def test_samplers_sequential_batch_and_their_lengths_equal_torch():
    assert list(SequentialSampler(range(5))) == list(tud.SequentialSampler(range(5)))
    for bs, drop in [(2, False), (2, True), (5, False), (7, True)]:
        ours = BatchSampler(SequentialSampler(range(5)), bs, drop)
        theirs = tud.BatchSampler(tud.SequentialSampler(range(5)), bs, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_random_sampler_is_a_reproducible_permutation():
    def order(seed, **kw):
        return list(RandomSampler(range(50), generator=flow.Generator().manual_seed(seed), **kw))

    assert sorted(order(0)) == list(range(50))
    assert order(0) == order(0) and order(0) != order(1)
    g = flow.Generator().manual_seed(3)
    sampler = RandomSampler(range(50), generator=g)
    assert list(sampler) != list(sampler)  # each epoch a new permutation
    more = order(0, num_samples=120)
    assert len(more) == 120 and sorted(more[:100]) == sorted(list(range(50)) * 2)
    drawn = order(0, replacement=True, num_samples=200)
    assert len(drawn) == 200 and set(drawn) <= set(range(50)) and len(set(drawn)) < 50
    flow.manual_seed(7)
    first = list(RandomSampler(range(50)))
    flow.manual_seed(7)
    assert list(RandomSampler(range(50))) == first  # the default generator


def test_samplers_with_replacement_draw_lazily():
    # 10**10 indices held at once would take 80 GB: the first ones must come without that.
    huge = 10**10
    for sampler in (
        RandomSampler(range(50), replacement=True, num_samples=huge),
        WeightedRandomSampler([1.0, 2.0, 3.0], huge),
    ):
        it = iter(sampler)
        first = [next(it) for _ in range(1000)]
        assert len(sampler) == huge and 0 <= min(first) and max(first) < 50


def test_subset_and_weighted_samplers():
    g = flow.Generator().manual_seed(0)
    assert sorted(SubsetRandomSampler([3, 9, 4], generator=g)) == [3, 4, 9]
    drawn = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 100, generator=g))
    assert set(drawn) == {1, 3} and drawn.count(3) > drawn.count(1)
    once = list(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False, generator=g))
    assert sorted(once) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match=r"\[WeightedRandomSampler\] weights must be 1-d"):
        WeightedRandomSampler([[1.0]], 1)
    with pytest.raises(ValueError, match=r"num_samples is 3 without replacement"):
        WeightedRandomSampler([1.0, 0.0], 3, replacement=False)


@pytest.mark.parametrize("n", [7, 10, 11])
@pytest.mark.parametrize("num_replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shards_equal_torch(n, num_replicas, shuffle, drop_last):
    for seed, epoch in [(0, 0), (7, 3)]:
        for rank in range(num_replicas):
            kw = dict(num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed)
            ours = DistributedSampler(range(n), drop_last=drop_last, **kw)
            theirs = tud.DistributedSampler(range(n), drop_last=drop_last, **kw)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_defaults_to_the_jobs_rank(monkeypatch):
    monkeypatch.setattr(flow.env, "get_world_size", lambda: 3)
    monkeypatch.setattr(flow.env, "get_rank", lambda: 2)
    s = DistributedSampler(range(9), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (3, 2, [2, 5, 8])
    with pytest.raises(
        ValueError, match=r"\[DistributedSampler\] rank is 3: it must be in \[0, 2\]"
    ):
        DistributedSampler(range(9), rank=3)


def test_shuffle_with_a_generator_is_reproducible():
    def epoch(seed):
        loader = DataLoader(
            Arrays(20), 4, shuffle=True, generator=flow.Generator().manual_seed(seed)
        )
        return [b[1].numpy().tolist() for b in loader]

    assert epoch(5) == epoch(5) and epoch(5) != epoch(6)
    assert sorted(np.concatenate(epoch(5)).tolist()) == sorted(i % 3 for i in range(20))


def test_iterable_dataset_batches_equal_torch():
    for bs, drop in [(3, False), (3, True), (None, False)]:
        ours = DataLoader(Stream(), batch_size=bs, drop_last=drop)
        theirs = tud.DataLoader(TorchStream(), batch_size=bs, drop_last=drop)
        assert [plain(b) for b in ours] == [plain(b) for b in theirs]
        assert len(ours) == len(theirs)
    assert data.get_worker_info() is None


def test_tqdm_runs_over_a_loader():
    tqdm = pytest.importorskip("tqdm").tqdm
    loader = DataLoader(Arrays(10), batch_size=4)
    bar = tqdm(loader, disable=False, file=open("/dev/null", "w"))
    assert bar.total == 3 and len(list(bar)) == 3


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_workers=-1), r"num_workers is -1"),
        (dict(timeout=-1), r"timeout is -1"),
        (dict(prefetch_factor=2), r"prefetch_factor is 2 but num_workers is 0"),
        (dict(num_workers=1, prefetch_factor=0), r"prefetch_factor is 0"),
        (dict(persistent_workers=True), r"persistent_workers is True but num_workers is 0"),
        (dict(batch_size=0), r"batch_size is 0: it must be a positive integer"),
        (dict(batch_size=-2), r"batch_size is -2"),
        (dict(shuffle=True, sampler=[0, 1]), r"shuffle is True and a sampler is given"),
        (dict(batch_sampler=[[0]], batch_size=2), r"batch_sampler is given with batch_size"),
        (dict(batch_sampler=[[0]], shuffle=True), r"batch_sampler is given with"),
        (dict(batch_sampler=[[0]], drop_last=True), r"batch_sampler is given with"),
        (dict(batch_size=None, drop_last=True), r"drop_last is True but batch_size is None"),
    ],
)
def test_dataloader_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=r"\[DataLoader\] " + match):
        DataLoader(Arrays(), **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(shuffle=True), r"shuffle is True but the dataset is an IterableDataset"),
        (dict(sampler=[0]), r"sampler is \[0\] but the dataset is an IterableDataset"),
        (dict(batch_sampler=[[0]]), r"batch_sampler is given but the dataset is an Iterable"),
    ],
)
def test_iterable_dataset_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=r"\[DataLoader\] " + match):
        DataLoader(Stream(), **kwargs)


def test_sampler_argument_errors():
    with pytest.raises(ValueError, match=r"\[BatchSampler\] batch_size is 0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(TypeError, match=r"\[BatchSampler\] drop_last is 1"):
        BatchSampler(range(3), 2, 1)
    with pytest.raises(ValueError, match=r"\[RandomSampler\] num_samples is 0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match=r"\[RandomSampler\] replacement is 'yes'"):
        RandomSampler(range(3), replacement="yes")


def test_custom_sampler_batch_sampler_and_collate_fn():
    loader = DataLoader(Arrays(), batch_sampler=[[0, 2], [5]], collate_fn=lambda b: b)
    assert [[s[1] for s in b] for b in loader] == [[0, 2], [2]] and len(loader) == 2
    loader = DataLoader(Arrays(), sampler=[9, 1, 4], batch_size=2)
    assert [b[1].numpy().tolist() for b in loader] == [[0, 1], [1]]


# Hostile input: errors that say what is wrong.


class Ragged(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return np.zeros(3 + i % 2, np.float32)


def test_ragged_samples_name_their_shapes():
    with pytest.raises(RuntimeError, match=r"different shapes: \(3,\) at entry 0 and \(4,\) at"):
        next(iter(DataLoader(Ragged(), batch_size=2)))
    with pytest.raises(RuntimeError, match=r"\(1,\) at entry 0 and \(2,\) at entry 1"):
        default_collate([flow.tensor([1.0]), flow.tensor([1.0, 2.0])])
    with pytest.raises(RuntimeError, match=r"sample 1 has 1 fields but sample 0 has 2"):
        default_collate([(1, 2), (1,)])
    with pytest.raises(TypeError, match=r"\[default_collate\] samples must be .*got object"):
        default_collate([object()])


def test_out_of_range_indices_from_a_sampler_raise():
    x = flow.tensor(np.arange(4, dtype=np.float32))
    with pytest.raises(IndexError, match=r"\[TensorDataset\] index 4 is out of range for 4"):
        list(DataLoader(TensorDataset(x), sampler=[0, 4], batch_size=2))
    with pytest.raises(IndexError, match=r"sample 10 of 10"):
        list(DataLoader(Arrays(), sampler=[10]))
