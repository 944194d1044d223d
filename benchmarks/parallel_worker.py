"""One rank of bench_parallel.py, started by oneflowlike.distributed.launch: times one training
step (forward, backward, AdamW) of the example char-GPT on a fixed global batch.

    --lib oneflowlike   every layout of examples/parallel/gpt_layouts.py in turn (the same code
                        as that example: Module.to_global with the layout's SBPs), eagerly and
                        as an nn.Graph, and the collectives one step runs, from
                        flow.boxing.comm_log()
                        ("ddp": flow.nn.parallel.DistributedDataParallel on local tensors, each
                        rank on its S(0) rows of the batch, as PyTorch's)
    --lib torch         PyTorch's own layouts over Gloo on the same batch (TORCH_LAYOUTS: DDP,
                        DTensor tensor parallel, FSDP2, ZeroRedundancyOptimizer + DDP, TP x DDP
                        and TP x FSDP2 on a 2-D mesh), each the peer of one of ours
                        (TORCH_PEERS); the model is the same file loaded with `oneflowlike`
                        replaced by `torch` (model_loader.load_model_module)

Each case warms up, then runs --rounds rounds of --steps steps behind a barrier; rank 0 prints
one JSON line per case with the best round's seconds per step.
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples" / "parallel"))


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, choices=["oneflowlike", "torch"])
    ap.add_argument("--layouts", default="ddp,dp,tp,zero,2d,seq")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--vocab-size", type=int, default=96)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-peers", default="matching", choices=["matching", "all"])
    return ap.parse_args()


def batch(args):
    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.block_size)
    return (rng.integers(0, args.vocab_size, shape, dtype=np.int64) for _ in range(2))


def best_step_seconds(step, barrier, args):
    step()  # warm-up: first-touch allocations, plan caches, DDP's bucket rebuild
    step()
    best = float("inf")
    for _ in range(args.rounds):
        barrier()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        barrier()
        best = min(best, (time.perf_counter() - t0) / args.steps)
    return best


def wire_bytes(line, world_size):
    """Bytes one rank sends for a logged collective ("all_reduce(sum) group[0,2] 4096 B"), as
    a ring/pairwise algorithm moves them: 2(n-1)/n of the buffer for all_reduce, (n-1)/n for
    all_gather, reduce_scatter and all_to_all, the whole buffer for send/recv."""
    kind, group, nbytes = re.match(r"(\w+)(?:\(\w+\))? (\S+) (\d+) B", line).groups()
    n = world_size if group == "world" else group.count(",") + 1
    nbytes = int(nbytes)
    if kind == "all_reduce":
        return nbytes * 2 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return nbytes * (n - 1) / n
    return nbytes


def run_oneflowlike(args):
    import oneflowlike as flow
    import oneflowlike.distributed as dist
    from gpt_layouts import LAYOUTS, PIPELINES, state_bytes
    from model_loader import graph_train_step, load_model_module, train_step

    m = load_model_module("oneflowlike")
    x_np, y_np = batch(args)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    for layout in args.layouts.split(","):
        if layout == "ddp":
            run_ddp(flow, dist, m, args, x_np, y_np)
            continue
        if layout.split("@")[0].split(":")[0] in (*PIPELINES, "auto_pipeline"):
            run_pipeline(flow, dist, m, args, layout, x_np, y_np)
            continue
        # "auto@4": the planner's layouts within 4 MiB per device (variables, gradients, states)
        auto = layout.split("@")[0] == "auto"
        budget = float(layout.split("@")[1]) * 2**20 if auto and "@" in layout else None
        ranks, param_sbp, batch_sbp = LAYOUTS[layout.split("@")[0]]
        if not isinstance(ranks[0], list):  # a 1-d layout runs on every rank there is
            ranks = list(range(world_size))
        place = flow.placement("cpu", ranks=ranks)
        flow.manual_seed(0)
        model = m.GPT(
            m.GPTConfig(args.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd)
        )
        model.to_global(place, param_sbp)
        opt = flow.optim.AdamW(model.parameters(), lr=1e-3)
        replicated = [flow.sbp.broadcast] * len(place.hierarchy)
        x, y = (
            flow.tensor(a).to_global(place, replicated).to_global(sbp=batch_sbp)
            for a in (x_np, y_np)
        )

        # "auto": the planner's layouts, which only a graph has.
        for mode in ("graph",) if auto else ("eager", "graph"):
            step = (
                train_step(model, opt, x, y)
                if mode == "eager"
                else graph_train_step(model, opt, x, y, auto_parallel=auto, memory_budget=budget)
            )
            row = measure(flow, step, dist, args)
            row["state_bytes"] = state_bytes(model, opt)
            if rank == 0:
                row.update(lib="oneflowlike", case=layout, mode=mode)
                print(json.dumps(row), flush=True)


def run_ddp(flow, dist, m, args, x_np, y_np):
    """Our DistributedDataParallel on local tensors, each rank on its rows, as PyTorch's below."""
    from model_loader import train_step

    rank, world_size = dist.get_rank(), dist.get_world_size()
    rows = np.array_split(np.arange(args.batch_size), world_size)[rank]
    x, y = (flow.tensor(a[rows]) for a in (x_np, y_np))
    flow.manual_seed(0)
    model = m.GPT(
        m.GPTConfig(args.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd)
    )
    ddp = flow.nn.parallel.DistributedDataParallel(model)
    opt = flow.optim.AdamW(ddp.parameters(), lr=1e-3)
    seconds = best_step_seconds(train_step(ddp, opt, x, y), dist.barrier, args)
    if rank == 0:
        row = ddp_row(seconds, model, world_size)
        row.update(lib="oneflowlike", mode="eager", overlap=dict(ddp.last_sync))
        print(json.dumps(row), flush=True)


