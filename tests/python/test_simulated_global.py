"""Meta global tensors on simulated placements: 1024 ranks, or a 128x8 mesh, in this one-process
world. Ops choose signatures and plan boxing by the cost model as for real tensors, every rank's
shard shape is known, predicted costs are logged, and nothing is communicated or allocated."""

import time

import pytest

import oneflowlike as flow
import oneflowlike.nn as nn

S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
LINE = flow.placement("cuda", list(range(1024)))
MESH = flow.placement("cuda", [list(range(r * 8, r * 8 + 8)) for r in range(128)])


def sbp(t):
    return tuple(s.to_string() for s in t.sbp)


@pytest.fixture
def h100_cluster():
    """The cost model prices a 128-node DGX H100 cluster (8 GPUs a node: mesh axis 1)."""
    old = flow.boxing.get_cluster_spec()
    flow.boxing.set_cluster_spec(flow.boxing.ClusterSpec.h100_ib(128, 8))
    yield flow.boxing.get_cluster_spec()
    flow.boxing.set_cluster_spec(old)


def test_creation_with_device_meta_and_a_placement_larger_than_the_world():
    x = flow.randn(4100, 512, device="meta", placement=LINE, sbp=S(0))
    assert x.is_global and x.device.type == "meta" and tuple(x.shape) == (4100, 512)
    assert sbp(x) == ("S(0)",)
    shapes = x.local_shapes()
    assert len(shapes) == 1024
    assert shapes[0] == shapes[3] == (5, 512) and shapes[4] == shapes[1023] == (4, 512)
    assert tuple(x.to_local().shape) == (5, 512)  # this process is rank 0
    assert x.numel() == 4100 * 512 == flow.numel(x)  # logical, as in OneFlow and PyTorch
    assert x.to_local().numel() == 5 * 512
    assert x.to_local().device.type == "meta"
    with flow.device("meta"):
        z = flow.zeros(64, 33, placement=MESH, sbp=(S(0), S(1)))
    assert z.device.type == "meta" and z.local_shapes()[1023] == (0, 4)
    assert z.local_shapes()[0] == (1, 5)
    assert "device='meta', size=(64, 33), placement=cuda[0..1023] as (128, 8)" in repr(z)
    w = flow.randn(8, 8, device="meta", requires_grad=True, placement=LINE, sbp=B)
    assert w.requires_grad and w.is_leaf


def test_local_meta_tensor_to_global_is_this_ranks_shard_of_every_rank():
    x = flow.empty(4, 8, device="meta").to_global(placement=MESH, sbp=(S(0), S(1)))
    assert tuple(x.shape) == (512, 64) and x.device.type == "meta"
    y = x.to_global(sbp=(S(0), B))  # planned, not run
    assert tuple(y.to_local().shape) == (4, 64) and sbp(y) == ("S(0)", "B")


def test_matmul_keeps_data_split_and_megatron_pair_owes_one_reduction(h100_cluster):
    x = flow.randn(4100, 512, device="meta", placement=LINE, sbp=S(0))
    w = flow.randn(512, 256, device="meta", placement=LINE, sbp=B)
    with flow.boxing.comm_log() as comm, flow.boxing.cost_log() as costs:
        y = x @ w
    assert sbp(y) == ("S(0)",) and y.local_shapes()[1023] == (4, 256)
    assert comm == []
    (c,) = costs
    assert c["op"] == "matmul" and c["signature"] == "S(0), B -> S(0)"
    assert c["comm_bytes"] == 0 and c["flops"] == 2 * 5 * 256 * 512
    assert c["compute_seconds"] > 0

    # Megatron on the 128x8 mesh: data parallel on axis 0, tensor parallel on axis 1.
    x = flow.randn(4099, 1024, device="meta", placement=MESH, sbp=(S(0), B))
    w1 = flow.randn(1024, 4100, device="meta", placement=MESH, sbp=(B, S(1)))
    w2 = flow.randn(4100, 1024, device="meta", placement=MESH, sbp=(B, S(0)))
    with flow.boxing.comm_log() as comm, flow.boxing.cost_log() as costs:
        h = flow.nn.functional.gelu(x @ w1)
        o = h @ w2
        r = o + x
    assert comm == []
    assert sbp(h) == ("S(0)", "S(1)") and sbp(o) == ("S(0)", "P(sum)")
    assert h.local_shapes()[0] == (33, 513) and h.local_shapes()[1023] == (32, 512)
    assert [c["op"] for c in costs] == ["matmul", "gelu", "matmul", "add"]
    assert all(c["comm_steps"] == 0 for c in costs[:3])
    add = costs[3]
    assert add["comm_steps"] == 1 and add["comm_bytes"] == 33 * 1024 * 4
    assert "reduce_scatter(sum) on mesh axis 1 (groups of 8)" in add["steps"][0]
    assert sbp(r) == ("S(0)", "S(1)")
    spec = flow.boxing.get_cluster_spec()
    assert add["comm_seconds"] == pytest.approx(
        spec.all_gather(MESH.axis_group(0, 1), 33 * 1024 * 4), rel=1e-3
    )  # a reduce-scatter costs what an all-gather of its input does


class MLP(nn.Module):
    """A GPT block's MLP with its residual: x + proj(gelu(fc(x)))."""

    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.proj(flow.nn.functional.gelu(self.fc(x)))


def megatron(name, t):
    """Column-parallel fc, row-parallel proj on mesh axis 1; replicated on axis 0 (data)."""
    tp = {"fc.weight": S(0), "fc.bias": S(0), "proj.weight": S(1)}.get(name, B)
    return (B, tp)


