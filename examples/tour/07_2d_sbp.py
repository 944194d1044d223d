"""2D SBP: four ranks as a 2x2 mesh, one SBP per mesh axis.

    python -m oneflowlike.distributed.launch --nproc_per_node 4 examples/tour/07_2d_sbp.py

`ranks=[[0, 1], [2, 3]]` arranges the ranks as a 2x2 device array; a global tensor on it takes
a tuple of two SBPs. `(broadcast, split(0))`: along mesh axis 0 the two groups hold the same
data, and inside each group the rows are split. SBP signatures are derived per mesh axis, so
(B, S(0)) x (S(1), B) -> (S(1), S(0)) for a matmul. Then, as in OneFlow's 2D SBP tutorial, a
model broadcast on the mesh trains on a batch laid out (B, S(0)), matching one device.
"""

import numpy as np

import oneflowlike as flow
import oneflowlike.nn as nn

PLACEMENT = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)
BROADCAST = (B, B)
BS0 = (B, S0)
rank = flow.env.get_rank()

rng = np.random.default_rng(0)
a = rng.standard_normal((8, 6)).astype(np.float32)
w = rng.standard_normal((6, 4)).astype(np.float32)
x = flow.tensor(a, placement=PLACEMENT, sbp=BS0)  # flow.tensor: the data is the logical tensor
print(f"rank {rank}: x is {tuple(x.shape)}, local {tuple(x.to_local().shape)}")
assert tuple(x.to_local().shape) == (4, 6)
assert np.array_equal(x.to_local().numpy(), a[4 * (rank % 2) : 4 * (rank % 2) + 4])

with flow.boxing.comm_log() as log:
    y = flow.matmul(x, flow.tensor(w, placement=PLACEMENT, sbp=(S1, B)))
assert y.sbp == (S1, S0) and log == [], (y.sbp, log)  # each rank: its rows times its columns
assert np.allclose(y.numpy(), a @ w, rtol=1e-5, atol=1e-6)
if rank == 0:
    print(f"(B, S(0)) x (S(1), B) -> {y.sbp}, local {tuple(y.to_local().shape)}, no communication")


def make_model():
    flow.manual_seed(0)  # the same initial parameters on every rank and in the reference
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))


def train(model, x, y, steps=5):
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        loss = (model(x) - y).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.numpy().item())
    return losses


target = rng.standard_normal((8, 2)).astype(np.float32)
reference = train(make_model(), flow.tensor(a), flow.tensor(target))  # one device, same data
model = make_model().to_global(placement=PLACEMENT, sbp=BROADCAST)
losses = train(model, x, flow.tensor(target, placement=PLACEMENT, sbp=BS0))
if rank == 0:
    print("2x2 mesh:  ", " ".join(f"{v:.5f}" for v in losses))
    print("one device:", " ".join(f"{v:.5f}" for v in reference))
assert np.allclose(losses, reference, rtol=1e-5), (losses, reference)
assert losses[-1] < losses[0], losses
assert model[0].weight.grad.sbp == BROADCAST  # the gradients were all-reduced over the mesh
