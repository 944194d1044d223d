"""Plans GPT-3 175B's pipeline on a simulated cluster of DGX A100s, stages included: how many
stages, which layers each runs, the micro-batch count, recomputation and every SBP inside a
stage (flow.auto_parallel.plan_pipeline), next to Megatron-LM's published configuration for the
same model, cluster and batch priced under the same cost model (on another cluster size, its
tensor- and pipeline-parallel degrees with the data-parallel degree that fills the cluster).

    python examples/meta/plan_gpt3_pipeline.py [--gpus 1536] [--stages 8,16,32]
        [--micro-batches 32,128]
    python examples/meta/plan_gpt3_pipeline.py --gpus 1024   # Megatron's tp 8 x pp 16, dp 8
    python examples/meta/plan_gpt3_pipeline.py --save /tmp/gpt3_pipeline   # then, from C++:
    build/examples/plan_pipeline /tmp/gpt3_pipeline          # the same plan (examples/cpp)

Published: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM" (SC'21, arXiv 2104.04473), Table 1, GPT-3 175B: 96 layers, hidden 12288, 96 heads,
tensor-parallel 8, pipeline-parallel 16, 1536 GPUs, global batch 1536, 163 TFLOP/s per GPU
(quoted from memory of the paper; the row could not be checked against it here). Its step
counts 96 B s l h^2 (1 + s / 6h + V / 16lh) FLOPs, the forward recomputed.

Ours: the example GPT at that size in float16 on the meta device, AdamW with float32 master
weights and moments (16 bytes a parameter, as Megatron holds them), sequences of 2048, 80 GB per
GPU.
A stage is traced with two of the 96 blocks (their costs are per block); its inputs are split
over the stage's nodes and replicated within a node. Megatron's configuration: stages of 96 GPUs
(12 nodes) with its column/row-parallel layout over the node's 8 GPUs, computed with where it
lies (plan_pipeline(keep=True, in_place=True)), 128
micro-batches (one sequence per GPU), every layer recomputed, as Megatron-LM ran it.
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

VOCAB, SEQ, HIDDEN, HEADS, LAYERS, BATCH = 51200, 2048, 12288, 96, 96, 1536
PUBLISHED = {"tp": 8, "pp": 16, "gpus": 1536, "micro_batches": 128, "tflops": 163}
B, S = flow.sbp.broadcast, flow.sbp.split


def megatron_flops(batch):
    s, l, h = SEQ, LAYERS, HIDDEN
    return 96 * batch * s * l * h * h * (1 + s / (6 * h) + VOCAB / (16 * l * h))


def step_for(layout):
    """step_for(placement, micro_batches) of plan_pipeline: the step of one stage's placement,
    its parameters replicated ("free": the planner chooses) or in Megatron's layout."""

    def make(placement, micro_batches):
        axes = len(placement.hierarchy)
        with flow.device("meta"):
            model = GPT(GPTConfig(VOCAB, SEQ, 2, HEADS, HIDDEN)).half()
        if layout == "megatron":
            model.to_global(placement, lambda n, p: (B, megatron(n, p)))
        else:
            model.to_global(placement, tuple([B] * axes))
        opt = flow.optim.AdamW(model.parameters(), lr=1e-4, master_weights=True)
        sbp = (S(0), B) if axes > 1 else [B]
        x = flow.zeros(BATCH // micro_batches, SEQ, dtype=flow.int64, device="meta",
                       placement=placement, sbp=sbp)  # fmt: skip
        return TrainStep(model, opt), [x, x]

    return make


def report(name, plan, gpus, seconds):
    tokens = BATCH * SEQ / plan.seconds / gpus
    tflops = megatron_flops(BATCH) / plan.seconds / gpus / 1e12
    print(f"{name}: {plan.description}")
    print(f"  predicted step {plan.seconds:.2f} s: {tokens:,.0f} tokens/s per GPU, "
          f"{tflops:.0f} TFLOP/s per GPU as Megatron counts them; planned in {seconds:.1f} s")  # fmt: skip
    print(f"  stage memory {max(plan.stage_bytes) / 1e9:.1f} GB per GPU at most")
    return tokens


def main(argv=None):
    with flow.backends.cuda.sdp_kernel(enable_flash=False):  # 2021's Megatron-LM: as its parts
        return _main(argv)


def _main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", type=int, default=PUBLISHED["gpus"])
    p.add_argument("--stages", default="8,16,32", help="stage counts to weigh")
    p.add_argument("--micro-batches", default="32,128", help="micro-batch counts to weigh")
    p.add_argument("--budget-gb", type=float, default=80)
    p.add_argument(
        "--save", help="a folder for the planner's inputs (C++'s plan_pipeline reads it)"
    )
    args = p.parse_args(argv)
    cluster = flow.boxing.ClusterSpec.a100_nvlink(args.gpus // 8, 8)
    budget = args.budget_gb * 1e9

    t0 = time.perf_counter()
    ours = flow.auto_parallel.plan_pipeline(
        step_for("free"), LAYERS, args.gpus, cluster=cluster, memory_budget=budget,
        stage_devices=[args.gpus // int(s) for s in args.stages.split(",")],
        micro_batches=[int(m) for m in args.micro_batches.split(",")], save=args.save,
    )  # fmt: skip
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = flow.auto_parallel.plan_pipeline(  # on other cluster sizes: its tp and pp, less dp
        step_for("megatron"), LAYERS, args.gpus, cluster=cluster, memory_budget=budget,
        stage_devices=[args.gpus // PUBLISHED["pp"]],
        micro_batches=[PUBLISHED["micro_batches"]], keep=True, in_place=True,  # as it ran
        recompute=True,
    )  # fmt: skip
    t_theirs = time.perf_counter() - t0

    published = PUBLISHED["tflops"] * 1e12 * BATCH * SEQ / megatron_flops(BATCH)
    print(f"GPT-3 175B, batch {BATCH} x {SEQ} tokens, {args.gpus} simulated A100s (80 GB)")
    print(f"published (Megatron-LM, tp 8, pp 16): {published:,.0f} tokens/s per GPU "
          f"({PUBLISHED['tflops']} TFLOP/s)")  # fmt: skip
    a = report("Megatron's configuration, our model", theirs, args.gpus, t_theirs)
    b = report("the planner", ours, args.gpus, t_ours)
    print(f"planner / Megatron's configuration, our model: {b / a:.2f}x")
    print(ours.explain())


if __name__ == "__main__":
    main()
