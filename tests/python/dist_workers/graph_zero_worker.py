"""nn.Graph with config.enable_zero on real ranks against one process.

For each ZeRO stage (0: plain data parallel, then 1, 2, 3) a fresh model, broadcast, trains a few
Adam steps as a graph on a batch split S(0); every rank also trains the same model alone on the
whole batch and compares. Each rank checks the local shapes ZeRO leaves: optimizer states (and,
at stage 3, parameters) split S(0), 1/N of the rows; parameters too small to shard
(shard_min_size) untouched. Prints one JSON line: rank, problems, and per stage the graph's peak
bytes and the last step's collectives (what the gradients cost)."""

import math

import numpy as np

import oneflowlike as flow
from _common import report

R, N = flow.env.get_rank(), flow.env.get_world_size()
PLACE = flow.placement("cpu", ranks=list(range(N)))
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
STEPS, BATCH, MIN_SIZE = 3, 8, 16
PROBLEMS = []


def make_model():
    flow.manual_seed(0)
    # (5, 64): dim 0 splits unevenly on 2 and 4 ranks; the last bias (5 elements) is below
    # MIN_SIZE a shard, so it stays replicated.
    return flow.nn.Sequential(flow.nn.Linear(16, 64), flow.nn.ReLU(), flow.nn.Linear(64, 5))


def data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((BATCH, 16)).astype(np.float32)
    y = rng.standard_normal((BATCH, 5)).astype(np.float32)
    return x, y


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


def reference():
    model = make_model()
    opt = flow.optim.Adam(model.parameters(), lr=0.01)
    x, y = map(flow.tensor, data())
    for _ in range(STEPS):
        opt.zero_grad()
        loss_of(model, x, y).backward()
        opt.step()
    return {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


class Step(flow.nn.Graph):
    def __init__(self, model, opt, stage):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        if stage:
            self.config.enable_zero(True, stage=stage, shard_min_size=MIN_SIZE)

    def build(self, x, y):
        loss = loss_of(self.model, x, y)
        loss.backward()
        return loss


def rows(n):
    """Rank R's rows of n split over N ranks (uneven splits: the first n % N get one more)."""
    return n // N + (R < n % N)


def train_zero(stage, want):
    model = make_model().to_global(PLACE, B)
    opt = flow.optim.Adam(model.parameters(), lr=0.01)
    step = Step(model, opt, stage)
    x, y = (flow.tensor(a).to_global(PLACE, B).to_global(PLACE, S0) for a in data())
    for _ in range(STEPS):
        with flow.boxing.comm_log() as log:
            step(x, y)
    for name, p in model.named_parameters():
        got = p.to_global(PLACE, B).to_local().numpy()  # collective: every rank
        if not np.allclose(got, want[name], rtol=1e-4, atol=1e-6):
            PROBLEMS.append(f"stage {stage}: {name} differs by {np.abs(got - want[name]).max()}")
        sharded = stage > 0 and math.prod(p.shape) // N >= MIN_SIZE  # (numel(): local)
        full = tuple(p.shape)
        mine = (rows(full[0]), *full[1:]) if sharded else full
        states = [v for v in opt.state[p].values() if isinstance(v, flow.Tensor)]
        for v in states:
            if tuple(v.to_local().shape) != mine:
                PROBLEMS.append(
                    f"stage {stage}: {name}'s state is {tuple(v.to_local().shape)} {v.sbp} on "
                    f"rank {R}, want {mine}"
                )
        want_param = mine if stage == 3 else full
        if tuple(p.to_local().shape) != want_param:
            PROBLEMS.append(
                f"stage {stage}: {name} is {tuple(p.to_local().shape)} {p.sbp} on rank {R}, "
                f"want {want_param}"
            )
    if len(states) != 2:
        PROBLEMS.append(f"stage {stage}: Adam has {len(states)} state tensors, want 2")
    return {"peak_bytes": step.peak_bytes, "collectives": list(log)}


want = reference()
stats = {}
for stage in (0, 1, 2, 3):
    try:
        stats[stage] = train_zero(stage, want)
    except Exception as e:  # noqa: BLE001 (reported, and the other stages still run)
        PROBLEMS.append(f"stage {stage}: {type(e).__name__}: {e}")
report(rank=R, problems=PROBLEMS, stats=stats)
