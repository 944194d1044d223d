"""A small CNN (conv, batch norm, max and average pooling, linear) trained a few steps under one
layout; prints one JSON line with the losses and the final parameters and running statistics
(whole tensors, on rank 0). Run alone (--layout single) or through the launcher:

    dp: the batch S(0), every parameter B (batch norm's statistics over the whole batch)
    cp: the batch B, the convolutions and batch norm split by channel (S(0))

With --graph, each step runs as an nn.Graph (forward, backward and SGD traced once).
"""

import argparse
import json

import numpy as np

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F

S, B = flow.sbp.split, flow.sbp.broadcast


def channel_split(name, t):
    return S(0) if name.startswith(("0.", "1.", "4.")) and t.dim() > 0 else B


LAYOUTS = {"dp": (lambda n, t: B, S(0)), "cp": (channel_split, B)}


class TrainStep(flow.nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layout", default="single", choices=["single", *LAYOUTS])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--graph", action="store_true")
    args = ap.parse_args()
    flow.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),  # 0
        nn.BatchNorm2d(8),  # 1
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 6, 3, padding=1),  # 4
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(6 * 2 * 2, 5),
    )
    rng = np.random.default_rng(0)
    x = flow.tensor(rng.standard_normal((6, 3, 8, 8)).astype(np.float32))
    y = flow.tensor(rng.integers(0, 5, 6))
    rank = 0
    if args.layout != "single":
        param_sbp, batch_sbp = LAYOUTS[args.layout]
        place = flow.placement("cpu", ranks=list(range(flow.distributed.get_world_size())))
        model.to_global(place, param_sbp)
        x = x.to_global(place, B).to_global(sbp=batch_sbp)
        y = y.to_global(place, B).to_global(sbp=batch_sbp)
        rank = flow.distributed.get_rank()
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    step = TrainStep(model, opt) if args.graph else None
    for _ in range(args.steps):
        if step is not None:
            loss = step(x, y)
        else:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(float(loss.numpy()))
    state = {k: np.array(v.numpy()).tolist() for k, v in model.state_dict().items()}
    if rank == 0:
        print(json.dumps({"losses": losses, "state": state}), flush=True)


if __name__ == "__main__":
    main()
