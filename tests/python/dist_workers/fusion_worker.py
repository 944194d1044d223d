"""Elementwise fusion on global tensors: a graph's bias + gelu + scaling chain behind a matmul
whose weight is split (so the chain runs on S(1) shards) and a residual add over S(0) rows fuse
into nodes that keep their parts' layouts and give what eager mode gives, bit for bit. Prints one
JSON line of problems (empty when all is well)."""

import numpy as np

import oneflowlike as flow
from _common import report

B, S = flow.sbp.broadcast, flow.sbp.split


class Call(flow.nn.Graph):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, *xs):
        return self.fn(*xs)


def chain(x, b, w):
    h = flow.nn.functional.gelu(flow.matmul(x, w) + b) * 0.5
    return h, flow.tanh(x) + x * 2


def main():
    place = flow.placement("cpu", ranks=[0, 1])
    rng = np.random.default_rng(0)
    x = flow.tensor(rng.standard_normal((8, 33)).astype(np.float32), placement=place, sbp=S(0))
    b = flow.tensor(rng.standard_normal((33,)).astype(np.float32), placement=place, sbp=B)
    w = flow.tensor(rng.standard_normal((33, 33)).astype(np.float32), placement=place, sbp=S(1))
    graph = Call(chain)
    got = graph(x, b, w)
    want = chain(x, b, w)
    problems = []
    for i, (g, e) in enumerate(zip(got, want)):
        if tuple(g.sbp) != tuple(e.sbp):
            problems.append(f"output {i} is {g.sbp}, eagerly {e.sbp}")
        g, e = (t.to_global(place, B).to_local().numpy() for t in (g, e))
        if not np.array_equal(g, e):
            problems.append(f"output {i} differs from eager by {np.abs(g - e).max()}")
    ir = repr(graph)
    fused = [line for line in ir.splitlines() if "_fused_elementwise" in line]
    if len(fused) != 2:
        problems.append(f"expected 2 fused nodes, got:\n{ir}")
    elif "S(1)" not in fused[0] or "S(0)" not in fused[1]:
        problems.append(f"the fused nodes lost their parts' layouts:\n{ir}")
    report(rank=flow.env.get_rank(), problems=problems)


main()
