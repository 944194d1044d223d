"""One side of bench_vs_oneflow.py: the same program under OneFlow 0.9 (--side oneflow, in its own
venv) or under us (--side oneflowlike), printing one JSON line per case with seconds per call.

    --case ops      eager ops, one process, and dispatch (a 1-element add)
    --case gpt      the example char-GPT's training step (AdamW), eager and as an nn.Graph
    --case parallel the GPT's step on every rank, data and tensor parallel, eager and as a graph
    --case boxing   x.to_global(sbp=...) for each pair
    (parallel and boxing are started by the side's own launcher: python -m
    oneflow.distributed.launch / oneflowlike.distributed.launch)

OneFlow's eager ops run asynchronously (its virtual machine): every timed loop ends by reading a
result back (.numpy()), on both sides, so a time is the work done, not the work queued.
"""

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def best_of(call, sync, iters, rounds=5):
    """Best mean seconds per call over rounds, each closed by sync (reading a result back)."""
    sync(call())
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            out = call()
        sync(out)
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def emit(case, seconds, **extra):
    print(json.dumps({"case": case, "s": seconds, **extra}), flush=True)


def run_ops(flow):
    F = flow.nn.functional
    rng = np.random.default_rng(0)

    def t(*shape):
        return flow.tensor(rng.standard_normal(shape).astype(np.float32))

    def sync(out):
        out.numpy()

    big, mat = t(1 << 20), t(512, 512)
    rows, img = t(256, 1024), t(8, 32, 32, 32)
    w_conv, gamma, beta = t(32, 32, 3, 3), t(1024), t(1024)
    tiny = t(1)
    cases = {
        "add 1M": (lambda: big + big, 50),
        "mul 1M": (lambda: big * big, 50),
        "relu 1M": (lambda: F.relu(big), 50),
        "exp 1M": (lambda: flow.exp(big), 50),
        "sum 1M": (lambda: big.sum(), 50),
        "softmax 256x1024": (lambda: F.softmax(rows, dim=-1), 50),
        "layer_norm 256x1024": (lambda: F.layer_norm(rows, (1024,), gamma, beta), 50),
        "matmul 512": (lambda: flow.matmul(mat, mat), 20),
        "conv2d 8x32x32x32 k3": (lambda: F.conv2d(img, w_conv, padding=1), 10),
        "dispatch (1-element add)": (lambda: tiny + tiny, 2000),
    }
    for name, (call, iters) in cases.items():
        emit(name, best_of(call, sync, iters))


class _TrainStep:
    """An nn.Graph of forward, backward and the optimizer's step, as OneFlow's tutorials write it
    (made a subclass of the side's own nn.Graph in run_gpt)."""

    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        _, loss = self.model(x, y)
        loss.backward()
        return loss


def training_step(flow, model, x, y, mode):
    """The model's AdamW step on (x, y) as a function to time: eager, or as an nn.Graph."""
    from model_loader import train_step

    opt = flow.optim.AdamW(model.parameters(), lr=1e-3)
    if mode == "eager":
        return train_step(model, opt, x, y)
    graph = type("TrainStep", (_TrainStep, flow.nn.Graph), {})(model, opt)
    return lambda: graph(x, y)


def run_gpt(flow, side, args):
    from model_loader import load_model_module

    m = load_model_module(side)
    # OneFlow 0.9 has no scaled_dot_product_attention: both sides write attention out.
    cfg = m.GPTConfig(96, args.block_size, args.n_layer, args.n_head, args.n_embd)
    cfg.fused_attention = False
    rng = np.random.default_rng(0)
    x, y = (
        flow.tensor(rng.integers(0, 96, (args.batch_size, args.block_size)).astype(np.int64))
        for _ in range(2)
    )
    for mode in ("eager", "graph"):
        flow.manual_seed(0)
        model = m.GPT(cfg)
        step = training_step(flow, model, x, y, mode)
        emit(f"GPT step ({mode})", best_of(step, lambda out: out.numpy(), args.steps, rounds=3))


