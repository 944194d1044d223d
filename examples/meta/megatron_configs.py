"""Published Megatron-LM configurations priced under our cost model, next to the planner's plan for
the same model, cluster and batch: GPT models that Megatron-LM trained without pipelines.

    python examples/meta/megatron_configs.py [--only 1.7B]

Published: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM" (SC'21, arXiv 2104.04473), Table 1, the rows with pipeline-parallel size 1: tensor
parallel within a DGX A100 node, data parallel across, mixed precision, global batch of 2048-token
sequences. Their throughput counts a step's FLOPs as 96 B s l h^2 (1 + s / 6h + V / 16lh), which
includes recomputing the forward; here it is turned into tokens per second per GPU, which does not
depend on how FLOPs are counted.

Ours: the example GPT at each size in float16 on the meta device, AdamW, on simulated DGX A100
nodes (ClusterSpec.a100_nvlink), the global batch split over the data-parallel ranks in one step
(Megatron runs it as micro-batches: the same FLOPs), 80 GB per GPU for variables and gradients
(all float16 here: 8 bytes a parameter with Adam's two states, where Megatron's mixed precision
keeps float32 master weights and states besides). Activations are not counted: a whole batch
share at once, nothing recomputed, would not fit, where Megatron runs micro-batches and
recomputes the forward (pipelines and recomputation are issue 13).
For each configuration: Megatron's layout (column-parallel q/k/v and first MLP Linear, row-parallel
projections, over a (GPUs / tp, tp) mesh) with only the ops' signatures chosen
(`plan(keep=True)`), and the planner's own plan on a (nodes, 8) mesh.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))

import oneflowlike as flow  # noqa: E402
from char_gpt.model import GPT, GPTConfig  # noqa: E402
from gpt_layouts import TrainStep, megatron  # noqa: E402

VOCAB, SEQ = 51200, 2048
# name, heads, hidden, layers, tensor-parallel size, GPUs, global batch, published TFLOP/s per GPU
PUBLISHED = [
    ("1.7B", 24, 2304, 24, 1, 32, 512, 137),
    ("3.6B", 32, 3072, 30, 2, 64, 512, 138),
    ("7.5B", 32, 4096, 36, 4, 128, 512, 142),
    ("18.4B", 48, 6144, 40, 8, 256, 1024, 135),
]


def megatron_flops(batch, layers, hidden):
    """A step's FLOPs as the paper counts them (with the forward recomputed)."""
    s, l, h = SEQ, layers, hidden
    return 96 * batch * s * l * h * h * (1 + s / (6 * h) + VOCAB / (16 * l * h))


def step_of(heads, hidden, layers, placement, param_sbp, batch_sbp, batch):
    with flow.device("meta"):
        model = GPT(GPTConfig(VOCAB, SEQ, layers, heads, hidden)).half()
    model.to_global(placement, param_sbp)
    opt = flow.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = flow.zeros(
        batch, SEQ, dtype=flow.int64, device="meta", placement=placement, sbp=batch_sbp
    )
    return TrainStep(model, opt), [tokens, tokens]


def price(name, heads, hidden, layers, tp, gpus, batch):
    """(Megatron's layout, the planner's plan, planning seconds)."""
    cluster = flow.boxing.ClusterSpec.a100_nvlink(gpus // 8, 8)
    B, S = flow.sbp.broadcast, flow.sbp.split
    if tp == 1:
        place = flow.placement("cpu", ranks=list(range(gpus)))
        step, inputs = step_of(heads, hidden, layers, place, B, S(0), batch)
    else:
        mesh = [list(range(r, r + tp)) for r in range(0, gpus, tp)]
        place = flow.placement("cpu", ranks=mesh)
        step, inputs = step_of(
            heads, hidden, layers, place, lambda n, p: (B, megatron(n, p)), (S(0), B), batch
        )
    theirs = flow.auto_parallel.plan(step, inputs, cluster=cluster, keep=True, activations=False)
    mesh = [list(range(n * 8, n * 8 + 8)) for n in range(gpus // 8)]
    place = flow.placement("cpu", ranks=mesh)
    step, inputs = step_of(heads, hidden, layers, place, (B, B), (S(0), S(0)), batch)
    t0 = time.perf_counter()
    ours = flow.auto_parallel.plan(step, inputs, cluster=cluster, activations=False)
    return theirs, ours, time.perf_counter() - t0


def layout_summary(plan, layers):
    """The first block's weights' layouts, e.g. "query S(1),S(0); proj B,S(1)"."""
    out = []
    for part in ("attn.query", "attn.proj", "mlp.fc", "mlp.proj"):
        sbp = plan.layouts.get(f"blocks.0.{part}.weight")
        if sbp is not None:
            out.append(f"{part.split('.')[1]} {','.join(s.to_string() for s in sbp)}")
    return "; ".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="one configuration by name, e.g. 1.7B")
    args = p.parse_args(argv)
    rows = []
    print(
        f"{'model':6s} {'GPUs':>5s} {'tp':>3s} {'batch':>5s} | {'published':>10s} | "
        f"{'Megatron layout, our model':>27s} | {'planner':>22s} {'plan s':>6s}"
    )
    print(
        f"{'':22s} | {'tokens/s/GPU':>10s} | {'tokens/s/GPU  GB/GPU':>27s} | "
        f"{'tokens/s/GPU  GB/GPU':>22s}"
    )
    for name, heads, hidden, layers, tp, gpus, batch, tflops in PUBLISHED:
        if args.only and name != args.only:
            continue
        theirs, ours, seconds = price(name, heads, hidden, layers, tp, gpus, batch)
        published = tflops * 1e12 * batch * SEQ / megatron_flops(batch, layers, hidden)
        per_gpu = [batch * SEQ / plan.seconds / gpus for plan in (theirs, ours)]
        print(
            f"{name:6s} {gpus:5d} {tp:3d} {batch:5d} | {published:10,.0f} | "
            f"{per_gpu[0]:14,.0f} {theirs.memory_bytes / 1e9:12.1f} | "
            f"{per_gpu[1]:11,.0f} {ours.memory_bytes / 1e9:10.1f} {seconds:6.1f}"
        )
        print(f"{'':6s} planner's first block: {layout_summary(ours, layers)}")
        rows.append((name, published, theirs, ours, seconds))
    return rows


if __name__ == "__main__":
    main()
