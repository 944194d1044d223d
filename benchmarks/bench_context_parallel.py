"""Context parallelism's paths against one process, in one run.

Attention of one long sequence, (1, heads, T, 64) float32 on CPU, causal and not, forward and
backward through the fused op (flash_attention), with q, k and v split on the sequence over N
local ranks (2 and 4 by default):

  as split     the op's own choice for q, k and v split on the sequence (printed): the ring
               (k and v stay split and pass from rank to rank, overlapped with the kernel)
               or the heads split (an all-to-all each way), whichever its cost model prices
               lower: causal rows late in the sequence see more keys, so the ring's busiest
               rank does up to twice a heads split's work
  gathered     k and v all-gathered first (S(2) -> B), each rank's rows against every key
  all-to-all   q, k and v to a heads split and the output back (DeepSpeed-Ulysses)
  balanced     (causal) the sequence in the load-balanced order for N ranks (F.load_balance:
               each rank holds a chunk from either end), the op told so (balance=N): the
               ring with every rank doing the same work

and the same attention whole in one process. Each figure is the best of --rounds timed calls on
rank 0; the job is repeated --repeats times, and the spread over repeats is printed. speedup =
one process / N ranks (the N ranks share this machine's cores, so above 1 only where cores are
free). Also each path's peak bytes of k and v a rank holds: the ring's is its own block and one
in flight, the gather's the whole sequence.

    python benchmarks/bench_context_parallel.py [--ranks 2,4] [--seq 2048,4096] [--repeats 3]
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_comm import run_job  # noqa: E402

PATHS = ("as split", "gathered", "all-to-all", "balanced")


def paths(world, causal):
    if world == 1:
        return ["one process"]
    return [p for p in PATHS if causal or p != "balanced"]


HEADS, D = 8, 64


def worker(args):
    import numpy as np

    import oneflowlike as flow
    import oneflowlike.distributed as dist
    import oneflowlike.nn.functional as F

    world, rank = dist.get_world_size(), dist.get_rank()
    place = flow.placement("cpu", ranks=list(range(world)))
    seq, heads, B = flow.sbp.split(2), flow.sbp.split(1), flow.sbp.broadcast
    rows = []
    for T, causal in [(T, c) for T in args.seq for c in (False, True)]:
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal((1, HEADS, T, D)).astype(np.float32) for _ in range(3)]

        def step(q, k, v, path):
            if path == "gathered":
                k, v = k.to_global(sbp=B), v.to_global(sbp=B)
            elif path == "all-to-all":
                q, k, v = (t.to_global(sbp=heads) for t in (q, k, v))
            balance = world if path == "balanced" else 0
            out = flow._C.flash_attention(q, k, v, D**-0.5, causal, balance=balance)
            if path == "all-to-all":
                out = out.to_global(sbp=seq)
            out.sum().backward()

        def best(fn):
            fn()
            times = []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            return min(times)

        for path in paths(world, causal):
            order = (lambda t: F.load_balance(t, world)) if path == "balanced" else (lambda t: t)
            qkv = [order(flow.tensor(a)).to_global(place, B).to_global(sbp=seq) for a in arrays]
            for t in qkv:
                t.requires_grad = True
            dist.barrier()
            seconds = best(lambda: step(*qkv, path))
            with flow.boxing.cost_log() as costs:
                step(*qkv, path)
            chosen = next(c["signature"] for c in costs if c["op"] == "flash_attention")
            ring = chosen.startswith("S(2), B, B") and path in ("as split", "balanced")
            block = -(-T // world)
            rows_held = {"all-to-all": -(-HEADS // world) * T / HEADS}
            held = 2 * block if ring else rows_held.get(path, T)
            if path == "as split" and not ring and world > 1:
                held = rows_held["all-to-all"]
            kv_bytes = 2 * 4 * HEADS * D * held
            rows.append({"T": T, "causal": causal, "path": path, "seconds": seconds,
                         "kv_bytes": kv_bytes, "signature": chosen})  # fmt: skip
    if rank == 0:
        for r in rows:
            print(json.dumps(r), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--seq", default="2048,4096")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.seq = [int(s) for s in str(args.seq).split(",")]
    if args.worker:
        return worker(args)
    ranks = [int(n) for n in args.ranks.split(",")]
    times = {}  # (n, T, path) -> [seconds per repeat]
    kv = {}
    for _ in range(args.repeats):
        for n in [1, *ranks]:  # alternating, so a slow spell hits every row
            cmd = [sys.executable, "-m", "oneflowlike.distributed.launch", "--nproc_per_node",
                   str(n), __file__, "--worker", "--seq", ",".join(map(str, args.seq)),
                   "--rounds", str(args.rounds)]  # fmt: skip
            for r in run_job(cmd, args.timeout, env=dict(os.environ)):
                key = (n, r["T"], r["causal"], r["path"])
                times.setdefault(key, []).append(r["seconds"])
                kv[key] = (r["kv_bytes"], r["signature"])
    print(f"attention (1, {HEADS}, T, {D}) float32, forward + backward, fused op, best of "
          f"{args.rounds} calls; median [min, max] over {args.repeats} repeats")  # fmt: skip
    print(f"{'ranks':>5s} {'T':>6s} {'causal':>6s} {'path':12s} {'ms':>26s} {'speedup':>8s} "
          f"{'k+v MB/rank':>12s}  signature")  # fmt: skip
    for T in args.seq:
        for causal in (False, True):
            one = statistics.median(times[(1, T, causal, "one process")])
            for n in [1, *ranks]:
                for path in paths(n, causal):
                    s = times[(n, T, causal, path)]
                    med = statistics.median(s)
                    spread = f"{med * 1e3:8.1f} [{min(s) * 1e3:7.1f}, {max(s) * 1e3:7.1f}]"
                    kv_bytes, sig = kv[(n, T, causal, path)]
                    print(f"{n:5d} {T:6d} {str(causal):>6s} {path:12s} {spread:>26s} "
                          f"{one / med:8.2f} {kv_bytes / 1e6:12.2f}  {sig}")  # fmt: skip


if __name__ == "__main__":
    main()
