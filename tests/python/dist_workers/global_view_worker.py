"""flow.utils.global_view on every rank: creation ops in global_mode, random ops the same on
every rank, a GPT-like block whose forward makes `flow.arange(T, device=idx.device)` run on
global inputs against the same block run locally, load_state_dict resharding, and clear errors.
Prints one JSON line of failures (empty when all is well)."""

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F
from oneflowlike.utils import global_view
from _common import report

B, S = flow.sbp.broadcast, flow.sbp.split


class Block(nn.Module):
    """A GPT-like block in the usual PyTorch style: nothing in it knows about placements."""

    def __init__(self, vocab=11, block=8, d=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        _, T = idx.shape
        pos = flow.arange(0, T, dtype=flow.int64, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = q @ k.transpose(-2, -1) * (1.0 / q.shape[-1] ** 0.5)
        mask = flow.ones(T, T, device=idx.device).tril()
        att = F.softmax(att.masked_fill(mask == 0, float("-inf")), dim=-1)
        x = x + self.proj(att @ v)
        return self.head(x)


def gathered(local):
    """Every rank's `local`, stacked (checks that ranks hold the same data)."""
    world = dist.get_world_size()
    place = flow.placement("cpu", ranks=list(range(world)))
    return flow.tensor(local.numpy()[None]).to_global(placement=place, sbp=S(0)).numpy()


def main():
    rank, world = dist.get_rank(), dist.get_world_size()
    place = flow.placement("cpu", ranks=list(range(world)))
    problems = []

    def check(name, ok):
        if not ok:
            problems.append(name)

    def raises(name, fn, *words):
        try:
            fn()
        except Exception as e:  # the message must say what and where
            if not all(w in str(e) for w in words):
                problems.append(f"{name}: message {e!r} lacks {words}")
            return
        problems.append(f"{name}: no error")

    # Creation ops in global mode: the mode's layout, the one-device values.
    with global_view.global_mode(True, placement=place, sbp=S(0)):
        a = flow.arange(2 * world + 1)
        check("arange S(0) layout", a.is_global and a.sbp == (S(0),) and a.placement == place)
        check("arange S(0) values", np.array_equal(a.numpy(), np.arange(2 * world + 1)))
        start, stop = flow._C.split_range(2 * world + 1, world, rank)
        check("arange S(0) shard", np.array_equal(a.to_local().numpy(), np.arange(start, stop)))
        e = flow.eye(3 * world)
        check("eye S(0)", np.array_equal(e.numpy(), np.eye(3 * world, dtype=np.float32)))
        t = flow.tensor(np.full((world, 2), rank, np.float32))  # given data: rank 0's
        check("tensor is rank 0's data", np.array_equal(t.numpy(), np.zeros((world, 2))))
        b = flow.arange(2 * world, placement=place, sbp=B)  # a layout given: it, not the mode's
        check("explicit layout in the mode", b.sbp == (B,) and b.to_local().shape[0] == 2 * world)
        check("explicit layout's values", np.array_equal(b.numpy(), np.arange(2 * world)))

    # Random ops give the same logical tensor on every rank, even with per-rank seeds.
    flow.manual_seed(100 + rank)
    with global_view.global_mode(True, placement=place):
        r = flow.randn(4, 5)
        u = flow.rand_like(flow.zeros(3))
        i = flow.randint(0, 10, (6,))
    for name, x in (("randn", r), ("rand_like", u), ("randint", i)):
        g = gathered(x.to_local())
        check(
            f"{name} B is the same on every rank",
            all(np.array_equal(g[0], g[k]) for k in range(world)),
        )

    # A global tensor's device leads creation ops to a broadcast global tensor on its placement.
    idx_full = np.random.default_rng(3).integers(0, 11, (2 * world, 8))
    idx = flow.tensor(idx_full, placement=place, sbp=S(0))  # the batch, split
    check("device prints as the shard's", str(idx.device) == "cpu" and idx.device.type == "cpu")
    pos = flow.arange(8, device=idx.device)
    check(
        "arange(device=global) is B", pos.is_global and pos.sbp == (B,) and pos.placement == place
    )

    # The GPT-like block on global inputs against the same block run locally in one process.
    flow.manual_seed(0)
    ref = Block()
    want = ref(flow.tensor(idx_full))
    want.square().mean().backward()
    model = Block()
    model.load_state_dict(ref.state_dict())
    model.to_global(place, B)
    got = model(idx)
    check("block forward on global input", np.allclose(got.numpy(), want.numpy(), atol=1e-5))
    got.square().mean().backward()
    gw, rw = model.qkv.weight.grad, ref.qkv.weight.grad
    check("block gradient", np.allclose(gw.numpy(), rw.numpy(), atol=1e-5))
    with global_view.global_mode(True, placement=place):  # the same block, all in global mode
        got2 = model(flow.tensor(idx_full))
    check("block in global mode", np.allclose(got2.numpy(), want.numpy(), atol=1e-5))

    # load_state_dict reshards: local full tensors, other SBPs, other placements.
    src = nn.Linear(4, 2 * world)
    sd = {k: v.detach().clone() for k, v in src.state_dict().items()}
    dst = nn.Linear(4, 2 * world).to_global(place, S(0))
    dst.load_state_dict(sd)
    check("local sd into S(0) model", np.allclose(dst.weight.numpy(), sd["weight"].numpy()))
    check("keeps the model's layout", dst.weight.sbp == (S(0),) and dst.weight.placement == place)
    check("local shard", dst.weight.to_local().shape[0] == 2)
    other = flow.placement("cpu", ranks=[world - 1])
    gsd = {k: v.to_global(placement=other, sbp=B) for k, v in sd.items()}
    dst2 = nn.Linear(4, 2 * world).to_global(place, S(1))
    dst2.load_state_dict(gsd)
    check("other placement into S(1)", np.allclose(dst2.weight.numpy(), sd["weight"].numpy()))
    check("S(1) kept", dst2.weight.sbp == (S(1),) and dst2.weight.placement == place)
    ssd = {k: v.to_global(placement=place, sbp=B).to_global(sbp=S(0)) for k, v in sd.items()}
    local = nn.Linear(4, 2 * world)
    local.load_state_dict(ssd)
    check("global sd into a local model", np.allclose(local.weight.numpy(), sd["weight"].numpy()))
    mine = {k: flow.full(v.shape, float(rank)) for k, v in sd.items()}
    dst.load_state_dict(mine)  # ranks disagree: the placement's first rank's is the logical value
    check("rank 0's value wins", np.array_equal(dst.weight.numpy(), np.zeros((2 * world, 4))))
    bad = {"weight": flow.zeros(2 * world, 5), "bias": sd["bias"]}
    shapes = (f"({2 * world}, 5)", f"({2 * world}, 4)")
    raises("shape mismatch", lambda: dst.load_state_dict(bad), "size mismatch for weight", *shapes)

    # Hostile: a mode whose placement or sbp cannot make the tensor names the op.
    outside = flow.placement("cpu", ranks=list(range(world + 1)))
    with global_view.global_mode(True, placement=outside):
        raises("placement outside the world", lambda: flow.zeros(2), "[zeros]", "world")
    with global_view.global_mode(True, placement=place, sbp=S(1)):
        raises("split axis out of range", lambda: flow.randn(3), "[randn]", "S(1)")
    raises("sbp string", lambda: global_view.global_mode(True, place, "B"), "[global_mode]")

    report(rank=rank, problems=problems)


if __name__ == "__main__":
    main()
