"""Megatron-LM's published configurations priced under our cost model, pipelines included: the
predicted TFLOP/s per GPU of each configuration as it ran, next to the published figure, and
(with --planner) the planner's own plan for the same model, cluster and batch.

    python examples/meta/megatron_configs.py [--only 1.7B,145.6B] [--planner]

Published: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM" (SC'21, arXiv 2104.04473), Table 1: GPT models of 1.7B to 1T parameters on 32 to
3072 A100 GPUs (DGX A100 nodes of 8), vocabulary 51200, sequences of 2048, mixed precision,
tensor parallel within a node, pipelines across nodes (1F1B), data parallel over the rest. Every
run recomputed each layer's forward in the backward; its throughput counts a step's FLOPs as
96 B s l h^2 (1 + s / 6h + V / 16lh), the recomputed forward included, and so do the predicted
figures here (the predicted step's seconds under the same count).

Ours: the example GPT at each size in float16 on the meta device, AdamW with float32 master
weights and moments (16 bytes a parameter, as Megatron holds them), on simulated DGX A100
nodes (ClusterSpec.a100_nvlink). Megatron's configuration: stages of t x d GPUs as a (d, t) mesh
with its column/row-parallel layout over t, the token embedding and the LM head split by
vocabulary (`keep=True, in_place=True`: the weights computed with where they lie, only the
activations' layouts chosen),
p stages, the batch in micro-batches of the script's size per data-parallel rank, every layer
recomputed (plan_pipeline(recompute=True)), under 1F1B, or the interleaved schedule with the
script's virtual stages on the 76.1B to 529.6B rows (plan_pipeline(chunks=...)). The planner's
plan (--planner): stages of Megatron's size, half and twice it, Megatron's micro-batch size, 1F1B
or interleaved (2 virtual stages a device, or Megatron's count), recomputation and every layout
inside a stage its choice. A stage is traced with two of the model's blocks (their costs are
per block). Both within 80 GB per GPU. Attention is priced as its parts
(flow.backends.cuda.sdp_kernel(enable_flash=False)): Megatron-LM ran it so in 2021, before fused
attention kernels; --flash-attention prices it as one fused kernel.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))

import oneflowlike as flow  # noqa: E402
from char_gpt.model import GPT, GPTConfig  # noqa: E402
from gpt_layouts import TrainStep, megatron  # noqa: E402

VOCAB, SEQ = 51200, 2048
B, S = flow.sbp.broadcast, flow.sbp.split
# Table 1: name, heads, hidden, layers, tensor-parallel t, pipeline-parallel p, GPUs, global
# batch, published TFLOP/s per GPU, and the micro-batch size of the authors' script for the table
# (examples/sc21/run_table_1.sh in NVIDIA/Megatron-LM; the paper does not give it). Odd rows (1st,
# 3rd, ...) calibrate, even rows are held out.
TABLE1 = [
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137, 16),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138, 16),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142, 16),
    ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135, 8),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138, 4),
    ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140, 2),
    ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148, 2),
    ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155, 1),
    ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163, 1),
    ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163, 1),
]
# The rows the same script ran with the interleaved schedule, and its layers per virtual stage
# (--num-layers-per-virtual-pipeline-stage): a device runs layers / (p x this) virtual stages.
LAYERS_PER_VIRTUAL_STAGE = {"76.1B": 5, "145.6B": 5, "310.1B": 3, "529.6B": 1}


def megatron_flops(batch, layers, hidden):
    """A step's FLOPs as the paper counts them (with the forward recomputed)."""
    s, l, h = SEQ, layers, hidden
    return 96 * batch * s * l * h * h * (1 + s / (6 * h) + VOCAB / (16 * l * h))


def step_for(heads, hidden, batch, t, layout):
    """plan_pipeline's step_for: one stage's step with two blocks. Megatron's ("megatron"): the
    stage's ranks as a (d, t) mesh in its column/row-parallel layout. The planner's ("free"):
    every parameter replicated, for the planner to lay out, on the same (d, t) mesh at
    Megatron's stage size (so Megatron's layout is one point of the search) and on the stage's
    (nodes, 8) mesh at other sizes."""

    def make(placement, micro_batches):
        ranks = placement.ranks
        ranks = sum(ranks, []) if isinstance(ranks[0], list) else ranks
        d = len(ranks) // t
        if layout == "megatron" or d * t == megatron_stage[0]:
            mesh = [ranks[i : i + t] for i in range(0, len(ranks), t)] if t > 1 else ranks
            placement = flow.placement("cpu", ranks=mesh)
        axes = len(placement.hierarchy)
        with flow.device("meta"):
            model = GPT(GPTConfig(VOCAB, SEQ, 2, heads, hidden)).half()
        if layout == "megatron" and t > 1:
            model.to_global(placement, lambda n, p: (B, megatron(n, p)))
        else:
            model.to_global(placement, tuple([B] * axes) if axes > 1 else B)
        opt = flow.optim.AdamW(model.parameters(), lr=1e-4, master_weights=True)
        sbp = (S(0), B) if axes > 1 else S(0)
        x = flow.zeros(batch // micro_batches, SEQ, dtype=flow.int64, device="meta",
                       placement=placement, sbp=sbp)  # fmt: skip
        return TrainStep(model, opt), [x, x]

    return make


