"""Every collective on every dtype class, with even and uneven sizes, against numpy.

Each rank builds every rank's input from (dtype, rank, salt), so it can compute the expected
result alone. Prints one JSON line (rank, checks done, flow.env values) when all pass.
"""

import os
import time

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
from _common import DTYPES, check, data, report, tensor

R = dist.get_rank()
P = dist.get_world_size()
CHECKS = 0


def ok(what, got, want, name):
    global CHECKS
    rtol = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-6}.get(name, 0.0)
    check(f"{what} {name} rank {R}/{P}", got, want, rtol)
    CHECKS += 1


def balanced(total):
    return [total // P + (r < total % P) for r in range(P)]


def with_zero():
    return [0 if r == 1 else r + 2 for r in range(P)]


def reduced(arrays, op, name):
    s = np.stack(arrays)
    if name == "bool":
        return {"max": s.any(0), "min": s.all(0)}[op]
    f = {"sum": np.sum, "product": np.prod, "max": np.max, "min": np.min, "avg": np.mean}[op]
    out = f(s, axis=0)
    return out if op == "avg" else out.astype(s.dtype)


def ops_for(name):
    if name == "bool":
        return ["max", "min"]
    return ["sum", "product", "max", "min"] + (["avg"] if "float" in name else [])


def run_reductions(name):
    for op in ops_for(name):
        x = tensor(data(name, R, (5, 3)), name)
        dist.all_reduce(x, op)
        ok(
            f"all_reduce {op}",
            x,
            reduced([data(name, r, (5, 3)) for r in range(P)], op, name),
            name,
        )
    # A transposed (non-contiguous) view is reduced in place too.
    x = tensor(data(name, R, (3, 4), 1), name).transpose(0, 1)
    dist.all_reduce(x, ops_for(name)[0])
    want = reduced([data(name, r, (3, 4), 1).T for r in range(P)], ops_for(name)[0], name)
    ok("all_reduce non-contiguous", x, want, name)
    op = ops_for(name)[0]
    out = dist.reduce_scatter(tensor(data(name, R, (2 * P, 3), 2), name), op)
    want = reduced([data(name, r, (2 * P, 3), 2) for r in range(P)], op, name)
    ok("reduce_scatter", out, want[2 * R : 2 * R + 2], name)
    for counts in (balanced(2 * P + 1), with_zero()):
        n, start = sum(counts), sum(counts[:R])
        out = dist.reduce_scatter_v(tensor(data(name, R, n, 3), name), counts, op)
        want = reduced([data(name, r, n, 3) for r in range(P)], op, name)
        ok(f"reduce_scatter_v {counts}", out, want[start : start + counts[R]], name)
    for root in range(P):
        x = tensor(data(name, R, 4, 4), name)
        dist.reduce(x, root, op)
        want = reduced([data(name, r, 4, 4) for r in range(P)], op, name)
        ok(f"reduce to {root}", x, want if R == root else data(name, R, 4, 4), name)


def run_gathers(name):
    every = [data(name, r, (2, 3), 5) for r in range(P)]
    ok("all_gather", dist.all_gather(tensor(every[R], name)), np.concatenate(every), name)
    for counts in (balanced(2 * P + 1), with_zero()):
        parts = [data(name, r, counts[r], 6) for r in range(P)]
        out = dist.all_gather_v(tensor(parts[R], name), counts)
        ok(f"all_gather_v {counts}", out, np.concatenate(parts), name)
        for root in range(P):
            out = dist.gather(tensor(parts[R], name), root, counts=counts)
            if R == root:
                ok(f"gather_v to {root}", out, np.concatenate(parts), name)
            elif out is not None:
                raise AssertionError(f"[gather] rank {R} is not the root but got {out}")
    for root in range(P):
        out = dist.gather(tensor(every[R], name), root)
        if R == root:
            ok(f"gather to {root}", out, np.concatenate(every), name)


def run_scatters(name):
    for root in range(P):
        full = data(name, root, 3 * P, 7)
        mine = tensor(full if R == root else np.zeros_like(full), name)
        ok(f"scatter from {root}", dist.scatter(mine, root), full[3 * R : 3 * R + 3], name)
        counts = with_zero()
        full = data(name, root, sum(counts), 8)
        start = sum(counts[:R])
        arg = tensor(full, name) if R == root else None
        like = tensor(full[:0], name)
        out = dist.scatter(arg, root, counts=counts, like=like)
        ok(f"scatter_v from {root}", out, full[start : start + counts[R]], name)
        x = tensor(data(name, R, (2, 2), 9), name)
        dist.broadcast(x, root)
        ok(f"broadcast from {root}", x, data(name, root, (2, 2), 9), name)


def run_all_to_all(name):
    blocks = [data(name, r, 2 * P, 10) for r in range(P)]
    out = dist.all_to_all(tensor(blocks[R], name))
    ok("all_to_all", out, np.concatenate([b[2 * R : 2 * R + 2] for b in blocks]), name)
    sends = [[(r + 2 * j) % 3 for j in range(P)] for r in range(P)]  # rank r -> rank j
    xs = [data(name, r, sum(sends[r]), 11) for r in range(P)]

    def piece(r, j):
        start = sum(sends[r][:j])
        return xs[r][start : start + sends[r][j]]

    recv = [sends[j][R] for j in range(P)]
    out = dist.all_to_all_v(tensor(xs[R], name), sends[R], recv)
    ok("all_to_all_v", out, np.concatenate([piece(j, R) for j in range(P)]), name)


def run_send_recv(name):
    nxt, prv = (R + 1) % P, (R - 1) % P
    x = tensor(data(name, R, (3, 2), 12), name)
    buf = tensor(np.zeros_like(data(name, prv, (3, 2), 12)), name)
    if R % 2 == 0:  # blocking sends meet their receives in either order only this way
        dist.send(x, nxt, tag=7)
        dist.recv(buf, prv, tag=7)
    else:
        dist.recv(buf, prv, tag=7)
        dist.send(x, nxt, tag=7)
    ok("send/recv ring", buf, data(name, prv, (3, 2), 12), name)


def run_barrier():
    """No rank leaves before rank 0 (late by 0.5 s) entered. The ranks share one clock
    (time.time() on one machine) and start at different times, so a rank's own wait proves
    nothing; compare its exit with rank 0's entry instead."""
    if R == 0:
        time.sleep(0.5)
    entered = time.time()
    dist.barrier()
    left = time.time()
    zero_entered = dist.broadcast(flow.tensor([entered], dtype=flow.float64), src=0).numpy()[0]
    if left < zero_entered:
        raise AssertionError(
            f"[barrier] rank {R} left {zero_entered - left:.3f} s before rank 0 entered"
        )


def main():
    assert not dist.is_initialized()  # rank queries read the environment, no rendezvous
    assert (R, P) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    run_barrier()
    assert dist.is_initialized() and dist.world().size() == P
    for name in DTYPES:
        run_reductions(name)
        run_gathers(name)
        run_scatters(name)
        run_all_to_all(name)
        run_send_recv(name)
    dist.barrier()
    report(
        rank=R,
        checks=CHECKS,
        env=[flow.env.get_rank(), flow.env.get_world_size(), flow.env.get_local_rank()],
        nodes=flow.env.get_node_size(),
    )


if __name__ == "__main__":
    main()
