"""Draw a pipeline from a measured run: the example GPT in one stage per rank, its training step
as an nn.Graph, and when each stage ran each micro-batch's forward and backward.

    python -m oneflowlike.distributed.launch --nproc_per_node 2 \\
        examples/parallel/pipeline_timeline.py --schedule 1f1b --micro-batches 8 --out 1f1b.png

Prints the measured bubble (idle time over ranks x step time, from the compute each rank did)
next to the textbook (p-1)/(vm+p-1) (v stages per rank: 1 but for interleaved_1f1b) and to the
schedule's own timeline with the measured mean forward and backward times per stage and the
shortest send. Rank 0 draws the figure (matplotlib). With more ranks than cores, a rank's idle
time is another's compute: the measured bubble then counts time the machine was busy.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

import oneflowlike as flow

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "char_gpt"))
from data import CharDataset  # noqa: E402
from gpt_layouts import DATA, TrainStep, pipeline  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402

B = flow.sbp.broadcast


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--schedule", default="1f1b", choices=["gpipe", "1f1b", "interleaved_1f1b"])
    p.add_argument("--micro-batches", type=int, default=8)
    p.add_argument("--chunks", type=int, default=1, help="interleaved_1f1b: stages per rank")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--steps", type=int, default=4, help="the last one is drawn")
    p.add_argument("--out", default="pipeline.png", help="the figure (rank 0 writes it)")
    p.add_argument("--json", help="also write the actions and bubbles to this file")
    return p.parse_args(argv)


def actions(timeline, rank, stages, gap=2e-4):
    """This rank's actions of the step, of its `stages`: (backward, micro, stage) -> first start,
    last end, busy seconds and the pieces it ran in (spans closer than `gap` merged), from its
    compute spans (a span starts once its inputs are there; local scalar ops that every rank
    runs are left out)."""
    out = {}
    for s in sorted(timeline, key=lambda s: s["start"]):
        if s["thread"] != "compute" or s["micro"] < 0 or s["stage"] not in stages:
            continue
        a = out.setdefault((s["backward"], s["micro"], s["stage"]), {"pieces": [], "busy": 0.0})
        a["busy"] += s["end"] - s["start"]
        if a["pieces"] and s["start"] - a["pieces"][-1][1] < gap:
            a["pieces"][-1][1] = max(a["pieces"][-1][1], s["end"])
        else:
            a["pieces"].append([s["start"], s["end"]])
    return [{"rank": rank, "backward": k[0], "micro": k[1], "stage": k[2],
             "start": v["pieces"][0][0], "end": v["pieces"][-1][1], "busy": v["busy"],
             "pieces": v["pieces"]} for k, v in out.items()]  # fmt: skip


def send_seconds(acts, stages):
    """The shortest wait between an action ending and the next stage's action that needs it
    starting: what a send costs when the receiver is ready for it."""
    at = {(a["backward"], a["micro"], a["stage"]): a for a in acts}
    waits = []
    for (bwd, micro, stage), a in at.items():
        nxt = at.get((bwd, micro, stage - 1 if bwd else stage + 1))
        if nxt is not None and nxt["rank"] != a["rank"]:
            waits.append(max(0.0, nxt["start"] - a["end"]))
    return min(waits, default=0.0)


def summarize(acts, devices, micro, schedule, chunks):
    """Measured and predicted bubbles of the step's actions (from every rank)."""
    t0 = min(a["start"] for a in acts)
    makespan = max(a["end"] for a in acts) - t0
    busy = sum(a["busy"] for a in acts)
    stages = devices * chunks
    fwd = [statistics.mean(a["busy"] for a in acts if a["stage"] == k and not a["backward"])
           for k in range(stages)]  # fmt: skip
    bwd = [statistics.mean(a["busy"] for a in acts if a["stage"] == k and a["backward"])
           for k in range(stages)]  # fmt: skip
    plan = flow.nn.graph.pipeline_schedule(schedule, devices, micro, chunks)
    send = send_seconds(acts, stages)
    return {
        "schedule": schedule,
        "devices": devices,
        "micro_batches": micro,
        "chunks": chunks,
        "step_seconds": makespan,
        "measured_bubble": 1 - busy / (devices * makespan),
        "textbook_bubble": (devices - 1) / (chunks * micro + devices - 1),
        "schedule_bubble": plan.bubble_fraction(fwd, bwd, send),
        "send_seconds": send,
        "forward_seconds": fwd,
        "backward_seconds": bwd,
    }


