"""Graph mode's elementwise fusion against the same graphs unfused (OFL_GRAPH_FUSION=0): chains
that a model's step holds, at a size that fits the caches and at one that does not.

python benchmarks/bench_fusion.py [--rounds 5]

Each round runs one child process per setting, fused then unfused, so that a neighbour's load that
comes and goes moves one round, not the figure. Prints each case's median time per setting and
unfused / fused (>1: fusion is faster) as the median and range over the rounds.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import bench, fmt_time  # noqa: E402

SHAPES = [(1024, 4096), (64, 64, 512), (4, 1024)]


def cases(flow, F):
    """name -> a function of (x, r): a bias, GELU and residual (an MLP's); a residual sum kept for
    later with its GELU (two outputs reach memory, one read is saved); a longer chain."""

    def residual_and_gelu(x, r):
        h = x + r
        return h, F.gelu(h)

    return {
        "bias_gelu_residual": lambda x, r: F.gelu(x + r[0]) + r,
        "residual_and_gelu": residual_and_gelu,
        "tanh_chain": lambda x, r: flow.tanh((x + r) * 2 - x) * r,
    }


def measure():
    """In a child: seconds per call of each case's graph at each shape, as JSON."""
    import numpy as np

    import oneflowlike as flow
    import oneflowlike.nn.functional as F

    class Call(flow.nn.Graph):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def build(self, *xs):
            return self.fn(*xs)

    rng = np.random.default_rng(0)
    out = {}
    for shape in SHAPES:
        x, r = (flow.tensor(rng.standard_normal(shape).astype(np.float32)) for _ in range(2))
        for name, fn in cases(flow, F).items():
            graph = Call(fn)
            out[f"{name} {'x'.join(map(str, shape))}"] = bench(lambda: graph(x, r))
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return measure()
    times = {"fused": [], "unfused": []}
    for _ in range(args.rounds):
        for setting, flag in (("fused", "1"), ("unfused", "0")):
            env = dict(os.environ, OFL_GRAPH_FUSION=flag)
            out = subprocess.run(
                [sys.executable, __file__, "--child"], env=env, capture_output=True, text=True
            )
            if out.returncode:
                sys.exit(f"the {setting} child failed:\n{out.stderr[-2000:]}")
            times[setting].append(json.loads(out.stdout.splitlines()[-1]))
    print(f"cores: {os.cpu_count()}; {args.rounds} rounds; ratio = unfused / fused")
    print(f"{'case':36} {'fused':>10} {'unfused':>10} {'ratio':>7} {'range':>11}")
    for case in times["fused"][0]:
        fused = [t[case] for t in times["fused"]]
        unfused = [t[case] for t in times["unfused"]]
        ratios = [u / f for u, f in zip(unfused, fused)]
        print(
            f"{case:36} {fmt_time(statistics.median(fused)):>10} "
            f"{fmt_time(statistics.median(unfused)):>10} {statistics.median(ratios):6.2f}x "
            f"{min(ratios):5.2f}-{max(ratios):.2f}"
        )


if __name__ == "__main__":
    main()
