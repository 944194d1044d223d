"""Op throughput against numpy and PyTorch CPU (when installed), on this machine in one run;
with --device cuda, against PyTorch on the same GPU (each call timed to its completion).

python benchmarks/bench_ops.py [--quick] [--baseline PYTHON] [--device cuda]

--baseline runs our cases a second time under another interpreter, one where an earlier build
of oneflowlike is installed, as the peer "baseline" (before/after a change, in one run).

Each library runs in its own child process with its default threading. Each row prints our
time per call and, per peer, the peer's time and the ratio peer/ours (above 1.0x: oneflowlike
is faster).
"""

import argparse
import importlib.util
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import bench, report, run_child  # noqa: E402


def np_gelu(x):
    # numpy has no erf; the tanh form is the usual numpy stand-in
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def make_cases(quick, device="cpu"):
    """(name, input arrays, kind) for every case; kind picks the op."""
    rng = np.random.default_rng(0)

    def arr(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    cases = []
    for n in [256, 1024] if quick else [256, 512, 1024, 2048]:
        cases.append((f"matmul {n}x{n} @ {n}x{n}", (arr(n, n), arr(n, n)), "matmul"))
    for m, k, n in [(2048, 512, 2048)] if quick else [(4096, 768, 3072), (4096, 3072, 768)]:
        cases.append((f"matmul {m}x{k} @ {k}x{n}", (arr(m, k), arr(k, n)), "matmul"))
    cases.append(
        ("batched matmul 16x256x64 @ 16x64x256", (arr(16, 256, 64), arr(16, 64, 256)), "matmul")
    )
    for n in [1 << 16, 1 << 22]:
        a, b = arr(n), arr(n)
        cases += [(f"add {n}", (a, b), "add"), (f"mul {n}", (a, b), "mul")]
        cases.append((f"gelu(tanh) {n}", (a,), "gelu"))
        cases.append((f"gelu (exact) {n}", (a,), "gelu_exact"))
    cases.append(("softmax 4096x1024 (last dim)", (arr(4096, 1024),), "softmax"))
    cases.append(("layer_norm 4096x1024", (arr(4096, 1024), arr(1024), arr(1024)), "layer_norm"))
    for rows, cols in [(4096, 1024), (4096, 128)]:
        x = arr(rows, cols)
        cases.append((f"softmax {rows}x{cols}, fwd+bwd", (x,), "softmax_backward"))
        ln = (x, arr(cols), arr(cols))
        cases.append((f"layer_norm {rows}x{cols}, fwd+bwd", ln, "layer_norm_backward"))
    # An MLP's bias, GELU and residual chain: one fused node in our graph, three ops eagerly.
    chain = (arr(64, 64, 512), arr(512), arr(64, 64, 512))
    cases.append(("gelu(x + b) + r 64x64x512, eager", chain, "chain"))
    cases.append(("gelu(x + b) + r 64x64x512, nn.Graph (fused)", chain, "chain_graph"))
    # A residual sum kept for later and its GELU, over 16 MiB operands: both outputs reach memory.
    if not quick:
        residual = (arr(1024, 4096), arr(1024, 4096))
        cases.append(("h = x + r, gelu(h) 1024x4096, eager", residual, "residual"))
        cases.append(("h = x + r, gelu(h) 1024x4096, nn.Graph (fused)", residual, "residual_graph"))
    cases.append(("sum 4096x1024 (all)", (arr(4096, 1024),), "sum"))
    cases.append(("sum 8192x768 over rows (a bias gradient)", (arr(8192, 768),), "sum_rows"))
    cases.append(("fft.fft 64x4096 (last dim)", (arr(64, 4096),), "fft"))
    cases.append(("fft.rfft 64x4096 (last dim)", (arr(64, 4096),), "rfft"))
    if device == "cuda":  # the GPT benchmark's attention: 8 x 12 heads x 1024 x 64, bfloat16
        qkv = tuple(arr(8, 12, 1024, 64) for _ in range(3))
        cases.append(("causal attention 8x12x1024x64 bf16", qkv, "attention"))
        cases.append(("causal attention 8x12x1024x64 bf16, fwd+bwd", qkv, "attention_backward"))
    # torch.nn's heavy modules, forward and backward (the weights' gradients) per call.
    cases.append(("LSTM 2 layers h256, seq 64 x batch 32, fwd+bwd", (arr(64, 32, 256),), "lstm"))
    cases.append(("GRU 2 layers h256, seq 64 x batch 32, fwd+bwd", (arr(64, 32, 256),), "gru"))
    cases.append(("Conv1d 64->128 k5, 32x64x512, fwd+bwd", (arr(32, 64, 512),), "conv1d"))
    cases.append(
        ("ConvTranspose2d 64->32 k4 s2, 16x64x32x32, fwd+bwd", (arr(16, 64, 32, 32),), "deconv")
    )
    cases.append(
        ("TransformerEncoderLayer d256 h8 ff1024, 16x128, fwd+bwd", (arr(16, 128, 256),), "encoder")
    )
    cases.append(("dispatch: add of 100 floats", (arr(100), arr(100)), "add"))
    # Through the generic op binding (arguments parsed by the op's signature).
    cases.append(("dispatch: x.add(y, alpha=2), 100", (arr(100), arr(100)), "add_method"))
    cases.append(("dispatch: x.sum(0, keepdim=True), 10x10", (arr(10, 10),), "sum_keepdim"))
    cases.append(("dispatch: flow.cumsum(x, 0), 100", (arr(100),), "cumsum"))
    cases.append(("dispatch: (x*2).sum().backward(), 100", (arr(100),), "backward"))
    return cases


def ops_for(lib, device="cpu"):
    """kind -> (convert inputs, function) for one library."""
    if lib == "numpy":
        return lambda a: a, {
            "matmul": lambda x, y: x @ y,
            "add": lambda x, y: x + y,
            "mul": lambda x, y: x * y,
            "gelu": np_gelu,
            "softmax": np_softmax,
            "layer_norm": np_layer_norm,
            "sum": lambda x: x.sum(),
            "sum_rows": lambda x: x.sum(0),
            "fft": lambda x: np.fft.fft(x),
            "rfft": lambda x: np.fft.rfft(x),
        }
    mod = __import__(lib)
    F = mod.nn.functional

    def backward(x):
        (x * 2.0).sum().backward()

    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def attention_backward(q, k, v):
        attention(q, k, v).sum().backward()

    def convert(a):
        return mod.from_numpy(a).to(device)

    modules = {}  # each built once, on its case's first call

    def trained(kind, make):
        def step(x):
            if kind not in modules:
                mod.manual_seed(0)
                modules[kind] = make().to(device)
            out = modules[kind](x)
            (out[0] if isinstance(out, tuple) else out).sum().backward()

        return step

    nn = mod.nn

    def chain(x, b, r):
        return F.gelu(x + b) + r

    def residual(x, r):
        h = x + r
        return h, F.gelu(h)

    graphs = {}  # each function's graph, compiled at its first call

    def as_graph(fn):
        def call(*xs):
            if fn not in graphs:

                class Call(nn.Graph):
                    def build(self, *xs):
                        return fn(*xs)

                graphs[fn] = Call()
            return graphs[fn](*xs)

        return call

    extra = {"chain_graph": as_graph(chain), "residual_graph": as_graph(residual)}
    extra = extra if hasattr(nn, "Graph") else {}
    return convert, extra | {
        "chain": chain,
        "residual": residual,
        "matmul": lambda x, y: x @ y,
        "add": lambda x, y: x + y,
        "mul": lambda x, y: x * y,
        "gelu": lambda x: F.gelu(x, approximate="tanh"),
        "gelu_exact": lambda x: F.gelu(x),
        "softmax": lambda x: mod.softmax(x, -1),
        "layer_norm": lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b),
        "softmax_backward": lambda x: mod.softmax(x, -1).sum().backward(),
        "layer_norm_backward": lambda x, w, b: (
            F.layer_norm(x, (x.shape[-1],), w, b).sum().backward()
        ),
        "sum": lambda x: x.sum(),
        "sum_rows": lambda x: x.sum(0),
        "fft": lambda x: mod.fft.fft(x),
        "rfft": lambda x: mod.fft.rfft(x),
        "add_method": lambda x, y: x.add(y, alpha=2),
        "sum_keepdim": lambda x: x.sum(0, keepdim=True),
        "cumsum": lambda x: mod.cumsum(x, 0),
        "backward": backward,
        "attention": attention,
        "attention_backward": attention_backward,
        "lstm": trained("lstm", lambda: nn.LSTM(256, 256, num_layers=2)),
        "gru": trained("gru", lambda: nn.GRU(256, 256, num_layers=2)),
        "conv1d": trained("conv1d", lambda: nn.Conv1d(64, 128, 5, padding=2)),
        "deconv": trained("deconv", lambda: nn.ConvTranspose2d(64, 32, 4, 2, 1)),
        "encoder": trained(
            "encoder",
            lambda: nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True),
        ),
    }


