"""ZeRO in a graph: data parallelism whose optimizer states, gradients and parameters are sharded.

    python -m oneflowlike.distributed.launch --nproc_per_node 2 examples/tour/11_zero.py

A data-parallel graph (broadcast parameters, an S(0) batch) with `config.enable_zero(True,
stage=...)` keeps 1/N of the Adam states on each rank (stage 1), reduce-scatters the gradients
instead of all-reducing them (stage 2), and splits the parameters themselves (stage 3). Each
stage trains to the same parameters as no ZeRO at all; what changes is each rank's share.
"""

import numpy as np

import oneflowlike as flow

placement = flow.placement("cpu", ranks=[0, 1])
B, S = flow.sbp.broadcast, flow.sbp.split(0)
rng = np.random.default_rng(0)
x = flow.tensor(rng.standard_normal((16, 32)).astype(np.float32), placement=placement, sbp=S)
y = flow.tensor(rng.standard_normal((16, 4)).astype(np.float32), placement=placement, sbp=S)


class Step(flow.nn.Graph):
    def __init__(self, model, opt, stage):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        if stage:
            self.config.enable_zero(True, stage=stage, shard_min_size=1)

    def build(self, x, y):
        loss = flow.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        return loss


def train(stage):
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(32, 64), flow.nn.ReLU(), flow.nn.Linear(64, 4))
    model.to_global(placement, B)
    opt = flow.optim.Adam(model.parameters(), lr=1e-2)
    step = Step(model, opt, stage)
    losses = [step(x, y).item() for _ in range(5)]
    weight = model[0].weight
    state = opt.state[weight]["exp_avg"]
    return losses, weight.numpy(), tuple(state.to_local().shape), tuple(weight.to_local().shape)


losses, weights, _, _ = train(stage=0)
for stage in (1, 2, 3):
    got, got_weights, state_shape, weight_shape = train(stage)
    print(f"stage {stage}: losses {got[0]:.4f} -> {got[-1]:.4f}, this rank's Adam state of the "
          f"(64, 32) weight {state_shape}, its weight {weight_shape}")  # fmt: skip
    assert np.allclose(got, losses, rtol=1e-4) and np.allclose(got_weights, weights, atol=1e-5)
    assert state_shape == (32, 32)  # half the rows on each of the 2 ranks
    assert weight_shape == ((32, 32) if stage == 3 else (64, 32))
