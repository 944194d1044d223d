"""DistributedDataParallel: the model stays local, every rank trains on its part of the data.

    python -m oneflowlike.distributed.launch --nproc_per_node 2 examples/tour/10_ddp.py

`DistributedDataParallel` gives every rank rank 0's parameters, and averages the gradients over
the ranks while backward runs, so the ranks take the same optimizer steps. A
`DistributedSampler` hands each rank its share of the dataset. Here each rank starts from its
own seed, and after training the parameters are still equal everywhere (checked by an
all_gather), and equal to one process training on the whole batch.
"""

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
from oneflowlike.nn.parallel import DistributedDataParallel as DDP
from oneflowlike.utils.data import DataLoader, DistributedSampler, TensorDataset

rank, world = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
features = rng.standard_normal((64, 8)).astype(np.float32)
targets = features @ rng.standard_normal((8, 1)).astype(np.float32)
dataset = TensorDataset(flow.tensor(features), flow.tensor(targets))


def make_model(seed):
    flow.manual_seed(seed)
    return flow.nn.Sequential(flow.nn.Linear(8, 16), flow.nn.Tanh(), flow.nn.Linear(16, 1))


model = DDP(make_model(seed=rank))  # rank 0's parameters everywhere from here on
opt = flow.optim.SGD(model.parameters(), lr=0.05)
sampler = DistributedSampler(dataset, shuffle=False)  # rank r: samples r, r + world, ...
loader = DataLoader(dataset, batch_size=32 // world, sampler=sampler)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x, y in loader:
        loss = flow.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()  # the gradients arrive averaged over the ranks
        opt.step()
print(f"rank {rank}: last loss {loss.item():.4f}")

# Every rank holds the same parameters...
mine = flow.cat([p.detach().reshape(-1) for p in model.parameters()])
everyone = dist.all_gather(mine).numpy().reshape(world, -1)
assert np.allclose(everyone, everyone[0])
# ...and they are those of one process on the whole batches (rank 0's start, the same order).
alone = make_model(seed=0)
opt_alone = flow.optim.SGD(alone.parameters(), lr=0.05)
order = np.arange(64).reshape(-1, world).T.reshape(world, 2, -1)  # each rank's two batches
for epoch in range(3):
    for b in range(2):
        rows = np.concatenate([order[r, b] for r in range(world)])
        x, y = flow.tensor(features[rows]), flow.tensor(targets[rows])
        opt_alone.zero_grad()
        flow.nn.functional.mse_loss(alone(x), y).backward()
        opt_alone.step()
want = np.concatenate([p.detach().numpy().ravel() for p in alone.parameters()])
assert np.allclose(mine.numpy(), want, rtol=1e-4, atol=1e-5)
print(f"rank {rank}: parameters equal on every rank and to one process on the whole batch")
