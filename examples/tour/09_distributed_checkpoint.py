"""Distributed checkpoints: save a global model on 2 ranks, load it into another layout.

    python -m oneflowlike.distributed.launch --nproc_per_node 2 examples/tour/09_distributed_checkpoint.py

`flow.save` of state dicts holding global tensors writes a folder: each rank writes the pieces
it holds, rank 0 an index. Here the model is sharded ZeRO-style (every parameter, and so its
gradient and AdamW's states, split along dim 0) and trained 3 steps. The checkpoint is loaded
into a model whose parameters are broadcast instead: `flow.load(dir, like=...)` reshards on
load. The loaded parameters equal the saved ones, and training goes on with the same losses as
the model that was never saved. The checkpoint goes to a temporary folder, removed at the end.
"""

import os
import shutil
import tempfile

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
import oneflowlike.nn as nn

placement = flow.placement("cpu", ranks=[0, 1])
S0, B = flow.sbp.split(0), flow.sbp.broadcast
rank = flow.env.get_rank()

# One folder for both ranks: rank 0 makes it and tells the other through the launcher's store.
if rank == 0:
    dist.store().set("tour_checkpoint_dir", tempfile.mkdtemp(prefix="tour_ckpt_"))
ckpt = os.path.join(dist.store().get("tour_checkpoint_dir").decode(), "step3")

rng = np.random.default_rng(0)
x = flow.tensor(rng.standard_normal((16, 8)).astype(np.float32), placement=placement, sbp=S0)
y = flow.tensor(rng.standard_normal((16, 2)).astype(np.float32), placement=placement, sbp=S0)


def setup(sbp):
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 2))
    model.to_global(placement, sbp)
    return model, flow.optim.AdamW(model.parameters(), lr=0.01)


def train(model, optimizer, steps):
    losses = []
    for _ in range(steps):
        loss = (model(x) - y).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.numpy().item())
    return losses


sharded, sharded_opt = setup(S0)
train(sharded, sharded_opt, 3)
flow.save({"model": sharded.state_dict(), "optim": sharded_opt.state_dict(), "step": 3}, ckpt)
shards = [f for f in os.listdir(ckpt) if f.endswith(".safetensors")]
if rank == 0:
    print(f"saved S(0) parameters: index.json and {len(shards)} shards, one per rank")
assert len(shards) == 2 and os.path.exists(os.path.join(ckpt, "index.json")), os.listdir(ckpt)

replicated, replicated_opt = setup(B)
train(replicated, replicated_opt, 1)  # other values until the checkpoint is loaded
state = flow.load(ckpt, like={"model": replicated.state_dict()})
replicated.load_state_dict(state["model"])
replicated_opt.load_state_dict(state["optim"])
assert state["step"] == 3 and replicated[0].weight.sbp == (B,)
for (name, p), q in zip(replicated.named_parameters(), sharded.parameters()):
    assert np.array_equal(p.numpy(), q.numpy()), name

want = train(sharded, sharded_opt, 3)  # the run that was never interrupted
got = train(replicated, replicated_opt, 3)
if rank == 0:
    print("uninterrupted (S(0)):", " ".join(f"{v:.5f}" for v in want))
    print("loaded as B:         ", " ".join(f"{v:.5f}" for v in got))
assert np.allclose(got, want, rtol=1e-5), (got, want)

dist.barrier()  # both ranks are done with the folder
if rank == 0:
    shutil.rmtree(os.path.dirname(ckpt))
