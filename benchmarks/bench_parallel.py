"""One training step of the example char-GPT on N local CPU ranks under each parallel layout,
against PyTorch's own (when PyTorch is installed), in one run: DDP, DTensor tensor parallel,
FSDP2, ZeroRedundancyOptimizer + DDP, and TP x DDP / TP x FSDP2 on a 2-D mesh, over Gloo.
`peer/ours` compares each layout with its PyTorch peer (parallel_worker.TORCH_PEERS).

    python benchmarks/bench_parallel.py [--ranks 4] [--repeats 2] [--batch-size 16] ...
    python benchmarks/bench_parallel.py --layouts dp,zero,auto,auto@4   # auto within 4 MiB
    python benchmarks/bench_parallel.py --layouts pp2xdp:4,pp4:4,auto_pipeline@4  # pipelines:
        # gpt_layouts.PIPELINES with 4 micro-batches (1F1B), and the planner's within 4 MiB:
        # its batch given on every rank, then (row auto_pipeline@4>stages) on the plan's stages

Both sides run through the launcher (python -m oneflowlike.distributed.launch, which gives each
rank 1/N of the cores) on the same model file, global batch and AdamW step; see
parallel_worker.py. Per layout, eagerly and as an nn.Graph, it prints the best time per step over
repeats, ddp/ours (> 1: we are faster), eager/graph (graph mode's speedup), the peak bytes of
tensors on rank 0 during a step, rank 0's bytes of parameters, gradients and optimizer states
(`state`: what an auto layout's budget covers), the collectives one step runs and the bytes they move per rank: `buffer` is the
sum of the collectives' buffers, `wire` what a ring or pairwise algorithm sends of them
(2(n-1)/n of an all_reduce's buffer, (n-1)/n of the others'). DDP's traffic is one all_reduce of
every gradient.
"""

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import fmt_time  # noqa: E402
from bench_comm import run_job  # noqa: E402
from parallel_worker import TORCH_PEERS  # noqa: E402

WORKER = Path(__file__).resolve().parent / "parallel_worker.py"
MODEL_ARGS = ("batch_size", "block_size", "n_layer", "n_head", "n_embd", "steps", "rounds")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--layouts", default="ddp,dp,tp,zero,2d,seq")
    ap.add_argument("--repeats", type=int, default=2, help="launcher jobs per side; best kept")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5, help="steps per timed round")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per job; best kept")
    ap.add_argument("--timeout", type=float, default=1200)
    return ap.parse_args()


def run(lib, args):
    cmd = [sys.executable, "-m", "oneflowlike.distributed.launch"]
    cmd += ["--nproc_per_node", str(args.ranks), str(WORKER), "--lib", lib]
    cmd += ["--layouts", args.layouts]
    if lib == "torch":
        cmd += ["--torch-peers", "all"]
    for name in MODEL_ARGS:
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    best = {}
    for _ in range(args.repeats):
        for row in run_job(cmd, args.timeout):
            key = (row["case"], row.get("mode", "eager"))
            if key not in best or row["step_s"] < best[key]["step_s"]:
                best[key] = row
    return best


def mb(nbytes):
    return f"{nbytes / (1 << 20):.2f} MB"


def predicted(row):
    """The cost model's step for a graph row, and its error against the measured step."""
    if row.get("predicted_s") is None:
        return "-"
    return fmt_time(row["predicted_s"])


def predicted_split(row):
    """The prediction's compute and communication threads' busy times."""
    if row.get("predicted_compute_s") is None:
        return ""
    return f"{fmt_time(row['predicted_compute_s'])} + {fmt_time(row['predicted_comm_s'])}"


def prediction_errors(rows):
    """|predicted - measured| / measured of the graph rows."""
    return sorted(
        abs(r["predicted_s"] - r["step_s"]) / r["step_s"]
        for r in rows
        if r.get("predicted_s") is not None
    )


def collectives(row):
    if "collectives" not in row:
        return ""
    return ", ".join(f"{n} {k}" if n is not None else k for k, n in row["collectives"].items())


def main():
    args = parse_args()
    if "2d" in args.layouts.split(",") and args.ranks != 4:
        sys.exit("the 2d layout is a 2x2 mesh: run it with --ranks 4, or leave it out of --layouts")
    ours = run("oneflowlike", args)
    torch_rows = run("torch", args) if importlib.util.find_spec("torch") else {}
    ddp = torch_rows.get(("ddp", "eager"))
    print(
        f"train step, {args.ranks} CPU ranks: B={args.batch_size} T={args.block_size} "
        f"C={args.n_embd} L={args.n_layer} heads={args.n_head}, AdamW"
    )
    header = (
        f"{'layout':23s} {'mode':6s} {'step':>10s} {'predicted':>10s} {'(compute + comm)':>22s} {'ddp/ours':>9s} {'peer/ours':>21s} {'eager/graph':>12s} "
        f"{'peak':>9s} {'state':>9s} {'buffer':>9s} {'wire':>9s}  collectives"
    )
    print(header)
    print("-" * (len(header) + 30))
    rows = [  # a planned pipeline's row, then its row with the batch given on its stages
        ours[k]
        for c in args.layouts.split(",")
        for case in (c, f"{c}>stages")
        for k in ((case, "eager"), (case, "graph"))
        if k in ours
    ]
    for row in rows + [torch_rows[k] for k in sorted(torch_rows)]:
        name = row["case"] if row["lib"] == "oneflowlike" else f"torch {row['case']}"
        mode = row.get("mode", "eager")
        ratio = f"{ddp['step_s'] / row['step_s']:8.2f}x" if ddp else "-"
        peer = torch_rows.get((TORCH_PEERS.get(row["case"].split("@")[0], ""), "eager"))
        vs_peer = (
            f"{peer['case']} {peer['step_s'] / row['step_s']:.2f}x"
            if peer and row["lib"] == "oneflowlike"
            else ""
        )
        eager = ours.get((row["case"], "eager"))
        speedup = f"{eager['step_s'] / row['step_s']:11.2f}x" if mode == "graph" and eager else ""
        print(
            f"{name:23s} {mode:6s} {fmt_time(row['step_s']):>10s} {predicted(row):>10s} {predicted_split(row):>22s} {ratio:>9s} {vs_peer:>21s} {speedup:>12s} "
            f"{mb(row['peak_bytes']) if 'peak_bytes' in row else '-':>9s} {mb(row['state_bytes']) if 'state_bytes' in row else '-':>9s} {mb(row['buffer_bytes']) if 'buffer_bytes' in row else '-':>9s} {mb(row['wire_bytes']) if 'wire_bytes' in row else '-':>9s}  {collectives(row)}"
        )

    for row in rows:
        if row.get("pipeline") and not row["case"].endswith(">stages"):
            print(f"{row['case']}: {row['pipeline']}")
    errors = prediction_errors(rows)
    if errors:
        specs = sorted({r["spec"] for r in rows if r.get("predicted_s") is not None})
        print(
            f"cost model ({', '.join(specs)} spec) vs measured (graph steps): median error "
            f"{statistics.median(errors):.0%}, worst {errors[-1]:.0%}"
        )


if __name__ == "__main__":
    main()
