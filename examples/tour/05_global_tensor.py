"""Global tensors: one logical tensor over a placement, laid out by an SBP.

    python -m oneflowlike.distributed.launch --nproc_per_node 2 examples/tour/05_global_tensor.py

Each of the 2 ranks holds a local tensor of 2 rows; `to_global` with `split(0)` makes them the
two halves of one (4, 5) tensor. `numpy()` on a global tensor gives the whole logical array on
every rank, `to_local()` the rank's own piece. Ops run on global tensors as on one device:
a matmul with a broadcast weight keeps the rows split and equals the one-device product.
"""

import numpy as np

import oneflowlike as flow

rank = flow.env.get_rank()
placement = flow.placement(type="cpu", ranks=[0, 1])

# The whole logical data, known here to every rank only so that the program can check itself.
whole = np.arange(20, dtype=np.float32).reshape(4, 5)
weight = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)

x = flow.tensor(whole[2 * rank : 2 * rank + 2])  # this rank's rows: a local tensor
print(f"rank {rank}: local {tuple(x.shape)}, is_local {x.is_local}")
x_global = x.to_global(placement=placement, sbp=flow.sbp.split(0))
print(f"rank {rank}: global {tuple(x_global.shape)} {x_global.sbp} on {x_global.placement}")
assert x_global.is_global and tuple(x_global.shape) == (4, 5)
assert np.array_equal(x_global.numpy(), whole)  # the logical tensor, on every rank
assert np.array_equal(x_global.to_local().numpy(), x.numpy())  # the rank's own piece

# A global tensor can also be made directly; broadcast: every rank holds all of it.
w = flow.tensor(weight, placement=placement, sbp=flow.sbp.broadcast)
y = flow.matmul(x_global, w)  # S(0) x B -> S(0): each rank multiplies its own rows
print(f"rank {rank}: x @ w is {tuple(y.shape)} {y.sbp}, local {tuple(y.to_local().shape)}")
assert y.sbp == (flow.sbp.split(0),)
assert np.allclose(y.numpy(), whole @ weight, rtol=1e-6)

# A reduction over the split axis leaves partial sums; reading it adds them up.
total = y.sum(dim=0)
assert total.sbp == (flow.sbp.partial_sum,)
assert np.allclose(total.numpy(), (whole @ weight).sum(axis=0), rtol=1e-5)
print(f"rank {rank}: y.sum(dim=0) is {total.sbp}; x @ w equals the one-device product")
