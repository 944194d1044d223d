"""Eager ZeRO: parameters split on dim 0 (S(0)), a batch split on dim 0, AdamW. Trains as one
process does, and from the second step on gathers every parameter in one fused all-gather in the
forward and none again in the backward (global/gather_ahead), unless OFL_GATHER_AHEAD=0, where
each op gathers its own. A parameter written in place between two forwards (no backward between)
is gathered again. Prints one JSON line of problems."""

import os

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
import oneflowlike.nn as nn
from _common import report

S, B = flow.sbp.split, flow.sbp.broadcast


class Mix(nn.Module):
    """x @ W with a square W: its backward takes W.t(), a view made without history."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(flow.randn(n, n) / n)

    def forward(self, x):
        return x @ self.weight


def model():
    flow.manual_seed(3)
    return nn.Sequential(
        nn.Linear(8, 32),
        nn.GELU(),
        nn.LayerNorm(32),
        nn.Linear(32, 8, bias=False),
        nn.Tanh(),
        Mix(8),
    )


def main():
    rank, world = dist.get_rank(), dist.get_world_size()
    ahead = os.environ.get("OFL_GATHER_AHEAD") != "0"
    place = flow.placement("cpu", ranks=list(range(world)))
    problems = []

    def check(name, ok):
        if not ok:
            problems.append(name)

    x_np = np.random.default_rng(0).standard_normal((64 * world, 8)).astype(np.float32)
    ref, glob = model(), model()
    glob.to_global(place, S(0))
    x = flow.tensor(x_np).to_global(place, B).to_global(sbp=S(0))
    opts = [flow.optim.AdamW(m.parameters(), lr=1e-2) for m in (ref, glob)]
    param_bytes = sum(p.numel() * 4 for p in glob.parameters())
    for step in range(3):
        with flow.boxing.comm_log() as log:
            for m, xs, opt in ((ref, flow.tensor(x_np), opts[0]), (glob, x, opts[1])):
                opt.zero_grad()
                (m(xs) ** 2).mean().backward()
                opt.step()
        gathers = [line for line in log if line.startswith("all_gather")]
        if step > 0:
            # Off, each op gathers its own (the backward's matmuls again).
            n = len(list(glob.parameters()))
            ok = len(gathers) == 1 if ahead else len(gathers) > n
            check(f"step {step}: {len(gathers)} all-gathers {gathers}", ok)
            if ahead:
                check(
                    f"step {step}: {gathers} is not one gather of {param_bytes} B",
                    gathers[0].endswith(f" {param_bytes} B"),
                )
    for (name, p), q in zip(glob.named_parameters(), ref.parameters()):
        check(f"{name} after 3 steps", np.allclose(p.numpy(), q.numpy(), atol=1e-5))

    # A forward without a backward keeps its gathers; writing a parameter in place retires its.
    for m in (ref, glob):
        m(x if m is glob else flow.tensor(x_np))
        with flow.no_grad():
            m[0].weight.mul_(2.0)
    got, want = glob(x).numpy(), ref(flow.tensor(x_np)).numpy()
    check("forward after an in-place write", np.allclose(got, want, atol=1e-5))
    report(rank=rank, problems=problems)


if __name__ == "__main__":
    main()