def ddp_row(seconds, model, world_size):
    """DDP all-reduces every gradient once per step (in buckets): that is its whole traffic."""
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return {
        "case": "ddp",
        "step_s": seconds,
        "collectives": {"all_reduce (buckets)": None},
        "buffer_bytes": nbytes,
        "wire_bytes": nbytes * 2 * (world_size - 1) / world_size,
    }


def run_pipeline(flow, dist, m, args, layout, x_np, y_np):
    """A pipeline layout as a graph: "pp2xdp:4" (gpt_layouts.PIPELINES, 4 micro-batches, 1F1B)
    or "auto_pipeline@4" (enable_auto_parallel(pipeline=True): the planner's stages,
    micro-batches and layouts within 4 MiB, the model and batch starting on every rank)."""
    from gpt_layouts import PIPELINES, pipeline, state_bytes
    from model_loader import graph_train_step

    B, S = flow.sbp.broadcast, flow.sbp.split
    flow.manual_seed(0)
    cfg = m.GPTConfig(args.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd)
    model = m.GPT(cfg)
    auto = layout.startswith("auto_pipeline")
    if auto:
        first = last = flow.placement("cpu", ranks=list(range(dist.get_world_size())))
        model.to_global(first, B)
        batch_sbp, micro, budget = S(0), 1, float(layout.split("@")[1]) * 2**20
    else:
        name, _, micro = layout.partition(":")
        stage_ranks, param_sbp, batch_sbp = PIPELINES[name]
        first, last = pipeline(model, stage_ranks, param_sbp)
        micro, budget = int(micro or 1), None
    opt = flow.optim.AdamW(model.parameters(), lr=1e-3)
    x = flow.tensor(x_np).to_global(first, [B] * len(first.hierarchy)).to_global(sbp=batch_sbp)
    y = flow.tensor(y_np).to_global(last, [B] * len(last.hierarchy)).to_global(sbp=batch_sbp)
    step = graph_train_step(
        model, opt, x, y, auto_parallel=auto, memory_budget=budget, micro_batches=micro,
        pipeline=auto,
    )  # fmt: skip
    step.pipelined = True  # the executor's one-rank timeline (graph.predict) does not apply
    cases = [(layout, step)]
    if auto:  # the same plan again, its batch given where the stages read it (as hand layouts')
        step()
        places = step.graph.plan.placements()
        on_stages = [a.to_global(p) for a, p in ((x, places[0]), (y, places[-1]))]
        cases.append((f"{layout}>stages", lambda: step.graph(*on_stages)))
    for case, run in cases:
        run.pipelined = True
        row = measure(flow, run, dist, args)
        plan = step.graph.plan
        row.update(predicted_s=plan.seconds if auto else None, predicted_compute_s=None)
        row.update(predicted_comm_s=None, pipeline=plan.description if auto else None)
        row["state_bytes"] = state_bytes(model, opt)
        if dist.get_rank() == 0:
            row.update(lib="oneflowlike", case=case, mode="graph")
            print(json.dumps(row), flush=True)


def measure(flow, step, dist, args):
    """Best seconds per step, and the collectives one step runs (from comm_log) and the most
    bytes its tensors hold at once on rank 0 (parameters and optimizer states included)."""
    seconds = best_step_seconds(step, dist.barrier, args)
    flow.reset_peak_memory_stats()
    with flow.boxing.comm_log() as log:
        step()
    peak = flow.max_memory_allocated()
    counts = {}
    for line in log:
        kind = line.split(" ")[0]
        counts[kind] = counts.get(kind, 0) + 1
    world_size = dist.get_world_size()
    graph = getattr(step, "graph", None)
    pipelined = getattr(step, "pipelined", False)
    predicted = graph.predict() if graph and not pipelined else (None, None, None)
    return {
        "step_s": seconds,
        "predicted_s": predicted[0],
        "predicted_compute_s": predicted[1],
        "predicted_comm_s": predicted[2],
        "peak_bytes": peak,
        "spec": flow._C.get_cluster_spec().name,  # what priced the prediction
        "collectives": counts,
        "buffer_bytes": sum(int(line.split(" ")[-2]) for line in log),
        "wire_bytes": sum(wire_bytes(line, world_size) for line in log),
    }


