"""One rank of bench_boxing.py, started by oneflowlike.distributed.launch: times reshard
(x.to_global(sbp=...)) of float32 CPU global tensors against the raw collective its plan runs,
called on the same shards through flow.distributed.world():

    S(0)    -> B     all_gather_v(shard, counts)
    P(sum)  -> B     all_reduce(partial)               (in place; reshard clones first)
    P(sum)  -> S(0)  reduce_scatter_v(partial, counts)
    S(0)    -> S(1)  all_to_all_v(shard, send_counts, recv_counts)

The logical tensor is (rows, 1024) float32 of --sizes bytes. Both sides are timed in the same
rounds, alternating which goes first; a round's mean per call is taken on the slowest rank and
the best round counts. Before timing, each reshard's result is checked against the raw
collective's. Rank 0 prints one JSON line per (case, size):

    {"case": ..., "raw": ..., "bytes": ..., "ranks": ..., "iters": ...,
     "reshard_s": ..., "raw_s": ..., "plan": "<the collectives the reshard ran>"}
"""

import argparse
import json
import time

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist

B, P, S = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split
COLS = 1024
CASES = ("S0->B", "P->B", "P->S0", "S0->S1")


def iters_for(nbytes):
    """About 512 MB of logical tensor per side and case, within [8, 128] calls."""
    return max(8, min(128, (512 << 20) // nbytes))


def make_case(name, comm, place, rows, rng):
    """(label, raw collective's name, reshard call, raw call, logical result rows of both)."""
    n, r = comm.size(), comm.rank()
    split_rows = [flow._C.split_range(rows, n, k) for k in range(n)]
    row_counts = [stop - start for start, stop in split_rows]
    col_splits = [flow._C.split_range(COLS, n, k) for k in range(n)]
    col_counts = [stop - start for start, stop in col_splits]
    # Small integers, so sums are exact and reshard and raw results compare equal.
    if name.startswith("S0"):
        local = flow.tensor(rng.integers(0, 8, (row_counts[r], COLS)).astype(np.float32))
        x = local.to_global(placement=place, sbp=S(0))
        flat = local.reshape(-1)
        if name == "S0->B":
            counts = [c * COLS for c in row_counts]
            return (
                "S(0)->B",
                "all_gather_v",
                lambda: x.to_global(sbp=B),
                lambda: comm.all_gather_v(flat, counts),
            )
        # The raw side sends the shard already packed by destination (column block k to rank
        # k, packed once here); reshard packs every call, which is part of what it costs.
        shard = local.numpy()
        packed = flow.tensor(np.concatenate([shard[:, a:b].ravel() for a, b in col_splits]))
        send = [row_counts[r] * c for c in col_counts]
        recv = [c * col_counts[r] for c in row_counts]
        return (
            "S(0)->S(1)",
            "all_to_all_v",
            lambda: x.to_global(sbp=S(1)),
            lambda: comm.all_to_all_v(packed, send, recv),
        )
    local = flow.tensor(rng.integers(0, 8, (rows, COLS)).astype(np.float32))
    x = local.to_global(placement=place, sbp=P)
    if name == "P->B":
        # all_reduce works in place: its own copy, whose values grow (to inf after enough calls,
        # which does not change the speed of float adds; the check runs on the first call).
        buf = local.clone().reshape(-1)
        return "P(sum)->B", "all_reduce", lambda: x.to_global(sbp=B), lambda: comm.all_reduce(buf)
    flat = local.reshape(-1)
    counts = [c * COLS for c in row_counts]
    return (
        "P(sum)->S(0)",
        "reduce_scatter_v",
        lambda: x.to_global(sbp=S(0)),
        lambda: comm.reduce_scatter_v(flat, counts),
    )


def check(label, comm, resharded, raw):
    """The reshard's shard equals the raw collective's output, on every rank."""
    a = resharded.to_local().numpy().reshape(-1)
    b = raw.numpy().reshape(-1)
    bad = flow.full((1,), float(a.shape != b.shape or not np.array_equal(a, b)), dtype=flow.float64)
    comm.all_reduce(bad, "max")
    if bad.item():
        raise RuntimeError(f"[boxing_worker] {label}: reshard and raw results differ")


def timed(comm, call, n):
    comm.barrier()
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    slowest = flow.full((1,), (time.perf_counter() - t0) / n, dtype=flow.float64)
    comm.all_reduce(slowest, "max")
    return slowest.item()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sizes", default=f"{4 << 20},{16 << 20},{64 << 20}", help="logical bytes")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--iters", type=int, default=0, help="timed calls per side (0: per size)")
    p.add_argument("--rounds", type=int, default=8, help="timed rounds; the best counts")
    p.add_argument("--warmup", type=int, default=2, help="untimed calls per side")
    args = p.parse_args()

    comm = dist.world()
    place = flow.placement("cpu", ranks=list(range(comm.size())))
    rng = np.random.default_rng(comm.rank())
    for name in [c for c in args.cases.split(",") if c]:
        for nbytes in [int(s) for s in args.sizes.split(",") if s]:
            rows = nbytes // 4 // COLS
            label, raw_name, reshard, raw = make_case(name, comm, place, rows, rng)
            with flow.boxing.comm_log() as log:
                resharded = reshard()
            check(label, comm, resharded, raw())
            del resharded
            for _ in range(args.warmup):
                reshard()
                raw()
            iters = args.iters if args.iters > 0 else iters_for(nbytes)
            rounds = max(1, min(args.rounds, iters))
            per_round = max(1, iters // rounds)
            best = {"reshard": float("inf"), "raw": float("inf")}
            for i in range(rounds):
                # Alternate which side goes first so drift does not favour one.
                order = [("reshard", reshard), ("raw", raw)]
                for who, call in order if i % 2 == 0 else order[::-1]:
                    best[who] = min(best[who], timed(comm, call, per_round))
            if comm.rank() == 0:
                row = {
                    "case": label,
                    "raw": raw_name,
                    "bytes": rows * COLS * 4,
                    "ranks": comm.size(),
                    "iters": per_round * rounds,
                    "reshard_s": best["reshard"],
                    "raw_s": best["raw"],
                    "plan": "; ".join(log),
                }
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
