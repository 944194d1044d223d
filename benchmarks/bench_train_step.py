"""One training step (forward, backward, AdamW) of the example char-GPT, eager and in graph mode
(nn.Graph), against PyTorch CPU eager.

python benchmarks/bench_train_step.py [--batch-size 64] [--block-size 64] [--n-embd 128]

The PyTorch model is the very same source file (examples/char_gpt/model.py) loaded with
`oneflowlike` replaced by `torch`, so both run the same architecture and initialisation scheme.
"""

import argparse
import importlib.util
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import bench, report, run_child  # noqa: E402
from model_loader import graph_train_step, load_model_module, train_step  # noqa: E402


def make_step(framework, args, x_np, y_np, graph=False):
    lib = __import__(framework)
    m = load_model_module(framework)
    lib.manual_seed(0)
    cfg = m.GPTConfig(
        vocab_size=96,
        block_size=args.block_size,
        n_layer=args.n_layer,
        n_head=args.n_head,
        n_embd=args.n_embd,
    )
    model = m.GPT(cfg)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = lib.from_numpy(x_np), lib.from_numpy(y_np)
    return graph_train_step(model, opt, x, y) if graph else train_step(model, opt, x, y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--lib", help=argparse.SUPPRESS)  # child mode: measure one library
    args = ap.parse_args()
    name = f"train step B={args.batch_size} T={args.block_size} C={args.n_embd} L={args.n_layer}"
    if args.lib:
        rng = np.random.default_rng(0)
        shape = (args.batch_size, args.block_size)
        x_np = rng.integers(0, 96, shape, dtype=np.int64)
        y_np = rng.integers(0, 96, shape, dtype=np.int64)
        times = {name: bench(make_step(args.lib, args, x_np, y_np), min_time=2.0, repeats=3)}
        if args.lib == "oneflowlike":
            step = make_step(args.lib, args, x_np, y_np, graph=True)
            times[name + " graph"] = bench(step, min_time=2.0, repeats=3)
        print(json.dumps(times))
        return
    extra = sys.argv[1:]
    peers = ["torch"] if importlib.util.find_spec("torch") else []
    ours = run_child(__file__, "oneflowlike", extra)
    others = {p: run_child(__file__, p, extra)[name] for p in peers}
    # PyTorch's column is its eager step on both rows.
    report([(name, ours[name], others), (name + " graph", ours[name + " graph"], others)], peers)


if __name__ == "__main__":
    main()
