"""AdamW with master weights on a bfloat16 model, as a ZeRO-2 graph on real ranks, against one
process training the same model eagerly on the whole batch.

Each rank checks: the float32 master copies match the single process's (the gradients are
reduced in bfloat16 over another split of the batch, hence the tolerance); every state, the
master copy included, is float32 and split S(0) to 1/N of the rows; the bfloat16 parameter is its
master copy rounded. Prints one JSON line: rank and problems."""

import numpy as np

import oneflowlike as flow
from _common import report

R, N = flow.env.get_rank(), flow.env.get_world_size()
PLACE = flow.placement("cpu", ranks=list(range(N)))
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
STEPS, BATCH = 3, 8
PROBLEMS = []


def make(place=None):
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(16, 64), flow.nn.ReLU(), flow.nn.Linear(64, 8))
    model = model.bfloat16()
    if place is not None:
        model = model.to_global(place, B)
    return model, flow.optim.AdamW(model.parameters(), lr=0.01, master_weights=True)


def data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((BATCH, 16)).astype(np.float32)
    y = rng.standard_normal((BATCH, 8)).astype(np.float32)
    return flow.tensor(x).bfloat16(), flow.tensor(y)


def loss_of(model, x, y):
    return ((model(x).float() - y) ** 2).mean()


class Step(flow.nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        self.config.enable_zero(True, stage=2, shard_min_size=1)

    def build(self, x, y):
        loss = loss_of(self.model, x, y)
        loss.backward()
        return loss


def reference():
    model, opt = make()
    x, y = data()
    for _ in range(STEPS):
        opt.zero_grad()
        loss_of(model, x, y).backward()
        opt.step()
    return {n: opt.state[p]["master"].numpy().copy() for n, p in model.named_parameters()}


def rows(n):
    return n // N + (R < n % N)


want = reference()
model, opt = make(PLACE)
step = Step(model, opt)
x, y = (t.to_global(PLACE, B).to_global(PLACE, S0) for t in data())
for _ in range(STEPS):
    step(x, y)
for name, p in model.named_parameters():
    state = opt.state[p]
    master = state["master"].to_global(PLACE, B).to_local().numpy()  # collective: every rank
    if not np.allclose(master, want[name], rtol=1e-3, atol=1e-3):
        PROBLEMS.append(f"{name}'s master weights differ by {np.abs(master - want[name]).max()}")
    rounded = flow.tensor(master).bfloat16().float().numpy()
    mine = p.to_global(PLACE, B).to_local().float().numpy()
    if not np.array_equal(mine, rounded):
        PROBLEMS.append(f"{name} is not its master copy rounded")
    want_shape = (rows(p.shape[0]), *p.shape[1:])
    for key in ("exp_avg", "exp_avg_sq", "master"):
        v = state[key]
        if v.dtype != flow.float32 or tuple(v.to_local().shape) != want_shape:
            PROBLEMS.append(
                f"{name}'s {key} is {v.dtype} {tuple(v.to_local().shape)} {v.sbp} on rank {R}, "
                f"want float32 {want_shape}"
            )
report(rank=R, problems=PROBLEMS)
