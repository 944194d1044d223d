"""Published large-model training runs priced under our cost model with the presets unchanged,
pipelines included: the predicted throughput of each configuration as it ran, next to the
published figure, and (with --planner) the planner's own plan for the same model, cluster and
batch. No figure of the presets is fitted to these runs (sbp/cluster_spec.cpp says where each
comes from); --peaks prices at the datasheet peaks instead (no clock or tile model), to show
what the efficiency model contributes.

    python examples/meta/megatron_configs.py [--only 1.7B,145.6B] [--planner] [--peaks]

Published:
- Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM" (SC'21, arXiv 2104.04473), Table 1: GPT models of 1.7B to 1T parameters on 32 to
  3072 A100 GPUs (DGX A100 nodes of 8 and 8 HDR NICs), vocabulary 51200, sequences of 2048, mixed
  precision, tensor parallel within a node, pipelines across nodes (1F1B or interleaved), data
  parallel over the rest, every layer recomputed.
- Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models" (MLSys'23,
  arXiv 2205.05198), Tables 3 and 5: 22B to 1T parameters on 8 to 512 A100s (Selene: DGX A100),
  data parallel 1, micro-batches of 1; the iteration times recomputing every layer (1.42, 18.13,
  49.05 and 94.42 s), which the paper's MFU and HFU figures reproduce. Its own method (sequence
  parallelism and selective recomputation: 1.10, 13.75, 37.83 and 71.49 s) is not a layout this
  script prices; the planner's plans are weighed against it.
- BLOOM-176B (BigScience 2022, arXiv 2211.05100): 384 A100 80GB on Jean Zay (nodes of 8 with 4
  Omni-Path 100 Gb/s NICs), TP 4 x PP 12 x DP 8, ZeRO stage 1, micro-batches of 2, global batch
  2048, 70 layers of width 14336 and 112 heads, vocabulary 250880, about 150 TFLOP/s per GPU.

Throughput is counted as Megatron counts it, the recomputed forward included: a step's FLOPs are
96 B s l h^2 (1 + s / 6h + V / 16lh), over the published or the predicted seconds.

Ours: the example GPT at each size in float16 on the meta device, AdamW with float32 master
weights and moments (16 bytes a parameter, as Megatron holds them), on simulated DGX A100 nodes
(ClusterSpec.a100_nvlink; BLOOM's with 4 NICs of 100 Gb/s a node). The configuration as it ran:
stages of t x d GPUs as a (d, t) mesh with Megatron's column/row-parallel layout over t, the
token embedding and the LM head split by vocabulary (`keep=True, in_place=True`: the weights
computed with where they lie, only the activations' layouts chosen), p stages, the batch in
micro-batches of the run's size per data-parallel rank, every layer recomputed
(plan_pipeline(recompute=True)), under 1F1B, or the interleaved schedule with the script's
virtual stages on Table 1's 76.1B to 529.6B rows (plan_pipeline(chunks=...)). The planner's
plan (--planner): stages of the run's size, half and twice it, its micro-batch size, 1F1B or
interleaved (2 virtual stages a device, or the run's count), recomputation and every layout
inside a stage its choice, with the run's layout weighed beside its own
(plan_pipeline(given=True)). A stage is traced with two of the model's blocks (their costs are
per block). Both within 80 GB per GPU. Attention is priced as its parts
(flow.backends.cuda.sdp_kernel(enable_flash=False)): these runs computed it so, before fused
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

SEQ = 2048
B, S = flow.sbp.broadcast, flow.sbp.split
NARAYANAN, KORTHIKANTI, BLOOM = "Narayanan 2021", "Korthikanti 2022", "BLOOM 2022"


class Row:
    """A published run: the model (heads, hidden, layers, vocabulary), its parallelism (tensor
    t, pipeline p, GPUs), global batch and micro-batch size, and its throughput: TFLOP/s per GPU
    as Megatron counts them, given or from the published seconds of a step."""

    def __init__(self, source, name, heads, hidden, layers, t, p, gpus, batch, micro, *,
                 tflops=None, seconds=None, vocab=51200, layers_per_virtual_stage=None,
                 nics=8, nic_bits=200e9, selective=False, zero=False):  # fmt: skip
        self.source, self.name, self.heads, self.hidden, self.layers = (
            source, name, heads, hidden, layers)  # fmt: skip
        self.t, self.p, self.gpus, self.batch, self.micro, self.vocab = (
            t,
            p,
            gpus,
            batch,
            micro,
            vocab,
        )
        self.d = gpus // (t * p)
        self.published = tflops if tflops is not None else self.flops() / gpus / seconds / 1e12
        # Megatron's --num-layers-per-virtual-pipeline-stage: layers / (p x this) virtual stages.
        self.chunks = layers // (p * layers_per_virtual_stage) if layers_per_virtual_stage else 1
        self.nics, self.nic_bits = nics, nic_bits
        # Korthikanti et al.'s own method: only the attention core recomputed (selective
        # recomputation), layer norms split over the sequence where memory needs it (the planner
        # chooses the activations' layouts); else every layer recomputed.
        self.selective = selective
        # ZeRO stage 1: the optimizer states' layouts the planner's (split over the data-parallel
        # ranks where memory binds), the parameters' kept.
        self.zero = zero

    def flops(self):
        """A step's FLOPs as the papers count them (with the forward recomputed)."""
        s, l, h, V = SEQ, self.layers, self.hidden, self.vocab
        return 96 * self.batch * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))