# PyTorch's own layout for each of ours: the peer a layout is compared with.
TORCH_PEERS = {
    "dp": "ddp",
    "ddp": "ddp",
    "tp": "dtensor_tp",
    "zero": "fsdp2",
    "2d": "tp_x_fsdp2",
}
TORCH_LAYOUTS = ("ddp", "dtensor_tp", "fsdp2", "zero_redundancy", "tp_x_ddp", "tp_x_fsdp2")


def torch_tensor_parallel(torch, model, mesh):
    """Megatron's split with DTensor: query, key, value and fc by columns, the projections by
    rows, the heads split with them (the model views (B, T, C) as heads of DTensors). DTensor
    has no rule for CPU flash attention, so attention runs on each rank's heads, as local_map
    would."""
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    plan = {}
    for i in range(len(model.blocks)):
        for name in ("attn.query", "attn.key", "attn.value", "mlp.fc"):
            plan[f"blocks.{i}.{name}"] = ColwiseParallel(use_local_output=False)
        for name in ("attn.proj", "mlp.proj"):
            plan[f"blocks.{i}.{name}"] = RowwiseParallel()
    F = torch.nn.functional
    sdpa = getattr(
        F.scaled_dot_product_attention, "local_attention", F.scaled_dot_product_attention
    )

    def attention(q, k, v, **kwargs):
        if not isinstance(q, DTensor):
            return sdpa(q, k, v, **kwargs)
        y = sdpa(q.to_local(), k.to_local(), v.to_local(), **kwargs)
        return DTensor.from_local(y, q.device_mesh, q.placements, run_check=False)

    attention.local_attention = sdpa
    F.scaled_dot_product_attention = attention
    return parallelize_module(model, mesh, plan)


def torch_layout(torch, m, layout, args, rank, world_size):
    """(the model to call, its optimizer, this rank's rows of the batch) under PyTorch's own
    parallel APIs: DDP, DTensor tensor parallel, FSDP2 (fully_shard), ZeroRedundancyOptimizer
    with DDP, and tensor parallel on a 2-D mesh with DDP or FSDP2 across it."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    cfg = m.GPTConfig(args.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd)
    model = m.GPT(cfg)
    dp_rank, dp_size = rank, world_size
    if layout in ("ddp", "zero_redundancy"):
        model = DDP(model)
    elif layout == "fsdp2":
        mesh = init_device_mesh("cpu", (world_size,))
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
    elif layout == "dtensor_tp":
        dp_rank, dp_size = 0, 1  # every rank runs the whole batch
        torch_tensor_parallel(torch, model, init_device_mesh("cpu", (world_size,)))
    elif layout in ("tp_x_ddp", "tp_x_fsdp2"):
        mesh = init_device_mesh("cpu", (2, world_size // 2), mesh_dim_names=("dp", "tp"))
        dp_rank, dp_size = mesh["dp"].get_local_rank(), mesh["dp"].size()
        torch_tensor_parallel(torch, model, mesh["tp"])
        if layout == "tp_x_ddp":
            model = DDP(model, device_mesh=mesh["dp"])
        else:
            for block in model.blocks:
                fully_shard(block, mesh=mesh["dp"])
            fully_shard(model, mesh=mesh["dp"])
    if layout == "zero_redundancy":
        opt = ZeroRedundancyOptimizer(model.parameters(), torch.optim.AdamW, lr=1e-3)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rows = np.array_split(np.arange(args.batch_size), dp_size)[dp_rank]
    return model, opt, rows


def run_torch(args):
    import torch
    import torch.distributed as dist
    from model_loader import load_model_module, train_step

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    m = load_model_module("torch")
    x_np, y_np = batch(args)
    wanted = [TORCH_PEERS.get(c, c) for c in args.layouts.split(",")]
    for layout in [c for c in TORCH_LAYOUTS if c in wanted or args.torch_peers == "all"]:
        if layout.startswith("tp_x") and world_size % 2:
            continue
        model, opt, rows = torch_layout(torch, m, layout, args, rank, world_size)
        x, y = (torch.from_numpy(a[rows]) for a in (x_np, y_np))
        seconds = best_step_seconds(train_step(model, opt, x, y), dist.barrier, args)
        if rank == 0:
            row = ddp_row(seconds, model, world_size) if layout == "ddp" else {"step_s": seconds}
            row.update(lib="torch", case=layout, mode="eager")
            print(json.dumps(row), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    a = parse_args()
    run_torch(a) if a.lib == "torch" else run_oneflowlike(a)
