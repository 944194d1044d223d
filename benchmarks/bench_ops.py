"""Op throughput against numpy and PyTorch CPU (when installed), on this machine in one run.

python benchmarks/bench_ops.py [--quick]

Each row prints our time per call and, per peer, the peer's time and the ratio peer/ours
(above 1.0x: oneflowlike is faster).
"""

import argparse
import math
import os
import sys

import numpy as np

import oneflowlike as flow
import oneflowlike.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from _timing import bench, report  # noqa: E402

# PyTorch's OpenMP workers spin after each op by default and would steal the cores our oneTBB
# workers need (and the reverse); passive waiting keeps the comparison fair to both.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
try:
    import torch

    torch.set_num_threads(os.cpu_count())
except ImportError:
    torch = None


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


def cases(quick):
    rng = np.random.default_rng(0)

    def arr(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    sizes = [256, 1024] if quick else [256, 512, 1024, 2048]
    for n in sizes:
        a, b = arr(n, n), arr(n, n)
        yield f"matmul {n}x{n} @ {n}x{n}", (a, b), lambda x, y: x @ y, None
    # transformer shapes: (batch*seq, d) @ (d, 4d) and attention scores
    for m, k, n in [(4096, 768, 3072), (4096, 3072, 768)] if not quick else [(2048, 512, 2048)]:
        yield f"matmul {m}x{k} @ {k}x{n}", (arr(m, k), arr(k, n)), lambda x, y: x @ y, None
    q, kk = arr(16, 256, 64), arr(16, 64, 256)
    yield "batched matmul 16x256x64 @ 16x64x256", (q, kk), lambda x, y: x @ y, None
    for n in [1 << 16, 1 << 22]:
        a, b = arr(n), arr(n)
        yield f"add {n}", (a, b), lambda x, y: x + y, None
        yield f"mul {n}", (a, b), lambda x, y: x * y, None
        yield f"gelu(tanh) {n}", (a,), None, "gelu"
    yield "softmax 4096x1024 (last dim)", (arr(4096, 1024),), None, "softmax"
    yield "layer_norm 4096x1024", (arr(4096, 1024), arr(1024), arr(1024)), None, "layer_norm"
    yield "sum 4096x1024 (all)", (arr(4096, 1024),), None, "sum"


def run_case(name, inputs, binary, special, peers):
    ours_in = [flow.from_numpy(a) for a in inputs]
    res = {}
    if special is None:
        ours = bench(lambda: binary(*ours_in))
        res["numpy"] = bench(lambda: binary(*inputs))
        if torch is not None:
            t_in = [torch.from_numpy(a) for a in inputs]
            res["torch"] = bench(lambda: binary(*t_in))
    elif special == "gelu":
        ours = bench(lambda: F.gelu(ours_in[0], approximate="tanh"))
        res["numpy"] = bench(lambda: np_gelu(inputs[0]))
        if torch is not None:
            t = torch.from_numpy(inputs[0])
            res["torch"] = bench(lambda: torch.nn.functional.gelu(t, approximate="tanh"))
    elif special == "softmax":
        ours = bench(lambda: flow.softmax(ours_in[0], -1))
        res["numpy"] = bench(lambda: np_softmax(inputs[0]))
        if torch is not None:
            t = torch.from_numpy(inputs[0])
            res["torch"] = bench(lambda: torch.softmax(t, -1))
    elif special == "layer_norm":
        x, w, b = ours_in
        ours = bench(lambda: F.layer_norm(x, (x.shape[-1],), w, b))
        res["numpy"] = bench(lambda: np_layer_norm(*inputs))
        if torch is not None:
            tx, tw, tb = [torch.from_numpy(a) for a in inputs]
            res["torch"] = bench(
                lambda: torch.nn.functional.layer_norm(tx, (tx.shape[-1],), tw, tb)
            )
    elif special == "sum":
        ours = bench(lambda: ours_in[0].sum())
        res["numpy"] = bench(lambda: inputs[0].sum())
        if torch is not None:
            t = torch.from_numpy(inputs[0])
            res["torch"] = bench(lambda: t.sum())
    return name, ours, res


def dispatch_rows():
    rows = []
    a, b = flow.ones(100), flow.ones(100)
    na, nb = np.ones(100, np.float32), np.ones(100, np.float32)
    others = {"numpy": bench(lambda: na + nb)}
    if torch is not None:
        ta, tb = torch.ones(100), torch.ones(100)
        others["torch"] = bench(lambda: ta + tb)
    rows.append(("dispatch: add of 100 floats", bench(lambda: a + b), others))
    x = flow.ones(100, requires_grad=True)
    others = {}
    if torch is not None:
        tx = torch.ones(100, requires_grad=True)
        others["torch"] = bench(lambda: (tx * 2.0).sum().backward())
    rows.append(
        ("dispatch: (x*2).sum().backward(), 100", bench(lambda: (x * 2.0).sum().backward()), others)
    )
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer, smaller cases")
    args = ap.parse_args()
    peers = ["numpy"] + (["torch"] if torch is not None else [])
    print(f"threads: {os.cpu_count()}; torch: {torch.__version__ if torch else 'not installed'}")
    rows = [run_case(*c, peers) for c in cases(args.quick)]
    rows += dispatch_rows()
    report(rows, peers)


if __name__ == "__main__":
    main()
