"""Plans a GPT-3 175B training step for a cluster this machine is not: 1024 H100s (128 nodes of 8)
simulated in one process on the meta device, every SBP chosen by the auto-parallel planner.

    python examples/meta/plan_gpt3.py [--layers 96] [--nodes 128] [--budget-gb 80] [--plot F]

The model is the example GPT (examples/char_gpt/model.py) at GPT-3's published size (96 layers,
width 12288, 96 heads, 2048 positions, a 50257-token vocabulary), trained with AdamW in float32,
one sequence per device. The placement is a (nodes, 8) mesh. The 96 blocks are one repeated
layer: the planner solves the first and gives the other 95 its choices. The budget covers the
variables and gradients: the activations of a whole sequence per device, nothing recomputed, fit
no plan (--activations says what they need), which takes the pipelines and recomputation of
issue 13.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))

import oneflowlike as flow  # noqa: E402
from char_gpt.model import GPT, GPTConfig  # noqa: E402
from gpt_layouts import TrainStep  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=96)
    p.add_argument("--width", type=int, default=12288)
    p.add_argument("--heads", type=int, default=96)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--nodes", type=int, default=128)
    p.add_argument("--budget-gb", type=float, default=None, help="default: the device's 80 GB")
    p.add_argument("--plot", help="write plan.plot() to this file")
    p.add_argument(
        "--activations",
        action="store_true",
        help="count the activations the backward reads against the budget (one sequence per "
        "device, nothing recomputed: no plan fits 80 GB, and the error says what the least needs)",
    )
    args = p.parse_args(argv)

    devices = args.nodes * 8
    cluster = flow.boxing.ClusterSpec.h100_ib(args.nodes, 8)
    mesh = [list(range(n * 8, n * 8 + 8)) for n in range(args.nodes)]
    placement = flow.placement("cpu", ranks=mesh)
    B, S = flow.sbp.broadcast, flow.sbp.split

    t0 = time.perf_counter()
    cfg = GPTConfig(50257, args.seq, args.layers, args.heads, args.width)
    with flow.device("meta"):
        model = GPT(cfg)
    model = model.to_global(placement, (B, B))
    opt = flow.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = flow.zeros(
        devices, args.seq, dtype=flow.int64, device="meta", placement=placement, sbp=(S(0), S(0))
    )
    step = TrainStep(model, opt)
    t_build = time.perf_counter() - t0

    budget = None if args.budget_gb is None else args.budget_gb * 1e9
    t0 = time.perf_counter()
    plan = flow.auto_parallel.plan(
        step, [tokens, tokens], cluster=cluster, memory_budget=budget, activations=args.activations
    )
    t_plan = time.perf_counter() - t0

    n = sum(p.numel() for p in model.parameters())
    layers, copies = plan.repeated_layers
    per_step = 6 * n * devices * args.seq  # model FLOPs of a training step (forward + backward)
    print(f"GPT-3: {n:,} parameters, {args.layers} layers, width {args.width}")
    print(f"cluster: {devices} simulated H100s ({args.nodes} nodes of 8), mesh {args.nodes}x8")
    print(f"build {t_build:.2f} s; trace and plan {t_plan:.2f} s")
    print(f"repeated layers: {layers}, of which {copies} took the first one's choices")
    print(
        f"predicted step {plan.seconds:.2f} s (compute {plan.compute_seconds:.2f} s, "
        f"communication {plan.comm_seconds:.2f} s); no plan faster than "
        f"{plan.lower_bound_seconds:.2f} s"
    )
    print(
        f"{devices * args.seq / plan.seconds / devices:,.0f} tokens/s per device, "
        f"{per_step / plan.seconds / devices / 1e12:.1f} model TFLOP/s per device "
        f"(float32 peak {cluster.flops_fp32 / 1e12:.0f})"
    )
    counted = "and activations" if args.activations else "(not activations)"
    print(
        f"memory per device: {plan.memory_bytes / 1e9:.1f} GB for variables and gradients {counted}"
    )
    print("the first block's layouts:")
    for name, sbp in plan.layouts.items():
        if name.startswith("blocks.0.") or name.startswith("state:blocks.0.attn.query.weight"):
            print(f"  {name:45s} {', '.join(s.to_string() for s in sbp)}")
    if args.plot:
        print("plot:", plan.plot(args.plot))
    return plan, t_plan


if __name__ == "__main__":
    main()
