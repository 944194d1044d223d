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
    parallel); embeddings, LayerNorms and the LM head replicated."""
    column = any(f".{m}." in f".{name}" for m in ("query", "key", "value", "mlp.fc"))
    row = name.endswith("attn.proj.weight") or name.endswith("mlp.proj.weight")
    if column:
        return S(0)  # weight (out, in) and bias (out,)
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
    p.add_argument("--layout", default="single", choices=["single", *LAYOUTS])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--n-embd", type=int, default=32)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--optimizer", default="adamw", choices=["adamw", "sgd"])
    p.add_argument("--lr", type=float, help="default: 3e-3 for adamw, 0.3 for sgd (momentum 0.9)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", help="write the final parameters (whole tensors) to this .npz")
    p.add_argument("--graph", action="store_true", help="train with an nn.Graph of the step")
    p.add_argument(
        "--memory-budget",
        type=float,
        help="--layout auto: bytes per device for parameters, gradients, optimizer states and "
        "the activations the backward reads",
    )
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    flow.manual_seed(args.seed)
    ds = CharDataset.from_file(DATA, args.block_size, seed=args.seed)
    cfg = GPTConfig(ds.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd)
    model = GPT(cfg)
    place = batch_sbp = None
    if args.layout != "single":
        ranks, param_sbp, batch_sbp = LAYOUTS[args.layout]
        place = flow.placement("cpu", ranks=ranks)
        model.to_global(place, param_sbp)
    if args.optimizer == "adamw":
        opt = flow.optim.AdamW(model.parameters(), lr=args.lr or 3e-3, weight_decay=0.01)
    else:
        opt = flow.optim.SGD(model.parameters(), lr=args.lr or 0.3, momentum=0.9)

    if args.layout == "auto" and not args.graph:
        sys.exit("--layout auto plans a graph: add --graph")
    step = TrainStep(model, opt) if args.graph else None
    if args.layout == "auto":
        step.config.enable_auto_parallel(True, memory_budget=args.memory_budget)
    losses = []
    collectives = {}  # of the last step, from comm_log
    for i in range(args.steps):
        x, y = ds.get_batch("train", args.batch_size)  # every rank draws the same batch
        if place is not None:
            replicated = [B] * len(place.hierarchy)
            x = x.to_global(place, replicated).to_global(sbp=batch_sbp)
            y = y.to_global(place, replicated).to_global(sbp=batch_sbp)
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
        losses.append(float(loss.numpy()))

    rank = flow.distributed.get_rank() if place is not None else 0
    if args.save and rank == 0:
        np.savez(args.save, **{n: p.numpy() for n, p in model.named_parameters()})
    elif args.save:
        for _, p in model.named_parameters():
            p.numpy()  # numpy() of a global tensor is collective: every rank takes part
    if rank == 0:
        report = {"layout": args.layout, "losses": losses, "collectives": collectives}
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