# Narayanan et al., Table 1, with the micro-batch size of the authors' script for the table
# (examples/sc21/run_table_1.sh in NVIDIA/Megatron-LM; the paper does not give it) and the
# interleaved rows' layers per virtual stage (the same script's).
ROWS = [
    Row(NARAYANAN, "1.7B", 24, 2304, 24, 1, 1, 32, 512, 16, tflops=137),
    Row(NARAYANAN, "3.6B", 32, 3072, 30, 2, 1, 64, 512, 16, tflops=138),
    Row(NARAYANAN, "7.5B", 32, 4096, 36, 4, 1, 128, 512, 16, tflops=142),
    Row(NARAYANAN, "18.4B", 48, 6144, 40, 8, 1, 256, 1024, 8, tflops=135),
    Row(NARAYANAN, "39.1B", 64, 8192, 48, 8, 2, 512, 1536, 4, tflops=138),
    Row(NARAYANAN, "76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 2, tflops=140,
        layers_per_virtual_stage=5),
    Row(NARAYANAN, "145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 2, tflops=148,
        layers_per_virtual_stage=5),
    Row(NARAYANAN, "310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 1, tflops=155,
        layers_per_virtual_stage=3),
    Row(NARAYANAN, "529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 1, tflops=163,
        layers_per_virtual_stage=1),
    Row(NARAYANAN, "1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 1, tflops=163),
    Row(KORTHIKANTI, "22B", 64, 6144, 48, 8, 1, 8, 4, 1, seconds=1.42),
    Row(KORTHIKANTI, "175B", 96, 12288, 96, 8, 8, 64, 64, 1, seconds=18.13),
    Row(KORTHIKANTI, "530B", 128, 20480, 105, 8, 35, 280, 280, 1, seconds=49.05),
    Row(KORTHIKANTI, "1T", 160, 25600, 128, 8, 64, 512, 512, 1, seconds=94.42),
    Row(KORTHIKANTI, "22B sel.", 64, 6144, 48, 8, 1, 8, 4, 1, seconds=1.10, selective=True),
    Row(KORTHIKANTI, "175B sel.", 96, 12288, 96, 8, 8, 64, 64, 1, seconds=13.75, selective=True),
    Row(KORTHIKANTI, "530B sel.", 128, 20480, 105, 8, 35, 280, 280, 1, seconds=37.83,
        selective=True),
    Row(KORTHIKANTI, "1T sel.", 160, 25600, 128, 8, 64, 512, 512, 1, seconds=71.49, selective=True),
    Row(BLOOM, "BLOOM-176B", 112, 14336, 70, 4, 12, 384, 2048, 2, tflops=150, vocab=250880,
        nics=4, nic_bits=100e9, zero=True),
]  # fmt: skip


def step_for(row, layout):
    """plan_pipeline's step_for: one stage's step with two blocks. The run's ("megatron"): the
    stage's ranks as a (d, t) mesh in Megatron's column/row-parallel layout. The planner's
    ("start"): the same (d, t) mesh at the run's stage size, starting from the run's layout
    (plan_pipeline(given=True) weighs it beside its own plans, so the run's layout is one point
    of the search), and every parameter replicated on the stage's (nodes, 8) mesh at other
    sizes, for the planner to lay out."""
    t = row.t

    def make(placement, micro_batches):
        ranks = placement.ranks
        ranks = sum(ranks, []) if isinstance(ranks[0], list) else ranks
        if layout == "megatron" or len(ranks) == row.t * row.d:
            mesh = [ranks[i : i + t] for i in range(0, len(ranks), t)] if t > 1 else ranks
            placement = flow.placement("cpu", ranks=mesh)
        axes = len(placement.hierarchy)
        with flow.device("meta"):
            cfg = GPTConfig(row.vocab, SEQ, 2, row.heads, row.hidden)
            if row.selective:  # the attention core written out, and only it recomputed
                cfg.fused_attention, cfg.recompute_attention = False, True
            model = GPT(cfg).half()
        run_layout = layout == "megatron" or (layout == "start" and len(ranks) == row.t * row.d)
        if run_layout and t > 1:
            model.to_global(placement, lambda n, p: (B, megatron(n, p)))
        else:
            model.to_global(placement, tuple([B] * axes) if axes > 1 else B)
        opt = flow.optim.AdamW(model.parameters(), lr=1e-4, master_weights=True, fused=True)
        sbp = (S(0), B) if axes > 1 else S(0)
        x = flow.zeros(row.batch // micro_batches, SEQ, dtype=flow.int64, device="meta",
                       placement=placement, sbp=sbp)  # fmt: skip
        return TrainStep(model, opt), [x, x]

    return make


PEAKS = [False]  # --peaks: price at the datasheet peaks (no clock or tile model)


def cluster_for(row):
    """DGX A100 nodes of 8 GPUs, with the run's NICs a node (NCCL's bus bandwidth on them taken
    as the preset's on HDR: 23 of 25 GB/s)."""
    cluster = flow.boxing.ClusterSpec.a100_nvlink(row.gpus // 8, 8)
    cluster.nics_per_node = row.nics
    cluster.inter_beta = row.nic_bits / 8 * 23 / 25
    if PEAKS[0]:
        cluster.sms, cluster.compute_efficiency = 0, 1.0
    return cluster


def price(row, planner=False):
    """(the run's configuration priced, the planner's plan or None, planning seconds). Both
    within 80 GB per GPU."""
    t, d = row.t, row.d
    m = row.batch // (d * row.micro)  # micro-batches per step
    cluster = cluster_for(row)
    theirs = flow.auto_parallel.plan_pipeline(
        step_for(row, "megatron"), row.layers, row.gpus, cluster=cluster, memory_budget=80e9,
        stage_devices=[t * d], micro_batches=(m,), keep="parameters" if row.zero else True,
        in_place=True,
        recompute=not row.selective, chunks=(row.chunks,),
    )  # fmt: skip
    if not planner:
        return theirs, None, 0.0
    # Stages of the run's size, half and twice it; its micro-batch size; 1F1B or the interleaved
    # schedule (2 virtual stages a device, or the run's count); recomputation and every layout
    # inside a stage chosen.
    sizes = [
        g
        for g in (t * d // 2, t * d, 2 * t * d)
        if g and row.gpus % g == 0 and row.gpus // g <= row.layers
    ]
    t0 = time.perf_counter()
    ours = flow.auto_parallel.plan_pipeline(
        step_for(row, "start"), row.layers, row.gpus, cluster=cluster, memory_budget=80e9,
        stage_devices=sizes, micro_batches=(m,), chunks=sorted({1, 2, row.chunks}), given=True,
    )  # fmt: skip
    return theirs, ours, time.perf_counter() - t0


def main(argv=None):
    # These runs computed attention as its parts; --flash-attention prices the fused op.
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
        "--peaks",
        action="store_true",
        help="price at the datasheet peaks: no clock or tile model (what the model contributes)",
    )
    args = ap.parse_args(argv)
    PEAKS[0] = args.peaks
    only = set(args.only.split(",")) if args.only else None
    print(f"{'model':10s} {'t':>2s} {'p':>3s} {'d':>3s} {'GPUs':>5s} {'batch':>5s} | "
          f"{'published':>9s} {'predicted':>9s} {'ratio':>6s} | {'planner':>8s} {'plan s':>6s}"
          "   (TFLOP/s per GPU, as Megatron counts them)")  # fmt: skip
    rows, source = [], None
    for row in ROWS:
        if only and row.name not in only:
            continue
        if row.source != source:
            source = row.source
            print(f"-- {source}")
        theirs, ours, seconds = price(row, args.planner)
        flops = row.flops() / row.gpus / 1e12
        predicted = flops / theirs.seconds
        planned = f"{flops / ours.seconds:8.0f} {seconds:6.1f}" if ours else f"{'-':>8s} {'-':>6s}"
        print(f"{row.name:10s} {row.t:2d} {row.p:3d} {row.d:3d} {row.gpus:5d} {row.batch:5d} | "
              f"{row.published:9.0f} {predicted:9.0f} {predicted / row.published:6.2f} | "
              f"{planned}")  # fmt: skip
        rows.append((row, predicted, theirs, ours, seconds))
    for label, pick in [(s, lambda r, s=s: r.source == s) for s in (NARAYANAN, KORTHIKANTI, BLOOM)
                        ] + [("all rows", lambda r: True)]:  # fmt: skip
        errors = [abs(p / r.published - 1) for r, p, *_ in rows if pick(r)]
        if errors:
            print(f"{label}: median |ratio - 1| {statistics.median(errors):.1%}, "
                  f"max {max(errors):.1%} over {len(errors)}")  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
