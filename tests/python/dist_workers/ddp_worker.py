"""DistributedDataParallel on real ranks against one process training on the whole batch.

Every rank starts its model from its own seed; DDP must broadcast rank 0's. Each rank then
trains on its rows of a fixed batch, and also trains the reference (rank 0's start, the whole
batch) alone, so it can compare without talking to anyone. Prints one JSON line of problems.
"""

import sys
import warnings

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
import oneflowlike.nn as nn
from oneflowlike.nn.parallel import DistributedDataParallel as DDP
from _common import report

R, P = dist.get_rank(), dist.get_world_size()
PROBLEMS = []
BATCH = 6 * P  # every rank the same number of rows, so the mean of means is the mean


class Net(nn.Module):
    """No batch norm in the models compared with one process: it normalises by each rank's rows."""

    def __init__(self, unused=False, bn=False):
        super().__init__()
        self.fc1 = nn.Linear(5, 16)
        self.bn = nn.BatchNorm1d(16) if bn else nn.Identity()
        self.fc2 = nn.Linear(16, 3)
        self.spare = nn.Linear(3, 3) if unused else None

    def forward(self, x):
        return self.fc2(flow.relu(self.bn(self.fc1(x))))


def data():
    rng = np.random.default_rng(42)
    x = rng.standard_normal((BATCH, 5)).astype(np.float32)
    y = rng.standard_normal((BATCH, 3)).astype(np.float32)
    return x, y


def mine(a):
    return a[R * 6 : (R + 1) * 6]


def expect(what, got, want, tol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol):
        PROBLEMS.append(f"{what}: rank {R} got {got.ravel()[:4]}, want {want.ravel()[:4]}")


def params_of(model):
    return {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


def seed_of(rank):
    return 100 + rank  # every rank starts elsewhere


def start_of_rank0(unused=False):
    flow.manual_seed(seed_of(0))
    return params_of(Net(unused))


def train(model, step_rows, steps=3, micro=1, opt_model=None):
    """SGD steps; each step backward()s `micro` slices of step_rows() (no_sync for all but the
    last when the model is DDP)."""
    opt = flow.optim.SGD((opt_model or model).parameters(), lr=0.1, momentum=0.9)
    x, y = step_rows()
    for _ in range(steps):
        opt.zero_grad()
        xs, ys = np.array_split(x, micro), np.array_split(y, micro)
        for k in range(micro):
            last = k == micro - 1
            ctx = model.no_sync() if isinstance(model, DDP) and not last else _Nothing()
            with ctx:
                out = model(flow.tensor(xs[k]))
                loss = ((out - flow.tensor(ys[k])) ** 2).mean() / micro
                loss.backward()
        opt.step()


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def reference(steps=3, micro=1, unused=False):
    flow.manual_seed(seed_of(0))
    model = Net(unused)
    train(model, data, steps, micro)
    return params_of(model)


def check_broadcast_and_training(**ddp_args):
    flow.manual_seed(seed_of(R))
    model = Net()
    ddp = DDP(model, **ddp_args)
    for n, v in params_of(model).items():
        expect(f"{ddp_args} broadcast {n}", v, start_of_rank0()[n], 0)
    train(ddp, lambda: tuple(map(mine, data())))
    want = reference()
    for n, v in params_of(model).items():
        expect(f"{ddp_args} trained {n}", v, want[n])
    return ddp


def check_no_sync():
    flow.manual_seed(seed_of(R))
    model = Net()
    ddp = DDP(model)
    train(ddp, lambda: tuple(map(mine, data())), micro=2)
    want = reference(micro=1)  # two halves accumulated, then averaged: the whole batch
    for n, v in params_of(model).items():
        expect(f"no_sync {n}", v, want[n])


def check_buffers_come_from_rank0():
    flow.manual_seed(0)
    model = Net(bn=True)
    ddp = DDP(model)
    model.bn.running_mean.fill_(float(R))
    seen = []
    model.register_forward_pre_hook(lambda m, args: seen.append(m.bn.running_mean.numpy().copy()))
    ddp(flow.tensor(mine(data()[0])))
    expect("broadcast_buffers", seen[0], np.zeros(16, np.float32), 0)


def check_unused_parameters():
    flow.manual_seed(seed_of(R))
    model = Net(unused=True)
    ddp = DDP(model, find_unused_parameters=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # expected unused parameters pass silently
        train(ddp, lambda: tuple(map(mine, data())))
    want = reference(unused=True)
    for n, v in params_of(model).items():
        expect(f"unused {n}", v, want[n])
    if model.spare.weight.grad is None or np.any(model.spare.weight.grad.numpy() != 0):
        PROBLEMS.append("an unused parameter's gradient should be the average of zeros")


def main():
    for args in ({}, {"bucket_cap_mb": 0.0005}, {"use_bucket": False}, {"bucket_size": 2}):
        ddp = check_broadcast_and_training(**args)
    stats = dict(ddp.last_sync)
    check_no_sync()
    check_buffers_come_from_rank0()
    check_unused_parameters()
    report(rank=R, problems=PROBLEMS[:5], last_sync=stats)


if __name__ == "__main__":
    sys.exit(main())
