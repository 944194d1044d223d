"""Global tensors on every rank: to_global/to_local, reshard, numpy of the logical tensor,
creation with placement/sbp, comm_log counts, check_meta, and clear errors. Prints one JSON
line of failures (empty when all is well)."""

import sys

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
from _common import report

B, P, S = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split


def main():
    rank, world = dist.get_rank(), dist.get_world_size()
    place = flow.placement("cpu", ranks=list(range(world)))
    problems = []

    def check(name, ok):
        if not ok:
            problems.append(name)

    # Uneven (balanced) shards along axis 0: 2 * world + 1 rows split over the ranks.
    full = np.arange((2 * world + 1) * 3, dtype=np.float32).reshape(-1, 3)
    start, stop = flow._C.split_range(full.shape[0], world, rank)
    local = flow.tensor(full[start:stop])
    x = local.to_global(placement=place, sbp=S(0), check_meta=True)
    check("logical shape", x.shape == full.shape and x.is_global)
    check("numpy is the logical tensor", np.array_equal(x.numpy(), full))
    check(
        "to_local is the shard",
        np.array_equal(x.to_local().numpy(), full[start:stop]),
    )
    check("sbp and placement", x.sbp == (S(0),) and x.placement == place)

    with flow.boxing.comm_log() as log:
        y = x.to_global(sbp=B)
    check("S(0)->B gives the full tensor", np.array_equal(y.to_local().numpy(), full))
    check("S(0)->B is one all_gather", world == 1 or (len(log) == 1 and "all_gather" in log[0]))

    # Partial sum: every rank holds the same piece; the logical value is world * piece.
    piece = np.ones((2, 4), np.float32) * (rank + 1)
    p = flow.tensor(piece).to_global(placement=place, sbp=P)
    total = sum(np.ones((2, 4), np.float32) * (r + 1) for r in range(world))
    with flow.boxing.comm_log() as log:
        b = p.to_global(sbp=B)
    check("P->B sums the pieces", np.allclose(b.to_local().numpy(), total))
    check("P->B is one all_reduce", world == 1 or (len(log) == 1 and "all_reduce" in log[0]))
    s1 = p.to_global(sbp=S(1))
    check("P->S(1) numpy", np.allclose(s1.numpy(), total))

    # Random global tensors are the same logical tensor whatever the layout.
    flow.manual_seed(7)
    a = flow.randn(5, 6, placement=place, sbp=S(0)).numpy()
    flow.manual_seed(7)
    c = flow.randn(5, 6, placement=place, sbp=S(1)).numpy()
    flow.manual_seed(7)
    d = flow.randn(5, 6).numpy()
    check("randn layout independent", np.array_equal(a, c) and np.array_equal(a, d))

    # Autograd: to_global and reshard keep the logical tensor, so gradients come back as shards.
    leaf = flow.tensor(full[start:stop], requires_grad=True)
    z = leaf.to_global(placement=place, sbp=S(0)).to_global(sbp=B)
    weights = np.arange(full.size, dtype=np.float32).reshape(full.shape)
    z.backward(gradient=flow.tensor(weights).to_global(placement=place, sbp=B))
    check("gradient through reshard", np.array_equal(leaf.grad.numpy(), weights[start:stop]))
    g2 = flow.tensor(full, requires_grad=True)
    w = g2.to_global(placement=place, sbp=B).to_global(sbp=S(1)).to_local()
    w.backward(gradient=flow.ones(*w.shape))
    check("gradient through to_local", g2.grad is not None and g2.grad.shape == full.shape)

    # *_like of a global tensor is global with the same layout.
    for like in (flow.zeros_like(p), flow.ones_like(x), flow.full_like(s1, 2.0)):
        check("*_like stays global", like.is_global)
    check(
        "ones_like of a partial is logically ones",
        np.array_equal(flow.ones_like(p).numpy(), np.ones((2, 4), np.float32)),
    )
    check("full_like keeps the layout", flow.full_like(s1, 2.0).sbp == s1.sbp)

    explained = flow.boxing.explain(x, place, B, file=open("/dev/null", "w"))
    check("explain names the collective", world == 1 or "all_gather" in explained)
    check("cost is positive", world == 1 or flow.boxing.cost(x, place, B) > 0)

    check("ops run on global tensors", np.allclose((x + 1).numpy(), x.numpy() + 1))
    try:
        _ = x + flow.ones(*x.shape)
        check("mixing local and global tensors raises", False)
    except RuntimeError as e:
        check("mixing local and global tensors raises a clear error", "mixes local" in str(e))

    # Fewer rows than ranks: some shards are empty, and every rank still takes part.
    logits = flow.zeros(world - 1 or 1, 5, placement=place, sbp=S(0))
    targets = flow.tensor(np.arange(logits.shape[0]) % 5).to_global(place, B).to_global(sbp=S(0))
    loss = flow.nn.functional.cross_entropy(logits, targets)
    check("cross_entropy over empty shards", np.isclose(float(loss.numpy()), np.log(5)))
    # The kernel checks the targets of its own shard: here every rank holds an out-of-range one.
    every = flow.zeros(world, 5, placement=place, sbp=S(0))
    bad_targets = flow.full((world,), 5, dtype=flow.int64, placement=place, sbp=S(0))
    try:
        flow.nn.functional.cross_entropy(every, bad_targets)
        check("an out-of-range global target raises", False)
    except IndexError as e:
        check("an out-of-range global target is named", "is out of bounds for 5 classes" in str(e))

    bn = flow.nn.BatchNorm2d(4).to_global(place, S(0))  # one layout for all
    check("Module.to_global splits what has the axis", bn.running_mean.sbp == (S(0),))
    check("Module.to_global keeps a 0-d buffer B", bn.num_batches_tracked.sbp == (B,))

    too_big = flow.placement("cpu", ranks=list(range(world + 1)))
    for name, make in (
        ("to_global", lambda: flow.ones(4).to_global(too_big, B)),
        ("reshard", lambda: x.to_global(too_big, B)),
        ("creation", lambda: flow.ones(4, placement=too_big, sbp=B)),
    ):
        try:
            make()
            check(f"{name} onto ranks outside the world raises", False)
        except RuntimeError as e:
            check(f"{name} names the missing rank", f"names rank {world}, which is not" in str(e))

    if world > 1:  # ranks disagree on the column count
        bad = flow.zeros(2, 3 + (rank == 1))
        try:
            bad.to_global(placement=place, sbp=S(0), check_meta=True)
            check("check_meta raises", False)
        except RuntimeError as e:
            check("check_meta names the disagreement", "disagree" in str(e))

    # Indexing a split tensor: by a list (the same on every rank) and by a mask.
    picked = x[[0, -1]]
    check("x[list] on a split tensor", np.array_equal(picked.numpy(), full[[0, -1]]))
    z = x.clone()
    z[z > 10] = 5.0
    want = full.copy()
    want[want > 10] = 5.0
    check("x[mask] = number on a split tensor", np.array_equal(z.numpy(), want))
    try:
        z[z > 1] = flow.ones(int((want > 1).sum())).to_global(placement=place, sbp=B)
        check("x[mask] = tensor on a split tensor raises", world == 1)
    except RuntimeError as e:
        check("x[mask] = tensor names the layout", "[masked_scatter_] no signature keeps" in str(e))

    report(rank=rank, problems=problems)


if __name__ == "__main__":
    sys.exit(main())