def tensor_parallel(flow, name):
    """gpt_layouts.megatron's rule in the side's own SBPs (gpt_layouts imports oneflowlike): q/k/v
    and the MLP's fc split by output features, the projections' weights by input features, the
    embedding and LM head by vocabulary, the rest replicated."""
    column = any(f".{m}." in f".{name}" for m in ("query", "key", "value", "mlp.fc"))
    if column or name in ("tok_emb.weight", "head.weight"):
        return flow.sbp.split(0)
    if name.endswith(("attn.proj.weight", "mlp.proj.weight")):
        return flow.sbp.split(1)
    return flow.sbp.broadcast


def run_parallel(flow, side, args):
    """The GPT's training step on every rank, data parallel (B parameters, an S(0) batch) and
    tensor parallel (Megatron's SBPs, a B batch), eager and as an nn.Graph."""
    from model_loader import load_model_module

    m = load_model_module(side)
    cfg = m.GPTConfig(96, args.block_size, args.n_layer, args.n_head, args.n_embd)
    cfg.fused_attention = False
    rank, world = flow.env.get_rank(), flow.env.get_world_size()
    place = flow.placement("cpu", ranks=list(range(world)))
    B, S = flow.sbp.broadcast, flow.sbp.split
    rng = np.random.default_rng(0)
    data = [rng.integers(0, 96, (args.batch_size, args.block_size)) for _ in range(2)]
    for layout in ("dp", "tp"):
        x, y = (
            flow.tensor(a.astype(np.int64))
            .to_global(placement=place, sbp=B)
            .to_global(sbp=S(0) if layout == "dp" else B)
            for a in data
        )
        for mode in ("eager", "graph"):
            flow.manual_seed(0)
            model = m.GPT(cfg)
            model.to_global(placement=place, sbp=B)
            if layout == "tp":
                for name, param in list(model.named_parameters()):
                    *path, attr = name.split(".")
                    module = model
                    for part in path:
                        module = getattr(module, part)
                    laid = param.to_global(sbp=tensor_parallel(flow, name))
                    setattr(module, attr, flow.nn.Parameter(laid))
            step = training_step(flow, model, x, y, mode)
            seconds = best_of(step, lambda out: out.to_local().numpy(), args.steps, rounds=3)
            if rank == 0:
                emit(f"GPT {layout} step x{world} ({mode})", seconds)


PAIRS = ("S(0)->B", "P->B", "P->S(0)", "S(0)->S(1)", "B->S(0)", "S(1)->S(0)")


def run_boxing(flow, args):
    rank, world = flow.env.get_rank(), flow.env.get_world_size()
    place = flow.placement("cpu", ranks=list(range(world)))
    sbp = {"B": flow.sbp.broadcast, "P": flow.sbp.partial_sum}
    sbp.update({f"S({d})": flow.sbp.split(d) for d in (0, 1)})

    def sync(out):
        out.to_local().numpy()

    for pair in PAIRS:
        src, dst = pair.split("->")
        for nbytes in [int(s) for s in args.sizes.split(",")]:
            rows = nbytes // 4 // 1024
            shape = (rows, 1024)
            if src.startswith("S"):
                d = int(src[2])
                local_shape = list(shape)
                local_shape[d] //= world
            else:
                local_shape = shape
            local = flow.tensor(np.ones(local_shape, dtype=np.float32))
            x = local.to_global(placement=place, sbp=sbp[src])
            iters = max(4, min(64, (256 << 20) // nbytes))
            seconds = best_of(lambda: x.to_global(sbp=sbp[dst]), sync, iters, rounds=4)
            if rank == 0:
                emit(f"{pair} {nbytes >> 20} MB x{world}", seconds)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--side", required=True, choices=["oneflow", "oneflowlike"])
    ap.add_argument("--case", required=True, choices=["ops", "gpt", "parallel", "boxing"])
    ap.add_argument("--sizes", default=f"{1 << 20},{16 << 20},{64 << 20}")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    flow = importlib.import_module(args.side)
    if args.case == "ops":
        run_ops(flow)
    elif args.case == "gpt":
        run_gpt(flow, args.side, args)
    elif args.case == "parallel":
        run_parallel(flow, args.side, args)
    else:
        run_boxing(flow, args)


if __name__ == "__main__":
    main()
