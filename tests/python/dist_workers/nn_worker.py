"""nn ops on global tensors across real processes. Dropout: for every layout, the same seed gives
the single-process result, each rank draws only its own shard (no communication), and the
gradient uses the same mask. layer_norm with split rows: the output and the parameters'
(partial-sum) gradients equal the single-process ones. cross_entropy of logits split by class
(vocabulary parallel): the loss and the logits' gradient equal the single-process ones, and the
logits are never gathered. Prints one JSON line of problems."""

import itertools
import sys

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
import oneflowlike.nn.functional as F
from _common import report


def layouts(ndim):
    if ndim == 1:
        return [flow._C.NdSbp(s) for s in ["S(0)", "S(1)", "S(2)", "B", "P(sum)"]]
    small = ["S(0)", "S(2)", "B", "P(sum)"]
    return [flow._C.NdSbp(f"({a}, {b})") for a, b in itertools.product(small, small)]


def main():
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = sys.argv[1] if len(sys.argv) > 1 else "1d"
    place = flow.placement("cpu", ranks=list(range(world)) if mesh == "1d" else [[0, 1], [2, 3]])
    problems = []

    def check(name, ok):
        if not ok:
            problems.append(name)

    full_np = np.arange(7 * 6 * 5, dtype=np.float32).reshape(7, 6, 5) / 10 + 1  # no zeros
    flow.manual_seed(11)
    want = F.dropout(flow.tensor(full_np), 0.4).numpy()
    after = flow.rand(3).numpy()
    want_grad = (want != 0) / np.float32(0.6)
    for sbp in layouts(len(place.hierarchy)):
        name = sbp.to_string()
        x = flow._C.global_from_full(flow.tensor(full_np), place, sbp, dist.world())
        x.requires_grad = True
        flow.manual_seed(11)
        with flow.boxing.comm_log() as log:
            y = F.dropout(x, 0.4)
        check(f"dropout {name}: the single-process values", np.allclose(y.numpy(), want))
        if not any(s.kind == "partial" for s in sbp):  # (partials: the executor may reduce)
            check(f"dropout {name}: drawn without communication ({log})", len(log) == 0)
            check(f"dropout {name}: keeps the layout", y.sbp == x.sbp)
            shard = flow._C.shard_of(flow.tensor(want), place, sbp, list(place.coords_of(rank)))
            check(
                f"dropout {name}: this rank's shard",
                np.allclose(y.to_local().numpy(), shard.numpy()),
            )
        # The next draw continues after the logical tensor's counters, as in one process.
        check(
            f"dropout {name}: the generator advanced by the logical size",
            np.array_equal(flow.rand(3).numpy(), after),
        )
        y.backward(flow.ones_like(y))
        check(f"dropout {name}: gradient", np.allclose(x.grad.numpy(), want_grad))

    # layer_norm with split rows: weight and bias gradients are partial sums over the ranks.
    rows = np.random.default_rng(0).standard_normal((2 * world + 1, 6)).astype(np.float32)
    w_np, b_np = np.linspace(0.5, 1.5, 6, dtype=np.float32), np.linspace(-1, 1, 6, dtype=np.float32)
    local = [flow.tensor(a, requires_grad=True) for a in (rows, w_np, b_np)]
    y_local = F.layer_norm(local[0], (6,), local[1], local[2])
    (y_local * y_local).sum().backward()
    ranks_1d = flow.placement("cpu", ranks=list(range(world)))
    xs = flow.tensor(rows).to_global(ranks_1d, flow.sbp.broadcast).to_global(sbp=flow.sbp.split(0))
    ws = [flow.tensor(a).to_global(ranks_1d, flow.sbp.broadcast) for a in (w_np, b_np)]
    for t in [xs, *ws]:
        t.requires_grad = True
    y = F.layer_norm(xs, (6,), ws[0], ws[1])
    check("layer_norm keeps the rows split", y.sbp == (flow.sbp.split(0),))
    check("layer_norm output", np.allclose(y.numpy(), y_local.numpy(), atol=1e-5))
    (y * y).sum().backward()
    for name, got, ref in zip(("x", "weight", "bias"), [xs, *ws], local):
        check(f"layer_norm {name} grad", np.allclose(got.grad.numpy(), ref.grad.numpy(), atol=1e-4))
    vocabulary_parallel_cross_entropy(check, world)
    report(rank=rank, problems=problems)


def vocabulary_parallel_cross_entropy(check, world):
    """Logits (rows, 2 * world + 3 classes) split by class, targets replicated (some ignored):
    each rank picks its own classes' targets and the per-row max, sum and pick are reduced."""
    rows, classes = 2 * world + 1, 2 * world + 3
    rng = np.random.default_rng(3)
    logits_np = (rng.standard_normal((rows, classes)) * 3).astype(np.float32)
    target_np = rng.integers(0, classes, rows).astype(np.int64)
    target_np[1] = -100
    target_np[0] = classes - 1  # the last rank's class
    ranks_1d = flow.placement("cpu", ranks=list(range(world)))
    for smoothing in (0.0, 0.1):
        x_local = flow.tensor(logits_np, requires_grad=True)
        want = F.cross_entropy(x_local, flow.tensor(target_np), label_smoothing=smoothing)
        want.backward()
        x = flow.tensor(logits_np).to_global(ranks_1d, flow.sbp.broadcast)
        x = x.to_global(sbp=flow.sbp.split(1))
        x.requires_grad = True
        target = flow.tensor(target_np).to_global(ranks_1d, flow.sbp.broadcast)
        with flow.boxing.comm_log() as log:
            loss = F.cross_entropy(x, target, label_smoothing=smoothing)
        loss.backward()
        name = f"vocabulary-parallel cross_entropy (label_smoothing {smoothing})"
        check(f"{name}: loss", np.allclose(loss.numpy(), want.numpy(), atol=1e-5))
        # The forward moves rows of statistics only (a row's float32 is 4 bytes; the logits'
        # shards are `classes / world` times larger). The eager backward may move the logits'
        # gradient (each op's signature is chosen alone); the planner's does not.
        sizes = [int(e.split()[-2]) for e in log]
        check(f"{name}: the forward moves only rows ({log})", max(sizes) <= 4 * rows)
        check(f"{name}: the gradient is split as the logits", x.grad.sbp == (flow.sbp.split(1),))
        check(f"{name}: gradient", np.allclose(x.grad.numpy(), x_local.grad.numpy(), atol=1e-6))
    # (N, C, d) logits split by class, and a target no rank's classes hold: every rank names it.
    wide = rng.standard_normal((3, classes, 4)).astype(np.float32)
    targets = rng.integers(0, classes, (3, 4))
    want = F.cross_entropy(flow.tensor(wide), flow.tensor(targets)).numpy()
    x = flow.tensor(wide).to_global(ranks_1d, flow.sbp.broadcast).to_global(sbp=flow.sbp.split(1))
    target = flow.tensor(targets).to_global(ranks_1d, flow.sbp.broadcast)
    check("3-d logits split by class", np.allclose(F.cross_entropy(x, target).numpy(), want))
    bad = flow.tensor(np.full((3, 4), classes)).to_global(ranks_1d, flow.sbp.broadcast)
    try:
        F.cross_entropy(x, bad).numpy()
        check("a target out of every rank's classes raises", False)
    except IndexError as e:
        check(f"the error names the target ({e})", f"target {classes} is out of bounds" in str(e))


if __name__ == "__main__":
    main()
