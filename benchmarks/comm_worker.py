"""One rank of bench_comm.py, started by oneflowlike.distributed.launch: times our collectives
through the Python API (flow.distributed.world()) on float32 CPU tensors. Rank 0 prints one JSON
line per (op, size) in raw_gloo_bench's format, with the same byte conventions (nccl-tests):

    {"op": ..., "bytes": ..., "seconds": ..., "ranks": ..., "iters": ..., "impl": "oneflowlike"}

`seconds` is the best round's mean time per call on the slowest rank. Each call goes through the binding as a
user would call it: all_gather, reduce_scatter and all_to_all allocate their output every call.
"""

import argparse
import json
import time

import oneflowlike as flow
import oneflowlike.distributed as dist

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


def iters_for(nbytes):
    """raw_gloo_bench's rule: about 256 MB moved per size, within [10, 200] calls."""
    return max(10, min(200, (256 << 20) // nbytes))


def make_case(comm, op, nbytes):
    """(bytes actually moved by the nccl-tests convention, one call)."""
    n = comm.size()
    if op == "all_reduce":
        count = nbytes // 4
        t = flow.ones(count, dtype=flow.float32)
        return count * 4, lambda: comm.all_reduce(t, "sum")
    block = nbytes // 4 // n
    if op == "all_gather":
        t = flow.ones(block, dtype=flow.float32)
        return block * n * 4, lambda: comm.all_gather(t)
    t = flow.ones(block * n, dtype=flow.float32)
    if op == "reduce_scatter":
        return block * n * 4, lambda: comm.reduce_scatter(t, "sum")
    if op == "all_to_all":
        return block * n * 4, lambda: comm.all_to_all(t)
    raise ValueError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")


def time_case(comm, call, iters, warmup, rounds):
    """raw_gloo_bench's rule: `iters` calls in `rounds` rounds; each round's mean per call is taken
    on the slowest rank and the best round wins."""
    for _ in range(warmup):
        call()
    rounds = max(1, min(rounds, iters))
    per_round = max(1, iters // rounds)
    best = float("inf")
    for _ in range(rounds):
        comm.barrier()
        t0 = time.perf_counter()
        for _ in range(per_round):
            call()
        slowest = flow.full((1,), (time.perf_counter() - t0) / per_round, dtype=flow.float64)
        comm.all_reduce(slowest, "max")
        best = min(best, slowest.item())
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--min-bytes", type=int, default=1 << 10)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--iters", type=int, default=0, help="0: chosen per size")
    p.add_argument("--warmup", type=int, default=-1, help="-1: chosen per size")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds; the best counts")
    p.add_argument("--ops", default=",".join(OPS))
    args = p.parse_args()

    comm = dist.world()
    for op in [o for o in args.ops.split(",") if o]:
        nbytes = args.min_bytes
        while nbytes <= args.max_bytes:
            moved, call = make_case(comm, op, nbytes)
            iters = args.iters if args.iters > 0 else iters_for(moved)
            warmup = args.warmup if args.warmup >= 0 else max(2, iters // 10)
            seconds = time_case(comm, call, iters, warmup, args.rounds)
            if comm.rank() == 0:
                row = {
                    "op": op,
                    "bytes": moved,
                    "seconds": seconds,
                    "ranks": comm.size(),
                    "iters": iters,
                    "impl": "oneflowlike",
                }
                print(json.dumps(row), flush=True)
            nbytes *= 4


if __name__ == "__main__":
    main()