megatron_stage = [0]  # the stage size of the row being priced


EFFICIENCY = [None]  # --efficiency: the compute efficiency to price with (the preset's if None)


def cluster_for(gpus):
    """DGX A100 nodes of 8 GPUs."""
    cluster = flow.boxing.ClusterSpec.a100_nvlink(gpus // 8, 8)
    if EFFICIENCY[0] is not None:
        cluster.compute_efficiency = EFFICIENCY[0]
    return cluster


def price(row, planner=False):
    """(Megatron's configuration priced, the planner's plan or None, planning seconds). Both
    within 80 GB per GPU."""
    name, heads, hidden, layers, t, p, gpus, batch, _, micro = row
    d = gpus // (t * p)
    m = batch // (d * micro)  # micro-batches per step
    megatron_stage[0] = t * d
    chunks = layers // (p * LAYERS_PER_VIRTUAL_STAGE.get(name, layers // p))
    cluster = cluster_for(gpus)
    theirs = flow.auto_parallel.plan_pipeline(
        step_for(heads, hidden, batch, t, "megatron"), layers, gpus, cluster=cluster,
        memory_budget=80e9, stage_devices=[t * d], micro_batches=(m,), keep=True, in_place=True,
        recompute=True, chunks=(chunks,),
    )  # fmt: skip
    if not planner:
        return theirs, None, 0.0
    # Stages of Megatron's size, half and twice it; Megatron's micro-batch size; 1F1B or the
    # interleaved schedule (2 virtual stages a device, or Megatron's count); recomputation and
    # every layout inside a stage chosen.
    sizes = [
        g for g in (t * d // 2, t * d, 2 * t * d) if g and gpus % g == 0 and gpus // g <= layers
    ]
    t0 = time.perf_counter()
    ours = flow.auto_parallel.plan_pipeline(
        step_for(heads, hidden, batch, t, "free"), layers, gpus, cluster=cluster,
        memory_budget=80e9, stage_devices=sizes, micro_batches=(m,),
        chunks=sorted({1, 2, chunks}),
    )  # fmt: skip
    return theirs, ours, time.perf_counter() - t0


def main(argv=None):
    # 2021's Megatron-LM computed attention as its parts; --flash-attention prices the fused op.
    flash = "--flash-attention" in (argv if argv is not None else sys.argv[1:])
    with flow.backends.cuda.sdp_kernel(enable_flash=flash):
        return _main(argv)


def _main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="rows by name, comma-separated, e.g. 1.7B,145.6B")
    ap.add_argument("--planner", action="store_true", help="also plan each row (slow)")
    ap.add_argument(
        "--flash-attention",
        action="store_true",
        help="price attention as one fused kernel (cuDNN's flash attention), not as its parts",
    )
    ap.add_argument(
        "--efficiency",
        type=float,
        help="price at this compute efficiency (to calibrate the preset)",
    )
    args = ap.parse_args(argv)
    EFFICIENCY[0] = args.efficiency
    only = set(args.only.split(",")) if args.only else None
    print(f"{'model':8s} {'t':>2s} {'p':>3s} {'d':>3s} {'GPUs':>5s} {'batch':>5s} | "
          f"{'published':>9s} {'predicted':>9s} {'ratio':>6s} | {'planner':>8s} {'plan s':>6s}"
          "   (TFLOP/s per GPU, as Megatron counts them)")  # fmt: skip
    rows = []
    for i, row in enumerate(TABLE1):
        name, heads, hidden, layers, t, p, gpus, batch, published, _ = row
        if only and name not in only:
            continue
        theirs, ours, seconds = price(row, args.planner)
        flops = megatron_flops(batch, layers, hidden) / gpus / 1e12
        predicted = flops / theirs.seconds
        planned = f"{flops / ours.seconds:8.0f} {seconds:6.1f}" if ours else f"{'-':>8s} {'-':>6s}"
        held_out = i % 2 == 1
        print(f"{name:8s} {t:2d} {p:3d} {gpus // (t * p):3d} {gpus:5d} {batch:5d} | "
              f"{published:9.0f} {predicted:9.0f} {predicted / published:6.2f} | {planned}"
              f"{'   held out' if held_out else ''}")  # fmt: skip
        rows.append((name, published, predicted, held_out, theirs, ours))
    for label, pick in (("calibration rows", False), ("held-out rows", True)):
        errors = [abs(r[2] / r[1] - 1) for r in rows if r[3] == pick]
        if errors:
            print(f"{label}: median |ratio - 1| {statistics.median(errors):.1%}, "
                  f"max {max(errors):.1%} over {len(errors)}")  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