def test_gpt_mlp_forward_and_backward_on_1024_simulated_ranks_is_fast(h100_cluster):
    start = time.perf_counter()
    with flow.device("meta"):
        model = MLP(1024)
    model.to_global(MESH, megatron)
    x = flow.randn(8 * 128, 256, 1024, device="meta", placement=MESH, sbp=(S(0), B))
    with flow.boxing.comm_log() as comm, flow.boxing.cost_log() as costs:
        loss = model(x).sum()
        loss.backward()
    elapsed = time.perf_counter() - start
    assert comm == []
    assert elapsed < 1.0, elapsed
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.device.type == "meta", name
        assert p.grad.sbp == p.sbp and tuple(p.grad.shape) == tuple(p.shape), name
    fc = model.fc.weight
    assert fc.local_shapes()[0] == (512, 1024)
    ops = [c["op"] for c in costs]
    # reduce_fused: the data-parallel gradient reductions, priced and not run
    assert {"matmul", "gelu", "gelu_backward", "reduce_fused"} <= set(ops)
    assert sum(c["comm_seconds"] for c in costs) > 0
    assert sum(c["compute_seconds"] for c in costs) > 0


def test_data_parallel_mlp_on_a_line_of_1024_ranks(h100_cluster):
    with flow.device("meta"):
        model = MLP(64)
    model.to_global(LINE, B)
    x = flow.randn(4096, 64, device="meta", placement=LINE, sbp=S(0))
    with flow.boxing.cost_log() as costs:
        model(x).mean().backward()
    assert model.fc.weight.grad.sbp == (B,)
    (reduce,) = [c for c in costs if c["op"] == "reduce_fused"]
    n = sum(p.numel() for p in model.parameters())
    assert reduce["comm_bytes"] == 4 * n  # one fused all-reduce of every gradient
    assert reduce["comm_seconds"] == pytest.approx(
        flow.boxing.get_cluster_spec().all_reduce(list(range(1024)), 4 * n)
    )


def test_real_tensors_on_a_placement_larger_than_the_world_raise():
    with pytest.raises(RuntimeError, match=r"not in the world of 1 ranks.*only meta tensors"):
        flow.randn(4, 8, placement=LINE, sbp=S(0))
    with pytest.raises(RuntimeError, match=r"\[to_global\].*only meta tensors"):
        flow.randn(4, 8).to_global(placement=MESH, sbp=(S(0), B))
    one = flow.placement("cpu", [0])
    with pytest.raises(RuntimeError, match=r"\[to_global\].*not in the world"):
        flow.randn(4, 8, placement=one, sbp=B).to_global(placement=LINE, sbp=S(0))
    with pytest.raises(RuntimeError, match=r"a meta tensor of shape \(4100, 8\) has no data"):
        flow.zeros(4100, 8, device="meta", placement=LINE, sbp=S(0)).numpy()


def test_meta_placement_type_points_to_the_meta_device():
    with pytest.raises(RuntimeError, match=r"device=\"meta\""):
        flow.placement("meta", [0, 1])


def test_mixing_meta_and_real_global_tensors_raises():
    one = flow.placement("cpu", [0])
    real = flow.randn(4, 8, placement=one, sbp=B)
    meta = flow.randn(4, 8, device="meta", placement=one, sbp=B)
    with pytest.raises(RuntimeError, match=r"\[add\].*meta"):
        real + meta


def test_compute_cost_chooses_between_signatures_that_communicate_alike(h100_cluster):
    # Keep the partial (its reduction is owed) or reduce-scatter first: one reduce-scatter
    # either way, but the second multiplies 1/1024 of the tensor on each rank.
    p = flow.randn(4096, 4096, device="meta", placement=LINE, sbp=flow.sbp.partial_sum)
    b = flow.randn(4096, 4096, device="meta", placement=LINE, sbp=B)
    with flow.boxing.cost_log() as costs:
        y = p * b
    (c,) = costs
    assert sbp(y)[0].startswith("S(")
    assert c["flops"] == 4096 * 4096 // 1024
    assert c["comm_steps"] == 1


def test_a_step_planned_under_autocast_is_priced_in_its_low_precision(h100_cluster):
    """Meta tensors stand for a device's tensors: autocast applies to them, so the Megatron
    pair's reduction moves bfloat16 (half the bytes) and its matmuls run in bfloat16."""
    x = flow.randn(4099, 1024, device="meta", placement=MESH, sbp=(S(0), B))
    w1 = flow.randn(1024, 4100, device="meta", placement=MESH, sbp=(B, S(1)))
    w2 = flow.randn(4100, 1024, device="meta", placement=MESH, sbp=(B, S(0)))

    def step():
        with flow.boxing.cost_log() as costs:
            o = flow.nn.functional.gelu(x @ w1) @ w2
            o.to_global(sbp=(S(0), S(1)))
        return o, {c["op"]: c for c in costs}

    full, full_costs = step()
    with flow.autocast("cuda", dtype=flow.bfloat16):
        low, low_costs = step()
    assert full.dtype == flow.float32 and low.dtype == flow.bfloat16
    (full_box,) = [c for op, c in full_costs.items() if c["comm_bytes"]]
    (low_box,) = [c for op, c in low_costs.items() if c["comm_bytes"]]
    assert low_box["comm_bytes"] * 2 == full_box["comm_bytes"]
    assert low_costs["matmul"]["compute_seconds"] < full_costs["matmul"]["compute_seconds"]