def measure(lib, quick, device="cpu"):
    convert, fns = ops_for(lib, device)
    sync = __import__(lib).cuda.synchronize if device == "cuda" else (lambda: None)
    times = {}
    for name, inputs, kind in make_cases(quick, device):
        if kind not in fns:
            continue
        args = [convert(a) for a in inputs]
        if kind.startswith("attention"):
            args = [a.to(__import__(lib).bfloat16) for a in args]
        if kind.endswith("backward"):
            for a in args:
                a.requires_grad_(True)

        def call():
            fns[kind](*args)
            sync()

        times[name] = bench(call)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer, smaller cases")
    ap.add_argument("--baseline", metavar="PYTHON", help="interpreter with an earlier build")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure every library N times, in turn: each case's best time, and the range of its "
        "per-round ratios (a neighbour's load that comes and goes moves one round, not the figure)",
    )
    ap.add_argument("--lib", help=argparse.SUPPRESS)  # child mode: measure one library
    args = ap.parse_args()
    extra = (["--quick"] if args.quick else []) + ["--device", args.device]
    if args.lib:
        print(json.dumps(measure(args.lib, args.quick, args.device)))
        return
    torch = ["torch"] if importlib.util.find_spec("torch") else []
    peers = torch if args.device == "cuda" else ["numpy"] + torch
    if args.baseline:
        peers.append("baseline")
    runs = {lib: [] for lib in ["oneflowlike", *peers]}
    for _ in range(max(args.rounds, 1)):  # each round measures every library, one after another
        runs["oneflowlike"].append(run_child(__file__, "oneflowlike", extra))
        for p in peers:
            python = args.baseline if p == "baseline" else None
            runs[p].append(run_child(__file__, "oneflowlike" if python else p, extra, python))
    best = {
        lib: {case: min(r[case] for r in rs if case in r) for case in rs[0]}
        for lib, rs in runs.items()
    }
    spreads = None
    if args.rounds > 1:
        spreads = {}
        for p in peers:
            for case in best["oneflowlike"]:
                ratios = [
                    t[case] / o[case] for o, t in zip(runs["oneflowlike"], runs[p]) if case in t
                ]
                if ratios:
                    spreads[(case, p)] = (min(ratios), max(ratios))
    rounds = f"; best of {args.rounds} rounds" if args.rounds > 1 else ""
    print(f"cores: {os.cpu_count()}; device: {args.device}; peers: {', '.join(peers)}{rounds}")
    rows = [
        (name, t, {p: best[p].get(name) for p in peers}) for name, t in best["oneflowlike"].items()
    ]
    report(rows, peers, spreads)


if __name__ == "__main__":
    main()
