"""Train the char-GPT under one parallel layout: the model code is the one-device code.

    python examples/parallel/gpt_layouts.py --layout single            # one process, the reference
    python -m oneflowlike.distributed.launch --nproc_per_node 4 \\
        examples/parallel/gpt_layouts.py --layout dp                   # or tp, zero, 2d, seq
    ... gpt_layouts.py --layout tp --graph                             # the step as an nn.Graph
    ... gpt_layouts.py --layout auto --graph                           # the planner's layouts
    ... gpt_layouts.py --layout auto --graph --memory-budget 300000    # within 300 kB a device

A layout is only a choice of SBP for the parameters and the batch (LAYOUTS below); the ops pick
their signatures and boxing inserts the collectives. Every layout prints the same losses as the
single-process run, up to floating-point summation order, eagerly or in graph mode (--graph:
the whole step traced once and run by the C++ executor, its collectives fused and overlapped).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import oneflowlike as flow

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "char_gpt"))
from data import CharDataset  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "fortunes.txt"
S, B = flow.sbp.split, flow.sbp.broadcast


def megatron(name, param):
    """Tensor parallel, Megatron style: q/k/v and the MLP's first Linear split by output
    features (column parallel), the attention and MLP projections by input features (row
    parallel); the token embedding and the LM head split by vocabulary (the loss runs on the
    split logits: vocabulary-parallel cross-entropy); position embeddings and LayerNorms
    replicated."""
    column = any(f".{m}." in f".{name}" for m in ("query", "key", "value", "mlp.fc"))
    row = name.endswith("attn.proj.weight") or name.endswith("mlp.proj.weight")
    if column or name in ("tok_emb.weight", "head.weight"):
        return S(0)  # weight (out, in) and bias (out,); a table (vocabulary, width)
    if row:
        return S(1)  # weight (out, in); the bias stays B
    return B


def zero(name, param):
    """ZeRO-style: every parameter (and so its gradient and optimizer states) split on dim 0."""
    return S(0)


# layout -> (mesh, parameter sbp (one or a function), batch sbp)
LAYOUTS = {
    "dp": ([0, 1, 2, 3], B, S(0)),
    "tp": ([0, 1, 2, 3], megatron, B),
    "zero": ([0, 1, 2, 3], zero, S(0)),
    "2d": ([[0, 1], [2, 3]], lambda n, p: (B, megatron(n, p)), (S(0), B)),
    "seq": ([0, 1, 2, 3], B, S(1)),
    # The planner's choice (graph mode only): parameters start replicated, the batch split; the
    # first step plans every layout (flow.auto_parallel) and reshards the parameters to it.
    "auto": ([0, 1, 2, 3], B, S(0)),
}

# Pipelines: layout -> (each stage's ranks, parameter sbp, batch sbp). The embeddings run in the
# first stage, the blocks are split as evenly as they go (the first stages take one more when
# they do not divide), the final LayerNorm and the head run in the last stage.
PIPELINES = {
    "pp2": ([[0], [1]], B, B),  # ranks 2 and 3 sit it out
    "pp4": ([[0], [1], [2], [3]], B, B),
    "pp2xdp": ([[0, 1], [2, 3]], B, S(0)),
    "pp2xtp": ([[0, 1], [2, 3]], megatron, B),
}


def pipeline(model, stage_ranks, param_sbp, chunks=1, device="cpu"):
    """Puts `model` into len(stage_ranks) * chunks stages: virtual stage k on the ranks of
    stage_ranks[k % len(stage_ranks)] (chunks > 1: the interleaved schedule's layout). Returns
    the first and last stages' placements."""
    places = [flow.placement(device, ranks=r) for r in stage_ranks]
    model.to_global(places[0], param_sbp)  # the layouts; set_stage moves them to their stage
    n = len(places) * chunks
    blocks = list(model.blocks)
    if len(blocks) < n:
        sys.exit(f"{len(blocks)} blocks do not fill {n} pipeline stages")
    per, extra = divmod(len(blocks), n)
    GraphModule = flow.nn.graph.GraphModule
    first = 0
    for k in range(n):
        count = per + (k < extra)
        for block in blocks[first : first + count]:
            block.to(GraphModule).set_stage(k, places[k % len(places)])
        first += count
    for m in (model.tok_emb, model.pos_emb, model.drop):
        m.to(GraphModule).set_stage(0, places[0])
    for m in (model.ln_f, model.head):
        m.to(GraphModule).set_stage(n - 1, places[(n - 1) % len(places)])
    return places[0], places[(n - 1) % len(places)]


class TrainStep(flow.nn.Graph):
    """One training step (forward, backward, optimizer) as a graph."""

    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        _, loss = self.model(x, y)
        loss.backward()
        return loss


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layout", default="single", choices=["single", *LAYOUTS, *PIPELINES])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--n-embd", type=int, default=32)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--optimizer", default="adamw", choices=["adamw", "adamw-fused", "sgd"])
    p.add_argument("--lr", type=float, help="default: 3e-3 for adamw, 0.3 for sgd (momentum 0.9)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", help="write the final parameters (whole tensors) to this .npz")
    p.add_argument("--graph", action="store_true", help="train with an nn.Graph of the step")
    p.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda"],
        help="placements' device type (cuda: rank r on GPU LOCAL_RANK %% device_count)",
    )
    p.add_argument("--micro-batches", type=int, default=1, help="graph mode: micro-batches")
    p.add_argument(
        "--pipeline",
        action="store_true",
        help="--layout auto: the planner chooses pipeline stages and micro-batches too",
    )
    p.add_argument(
        "--schedule",
        default="1f1b",
        choices=["gpipe", "1f1b", "interleaved_1f1b"],
        help="pipeline layouts in graph mode: the micro-batch schedule",
    )
    p.add_argument("--chunks", type=int, default=1, help="interleaved_1f1b: chunks per device")
    p.add_argument(
        "--memory-budget",
        type=float,
        help="--layout auto: bytes per device for parameters, gradients, "
        "optimizer states and the activations the backward reads",
    )
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    flow.manual_seed(args.seed)
    ds = CharDataset.from_file(DATA, args.block_size, seed=args.seed)
    cfg = GPTConfig(ds.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd)
    model = GPT(cfg)
    place = batch_sbp = None
    x_place = y_place = None  # where the batch and the targets go in
    if args.layout in PIPELINES:
        stage_ranks, param_sbp, batch_sbp = PIPELINES[args.layout]
        world = list(range(flow.distributed.get_world_size()))
        place = flow.placement(args.device, ranks=world)
        x_place, y_place = pipeline(model, stage_ranks, param_sbp, args.chunks, args.device)
    elif args.layout != "single":
        ranks, param_sbp, batch_sbp = LAYOUTS[args.layout]
        place = x_place = y_place = flow.placement(args.device, ranks=ranks)
        model.to_global(place, param_sbp)
    else:
        model.to(args.device)
    if args.optimizer.startswith("adamw"):  # (fused: as on CUDA, by default)
        fused = True if args.optimizer == "adamw-fused" else None
        opt = flow.optim.AdamW(
            model.parameters(), lr=args.lr or 3e-3, weight_decay=0.01, fused=fused
        )
    else:
        opt = flow.optim.SGD(model.parameters(), lr=args.lr or 0.3, momentum=0.9)

    if args.layout == "auto" and not args.graph:
        sys.exit("--layout auto plans a graph: add --graph")
    step = TrainStep(model, opt) if args.graph else None
    if args.layout == "auto":
        step.config.enable_auto_parallel(
            True,
            memory_budget=args.memory_budget,
            pipeline=args.pipeline,
            chunks=(args.chunks,) if args.chunks > 1 else (1, 2),
        )
    if step is not None:
        step.config.set_gradient_accumulation_steps(args.micro_batches)
        step.config.set_pipeline_schedule(args.schedule)
    losses = []
    collectives = {}  # of the last step, from comm_log
    for i in range(args.steps):
        x, y = ds.get_batch("train", args.batch_size)  # every rank draws the same batch
        if place is None:
            x, y = x.to(args.device), y.to(args.device)
        else:
            replicated = [B] * len(x_place.hierarchy)
            x = x.to_global(x_place, replicated).to_global(sbp=batch_sbp)
            y = y.to_global(y_place, replicated).to_global(sbp=batch_sbp)
        with flow.boxing.comm_log() as log:
            if step is not None:
                loss = step(x, y)
            else:
                _, loss = model(x, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        if i == args.steps - 1:
            for line in log:
                collectives[line.split(" ")[0]] = collectives.get(line.split(" ")[0], 0) + 1
        if place is not None and loss.placement != place:  # the last stage's: to every rank
            loss = loss.to_global(place, [B] * len(place.hierarchy))
        local = loss if place is not None else loss.cpu()  # a global numpy() is the whole tensor
        losses.append(float(local.numpy().mean()))  # the micro-batches' mean

    rank = flow.distributed.get_rank() if place is not None else 0

    def whole(p):  # numpy() of a global tensor is collective: every rank takes part
        if place is None:
            return p.cpu().numpy()
        if p.placement != place:  # a pipeline stage's: to every rank first
            p = p.to_global(place, [B] * len(place.hierarchy))
        return p.numpy()

    if args.save and rank == 0:
        np.savez(args.save, **{n: whole(p) for n, p in model.named_parameters()})
    elif args.save:
        for _, p in model.named_parameters():
            whole(p)
    if rank == 0:
        report = {"layout": args.layout, "losses": losses, "collectives": collectives}
        if step is not None and args.pipeline:
            report["pipeline"] = step.plan.description
        report["state_bytes"] = state_bytes(model, opt)
        if place is not None:  # where each parameter and optimizer state lives
            report["param_sbp"] = {n: _sbp_str(p) for n, p in model.named_parameters()}
            report["state_sbp"] = {
                n: sorted(
                    {_sbp_str(v) for v in opt.state[p].values() if isinstance(v, flow.Tensor)}
                )
                for n, p in model.named_parameters()
            }
        print(json.dumps(report), flush=True)


def state_bytes(model, opt):
    """This rank's bytes of the parameters, their gradients and the optimizer's states: what the
    planner's memory budget covers."""
    total = 0
    for p in model.parameters():
        local = p.to_local() if p.is_global else p
        total += 2 * local.numel() * local.element_size()  # the parameter and its gradient
        for s in opt.state.get(p, {}).values():
            if isinstance(s, flow.Tensor):
                s = s.to_local() if s.is_global else s
                total += s.numel() * s.element_size()
    return total


def _sbp_str(t):
    return "(" + ", ".join(s.to_string() for s in t.sbp) + ")"


if __name__ == "__main__":
    main()