def draw(acts, summary, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(a["start"] for a in acts)
    width = (max(a["end"] for a in acts) - t0) * 1e3
    devices = summary["devices"]
    fig, ax = plt.subplots(figsize=(12, 0.7 * devices + 1.6))
    for a in acts:
        color = "#4c9be8" if not a["backward"] else "#5cb85c"
        pieces = [((p[0] - t0) * 1e3, (p[1] - p[0]) * 1e3) for p in a["pieces"]]
        ax.broken_barh(pieces, (a["rank"] - 0.4, 0.8), facecolors=color, edgecolor="white")
        x, w = max(pieces, key=lambda p: p[1])
        label = str(a["micro"]) if summary["chunks"] == 1 else f"{a['micro']}.{a['stage']}"
        if w > 0.012 * width * len(label):  # where it fits
            ax.text(x + w / 2, a["rank"], label, ha="center", va="center", fontsize=7, color="w")
    ax.set_yticks(range(devices), [f"rank {r} (stage {r})" for r in range(devices)])
    ax.invert_yaxis()
    ax.set_xlabel("ms (forward blue, backward green; the numbers are micro-batches)")
    ax.set_title(
        f"{summary['schedule']}, {devices} ranks, {summary['micro_batches']} micro-batches"
        + (f", {summary['chunks']} stages per rank" if summary["chunks"] > 1 else "")
        + f"\nbubble {summary['measured_bubble']:.0%} measured, "
        f"{summary['textbook_bubble']:.0%} (p-1)/(vm+p-1), "
        f"{summary['schedule_bubble']:.0%} by the schedule with the measured times"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    args = parse_args(argv)
    rank, world = flow.distributed.get_rank(), flow.distributed.get_world_size()
    flow.manual_seed(0)
    ds = CharDataset.from_file(DATA, args.block_size, seed=0)
    cfg = GPTConfig(ds.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd)
    model = GPT(cfg)
    x_place, y_place = pipeline(model, [[r] for r in range(world)], B, args.chunks)
    step = TrainStep(model, flow.optim.SGD(model.parameters(), lr=0.1))
    step.config.set_gradient_accumulation_steps(args.micro_batches)
    step.config.set_pipeline_schedule(args.schedule)
    step.config.enable_timeline()
    for _ in range(args.steps):
        x, y = ds.get_batch("train", args.batch_size)
        step(x.to_global(x_place, [B]), y.to_global(y_place, [B]))

    # Rank 0 gathers every rank's actions through the job's store.
    store = flow.distributed.store()
    mine = range(rank, world * args.chunks, world)  # virtual stage k runs on rank k mod p
    store.set(f"timeline/{rank}", json.dumps(actions(step.timeline, rank, mine)))
    if rank != 0:
        return
    acts = [a for r in range(world) for a in json.loads(bytes(store.get(f"timeline/{r}")))]
    summary = summarize(acts, world, args.micro_batches, args.schedule, args.chunks)
    draw(acts, summary, args.out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "actions": acts}, f, indent=1)
    print(
        f"{args.schedule}: {world} ranks, {args.micro_batches} micro-batches, step "
        f"{summary['step_seconds'] * 1e3:.1f} ms; bubble {summary['measured_bubble']:.1%} "
        f"measured, {summary['textbook_bubble']:.1%} (p-1)/(vm+p-1), "
        f"{summary['schedule_bubble']:.1%} by the schedule with the measured stage times and "
        f"send ({summary['send_seconds'] * 1e3:.2f} ms); "
        f"figure {args.out}"
    )


if __name__ == "__main__":
    main()
