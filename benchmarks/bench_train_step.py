"""One training step (forward, backward, AdamW) of the example char-GPT, eager and in graph mode
(nn.Graph), against PyTorch eager (and torch.compile with --compile), on the CPU or a GPU.

python benchmarks/bench_train_step.py [--batch-size 64] [--block-size 64] [--n-embd 128]
python benchmarks/bench_train_step.py --device cuda --dtype bfloat16 --compile \\
    --n-layer 12 --n-head 12 --n-embd 768 --block-size 1024 --batch-size 8

The PyTorch model is the very same source file (examples/char_gpt/model.py) loaded with
`oneflowlike` replaced by `torch`, so both run the same architecture and initialisation scheme.
--dtype bfloat16/float16 trains under autocast on the device (float16 with a GradScaler). On a
GPU each row also gives the model FLOPs utilisation against --peak-tflops (the H100 SXM's dense
bf16 989 TFLOP/s by default): 6 FLOPs per parameter per token plus the attention's
12 * layers * block * width per token, as the PaLM paper counts them.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import bench, between_ops, fmt_time, report, run_child  # noqa: E402
from model_loader import graph_train_step, load_model_module  # noqa: E402

VOCAB = 96


def make_step(framework, args, x_np, y_np, mode="eager"):
    lib = __import__(framework)
    m = load_model_module(framework)
    lib.manual_seed(0)
    cfg = m.GPTConfig(
        vocab_size=VOCAB,
        block_size=args.block_size,
        n_layer=args.n_layer,
        n_head=args.n_head,
        n_embd=args.n_embd,
    )
    model = m.GPT(cfg).to(args.device)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = lib.from_numpy(x_np).to(args.device), lib.from_numpy(y_np).to(args.device)
    low = getattr(lib, args.dtype) if args.dtype != "float32" else None
    scaler = lib.amp.GradScaler() if args.dtype == "float16" else None

    def autocast():
        return lib.autocast(args.device, dtype=low) if low else contextlib.nullcontext()

    if mode in ("graph", "cudagraph"):
        with autocast():  # the trace records the casts
            run = graph_train_step(model, opt, x, y, cudagraph=mode == "cudagraph")
            run()
    else:
        forward = torch_compile(model) if mode == "compile" else model

        def run():
            with autocast():
                _, loss = forward(x, y)
            opt.zero_grad()
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()

    if args.device == "cpu":
        return run
    sync = lib.cuda.synchronize

    def step():
        run()
        sync()

    step.graph = getattr(run, "graph", None)
    return step


def step_peak(lib, step, device):
    """The most bytes a step held above what it started with (after a warm-up step)."""
    step()
    mem = lib.cuda if device == "cuda" else lib
    start = mem.memory_allocated()
    mem.reset_peak_memory_stats()
    step()
    return mem.max_memory_allocated() - start


def torch_compile(model):
    import torch

    return torch.compile(model)


def model_flops_per_step(args):
    """6 N per token for the parameters (forward and backward) plus the attention's scores and
    mixing, 12 L T C per token; N without the position embedding, as PaLM counts."""
    c, layers = args.n_embd, args.n_layer
    n = VOCAB * c + layers * 12 * c * c + c * VOCAB  # embedding, blocks, LM head
    tokens = args.batch_size * args.block_size
    return tokens * (6 * n + 12 * layers * args.block_size * c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--compile", action="store_true", help="also time torch.compile")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="for MFU on a GPU")
    ap.add_argument("--lib", help=argparse.SUPPRESS)  # child mode: measure one library
    args = ap.parse_args()
    name = (
        f"train step B={args.batch_size} T={args.block_size} C={args.n_embd} L={args.n_layer}"
        f" {args.device} {args.dtype}"
    )
    min_time = 2.0 if args.device == "cpu" else 5.0
    if args.lib:
        rng = np.random.default_rng(0)
        shape = (args.batch_size, args.block_size)
        x_np = rng.integers(0, VOCAB, shape, dtype=np.int64)
        y_np = rng.integers(0, VOCAB, shape, dtype=np.int64)
        times = {name: bench(make_step(args.lib, args, x_np, y_np), min_time, repeats=3)}
        if args.lib == "oneflowlike":
            lib = __import__(args.lib)
            eager = make_step(args.lib, args, x_np, y_np)
            times["eager peak"] = step_peak(lib, eager, args.device)
            os.environ["OFL_GRAPH_FUSION"] = "0"  # read as a graph compiles
            unfused = make_step(args.lib, args, x_np, y_np, mode="graph")
            del os.environ["OFL_GRAPH_FUSION"]
            times[name + " graph unfused"] = bench(unfused, min_time, repeats=3)
            step = make_step(args.lib, args, x_np, y_np, mode="graph")
            times[name + " graph"] = bench(step, min_time, repeats=3)
            times["graph peak"] = step_peak(lib, step, args.device)
            times["graph planned peak"] = step.graph.peak_bytes
            between = [between_ops([step.graph], step) for _ in range(5)]
            times["between"] = statistics.median(s for s in between if s is not None)
            if args.device == "cuda":
                step = make_step(args.lib, args, x_np, y_np, mode="cudagraph")
                times[name + " cudagraph"] = bench(step, min_time, repeats=3)
        if args.lib == "torch" and args.compile:
            step = make_step(args.lib, args, x_np, y_np, mode="compile")
            times[name + " compile"] = bench(step, min_time, repeats=3)
        print(json.dumps(times))
        return
    extra = sys.argv[1:]
    peers = ["torch"] if importlib.util.find_spec("torch") else []
    ours = run_child(__file__, "oneflowlike", extra)
    torch_times = run_child(__file__, "torch", extra) if peers else {}
    others = {p: torch_times[name] for p in peers}
    # PyTorch's column is its eager step on every row.
    rows = [name, name + " graph unfused", name + " graph", name + " cudagraph"]
    report([(r, ours[r], others) for r in rows if r in ours], peers)
    print(
        f"graph step: the executor between its ops {ours['between']:.1%} of the step (median of 5)"
    )
    mb = 1 << 20
    print(
        f"peak memory of a step above what it starts with: eager {ours['eager peak'] / mb:.1f} MB,"
        f" graph {ours['graph peak'] / mb:.1f} MB (its plan: {ours['graph planned peak'] / mb:.1f}"
        " MB of computed values)"
    )
    if args.compile and peers:
        compiled = torch_times[name + " compile"]
        print(
            f"torch.compile {fmt_time(compiled)}: ours eager {compiled / ours[name]:.2f}x, "
            f"graph {compiled / ours[name + ' graph']:.2f}x"
        )
    if args.device == "cuda":
        flops, peak = model_flops_per_step(args), args.peak_tflops * 1e12
        rows = {f"oneflowlike {k[len(name):].strip() or 'eager'}": t for k, t in ours.items()}
        rows.update(
            {f"torch {k[len(name):].strip() or 'eager'}": t for k, t in torch_times.items()}
        )
        for label, t in rows.items():
            print(f"MFU {label}: {flops / t / peak:.1%} ({flops / t / 1e12:.1f} TFLOP/s)")


if __name__ == "__main__":
    main()
