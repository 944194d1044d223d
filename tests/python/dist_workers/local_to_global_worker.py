"""OneFlow's semantics of making a global tensor from each rank's local data, on ranks whose data
differ: broadcast takes the first rank's (rank 0's on a 1-d placement; along each broadcast mesh
axis on a 2-d one), split keeps each rank's data as its shard, partial as its addend; the same
for flow.tensor(data, placement=, sbp=), Module.to_global and load_state_dict. sync_data=False
keeps each rank's own data. Tied weights stay one parameter. Prints one JSON line of failures."""

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

    mine = flow.tensor([float(rank)] * 3)  # rank r holds [r, r, r]
    g = mine.to_global(placement=place, sbp=B)
    check("B takes rank 0's data", g.to_local().tolist() == [0.0] * 3)
    check("B sums alike on every rank", (g * 1).sum().item() == 0.0)
    check("the local input is not written", mine.tolist() == [float(rank)] * 3)
    s = mine.to_global(placement=place, sbp=S(0))
    check(
        "S(0) keeps each rank's shard",
        s.numpy().tolist() == [float(r) for r in range(world) for _ in range(3)],
    )
    p = mine.to_global(placement=place, sbp=P)
    check("P keeps each rank's addend", p.numpy().tolist() == [float(sum(range(world)))] * 3)
    own = mine.to_global(placement=place, sbp=B, sync_data=False)
    check("sync_data=False keeps the rank's own data", own.to_local().tolist() == [float(rank)] * 3)

    # Shapes that differ under B raise on every rank, naming both.
    try:
        flow.ones(2 + (rank == world - 1)).to_global(placement=place, sbp=B)
        check("mismatched B shapes raise", world == 1)
    except RuntimeError as e:
        check("mismatched B shapes raise naming them", "must agree" in str(e))

    t = flow.tensor([[rank, rank + 1]], placement=place, sbp=B)
    check("tensor(data, placement, sbp=B) is rank 0's", t.to_local().tolist() == [[0, 1]])
    t = flow.tensor([[rank] * 2] * world, placement=place, sbp=S(0))
    check("tensor(data, sbp=S(0)) shards rank 0's data", t.to_local().tolist() == [[0, 0]])

    if world == 4:  # a 2x2 mesh: (S(0), B) takes, for each row of the mesh, its first column's
        mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
        x = flow.tensor([float(rank)]).to_global(placement=mesh, sbp=(S(0), B))
        check("(S(0), B) on 2x2", x.numpy().tolist() == [0.0, 2.0])
        y = flow.tensor([float(rank)]).to_global(placement=mesh, sbp=(B, B))
        check("(B, B) on 2x2", y.numpy().tolist() == [0.0])

    # A model built from a different seed on each rank, made global: rank 0's weights, and the
    # tied embedding / head stay one parameter.
    flow.manual_seed(100 + rank)

    class Tied(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = flow.nn.Embedding(5, 4)
            self.head = flow.nn.Linear(4, 5, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, i):
            return self.head(self.emb(i))

    model = Tied()
    model.to_global(place, B)
    check("tied weights stay tied", model.head.weight is model.emb.weight)
    check("one parameter", len(list(model.parameters())) == 1)
    w = model.emb.weight.to_local().numpy()
    flow.manual_seed(100)
    check("the model is rank 0's", np.array_equal(w, flow.nn.Embedding(5, 4).weight.numpy()))

    # load_state_dict of rank-dependent values into a global model: rank 0's.
    model.load_state_dict(
        {
            "emb.weight": flow.full((5, 4), float(rank)),
            "head.weight": flow.full((5, 4), float(rank)),
        }
    )
    check("load_state_dict takes rank 0's", model.emb.weight.to_local().numpy().max() == 0.0)
    check("tied after load", model.head.weight is model.emb.weight)
    report(rank=rank, problems=problems)


if __name__ == "__main__":
    main()
