"""Bad pipelines raise naming the modules and stages, on every rank, before anything runs:
overlapping stage placements, a module inside another stage's module, a parameter shared by two
stages, one stage id on two placements, a gap in the stage ids, more stages than placements
without the interleaved schedule, a micro-batch count that does not divide the batch, and the
auto-parallel planner asked to plan a graph with stages (plan_pipeline's work). Micro-batches keep
the inputs' rows together. Prints one JSON line of problems."""

import re

import oneflowlike as flow
import oneflowlike.distributed as dist
from _common import report

B = flow.sbp.broadcast
GraphModule = flow.nn.graph.GraphModule


class Step(flow.nn.Graph):
    def __init__(self, model, micro=1, schedule="1f1b"):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.1))
        self.config.set_gradient_accumulation_steps(micro)
        self.config.set_pipeline_schedule(schedule)

    def build(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss


def model(*stages):
    """A chain of Linear(4, 4) layers, layer i in stage stages[i] = (stage id, ranks)."""
    m = flow.nn.Sequential(*[flow.nn.Linear(4, 4) for _ in stages])
    m.to_global(flow.placement("cpu", ranks=[0, 1, 2, 3]), B)
    for layer, (sid, ranks) in zip(m, stages):
        layer.to(GraphModule).set_stage(sid, flow.placement("cpu", ranks=ranks))
    return m


def main():
    problems = []
    everyone = flow.placement("cpu", ranks=[0, 1, 2, 3])
    x = flow.ones(4, 4).to_global(everyone, [B])

    def expect(what, pattern, make):
        try:
            make()
        except Exception as e:  # noqa: BLE001: any error type, as long as it says what
            if not re.search(pattern, str(e)):
                problems.append(f"{what}: {e}")
            return
        problems.append(f"{what}: no error")

    expect(
        "overlapping placements",
        r"stage 1 on cpu\[1, 2\] overlaps stage 0 on cpu\[0, 1\]",
        lambda: Step(model((0, [0, 1]), (1, [1, 2])))(x),
    )
    nested = model((0, [0, 1]), (1, [2, 3]))
    nested.to(GraphModule).set_stage(0, flow.placement("cpu", ranks=[0, 1]))
    expect(
        "a module inside another stage's",
        r"model\.1 is in stage 1 but inside model, which is in stage 0",
        lambda: Step(nested)(x),
    )
    shared = model((0, [0, 1]), (1, [2, 3]))
    shared[1].weight = shared[0].weight
    expect(
        "a parameter in two stages",
        r"model\.1 \(stage 1\) and model\.0 \(stage 0\) share a parameter",
        lambda: Step(shared)(x),
    )
    expect(
        "one stage on two placements",
        r"stage 0 is on .*\[0, 1\].* for model\.0 but on .*\[2, 3\].* for model\.1",
        lambda: Step(model((0, [0, 1]), (0, [2, 3])))(x),
    )
    expect(
        "a gap in the stage ids",
        r"no module is in stage 1 \(stages: \[0, 2\]\)",
        lambda: Step(model((0, [0, 1]), (2, [2, 3])))(x),
    )
    expect(
        "more stages than placements",
        r"4 stages on 2 placements need the interleaved_1f1b schedule, not 1f1b",
        lambda: Step(model((0, [0, 1]), (1, [2, 3]), (2, [0, 1]), (3, [2, 3])))(x),
    )
    expect(
        "micro-batches that do not divide the batch",
        r"input 0 of shape \(4, 4\) does not split into 3 micro-batches",
        lambda: Step(model((0, [0, 1]), (1, [2, 3])), micro=3)(x),
    )
    planned = Step(model((0, [0, 1]), (1, [2, 3])))
    planned.config.enable_auto_parallel(True)
    expect("auto-parallel with stages", r"enable_auto_parallel with modules in pipeline stages",
           lambda: planned(x))  # fmt: skip
    # Micro-batches keep each row of one input with the same row of the others, whatever their
    # layouts (shard by shard when every input is split alike, else in order).
    rows = flow.arange(8).view(8, 1).float().to_global(everyone, [B])
    first, last = flow.placement("cpu", ranks=[0, 1]), flow.placement("cpu", ranks=[2, 3])
    S = flow.sbp.split
    cut = flow.nn.graph._micro_batches
    shards = flow.nn.graph._dim0_shards
    for y_sbp in (S(0), B):
        xs, ys = rows.to_global(first, [S(0)]), rows.to_global(last, [y_sbp])
        for a, b in zip(*cut([xs, ys], 2, [shards(xs), shards(ys)])):
            if not (a.numpy() == b.numpy()).all():
                problems.append(f"micro-batches of S(0) and {y_sbp} inputs pair other rows")
    # Inputs given split on every rank, moved to their stages before the cut, pair the rows the
    # unmoved ones would.
    given = rows.to_global(everyone, [S(0)])
    moved = cut([given.to_global(first), given.to_global(last)], 2, [4, 4])
    for a, b, c in zip(*moved, cut([given], 2, [4])[0]):
        if not (a.numpy() == c.numpy()).all() or not (b.numpy() == c.numpy()).all():
            problems.append("inputs moved to their stages are cut into other micro-batches")
    # And a good one still trains after all that.
    good = Step(model((0, [0, 1]), (1, [2, 3])), micro=2)
    loss = good(x)
    if tuple(loss.shape) != (2,):
        problems.append(f"two micro-batches give {tuple(loss.shape)} losses")
    report(rank=dist.get_rank(), problems=problems)


if __name__ == "__main__":
    main()
