"""A rank started by a scheduler (srun, mpirun, a PyTorchJob pod) or by our launcher: it joins
from the environment alone, all-reduces its rank + 1, trains a small model for 3 steps on a
global batch split over the ranks (data parallel), and prints one JSON line with the losses and
each parameter's sum and sum of squares at the end."""

import json
import sys

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist

dist.init()
t = flow.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)

place = flow.placement("cpu", ranks=list(range(dist.get_world_size())))
flow.manual_seed(0)
model = flow.nn.Sequential(flow.nn.Linear(8, 16), flow.nn.Tanh(), flow.nn.Linear(16, 1))
model.to_global(place, flow.sbp.broadcast)
opt = flow.optim.SGD(model.parameters(), lr=0.1)
rng = np.random.default_rng(0)
x = flow.tensor(rng.standard_normal((12, 8)).astype(np.float32))
y = flow.tensor(rng.standard_normal((12, 1)).astype(np.float32))
x, y = (v.to_global(place, flow.sbp.broadcast).to_global(sbp=flow.sbp.split(0)) for v in (x, y))
losses = []
for _ in range(3):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.to_global(sbp=flow.sbp.broadcast).to_local().item())
# Each parameter's sum and sum of squares: a short line.
weights = [
    [float(w.sum()), float((w * w).sum())]
    for w in (p.to_local().numpy().astype(np.float64) for p in model.parameters())
]
report = {"rank": dist.get_rank(), "world": dist.get_world_size(),
          "local_rank": dist.get_local_rank(), "sum": t.item(),
          "losses": losses, "weights": weights}  # fmt: skip
sys.stdout.write(json.dumps(report) + "\n")  # one write: ranks sharing a pipe do not interleave
sys.stdout.flush()
