"""Graph mode's elementwise fusion (graph/passes/fuse_elementwise.cpp): which nodes of the example
GPT's training step fuse, what a fused graph computes (bit for bit what eager mode does, in every
floating dtype, over broadcast and strided inputs), the switches that turn it off, and fusion on
global tensors across real processes."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "parallel"))
from char_gpt.model import GPT, GPTConfig  # noqa: E402
from gpt_layouts import TrainStep  # noqa: E402
from _launch import expect_clean_ranks  # noqa: E402


class Call(flow.nn.Graph):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, *xs):
        return self.fn(*xs)


def fused_parts(graph):
    """The parts of each fused node of a compiled graph, as op names: [["add", "gelu"], ...]."""
    out = []
    for line in repr(graph).splitlines():
        if "_fused_elementwise" in line:
            parts = line.split("[", 1)[1].rsplit("]", 1)[0]
            out.append([p.split(" = ")[1].split("(")[0] for p in parts.split("; ")])
    return out


def node_count(graph):
    return len(re.findall(r"^[%\d, ]+ = \w+\(", repr(graph), re.M))


def gpt_step(monkeypatch, fusion):
    monkeypatch.setenv("OFL_GRAPH_FUSION", "1" if fusion else "0")
    flow.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=17, block_size=16, n_layer=2, n_head=2, n_embd=32))
    step = TrainStep(model, flow.optim.AdamW(model.parameters(), lr=1e-2))
    flow.manual_seed(1)
    idx, targets = flow.randint(0, 17, (4, 16)), flow.randint(0, 17, (4, 16))
    losses = [step(idx, targets).item() for _ in range(3)]
    return step, losses, [p.numpy() for p in model.parameters()]


def test_the_gpt_training_step_fuses_its_bias_gelu_and_residual_chains(monkeypatch):
    plain, plain_losses, plain_params = gpt_step(monkeypatch, fusion=False)
    fused, fused_losses, fused_params = gpt_step(monkeypatch, fusion=True)
    assert fused_parts(plain) == []
    parts = fused_parts(fused)
    # Per block: the attention's projection bias and residual add, the MLP's projection bias and
    # residual add; then the loss's log-softmax pieces. The MLP's bias and gelu stay apart: the
    # backward reads both their values, so fused they would save no memory (saves_memory).
    per_layer = [["add", "add"], ["add", "add"]]
    assert parts[:4] == per_layer * 2, parts
    assert parts[4:] == [["sub", "exp"], ["log", "add"], ["where", "add"]], parts
    before, after = node_count(plain), node_count(fused)
    assert after == before - sum(len(p) - 1 for p in parts)
    # Fusion changes no bit of the training.
    assert fused_losses == plain_losses
    for a, b in zip(plain_params, fused_params):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.bfloat16, flow.float16])
def test_a_fused_chain_gives_what_eager_gives_bit_for_bit(dtype):
    def chain(x, b, r):
        h = F.gelu(x + b) * 0.5 - flow.exp(-flow.abs(r))
        return flow.where(h > 0, h, flow.tanh(h) * r), flow.sigmoid(h)

    rng = np.random.default_rng(0)
    # 67 columns: every row ends in a partial vector; r is a transposed (strided) input.
    x = flow.tensor(rng.standard_normal((5, 9, 67)), dtype=dtype)
    b = flow.tensor(rng.standard_normal((67,)), dtype=dtype)
    r = flow.tensor(rng.standard_normal((67, 9)), dtype=dtype).t()
    graph = Call(chain)
    got = graph(x, b, r)
    assert len(fused_parts(graph)) >= 1
    for g, e in zip(got, chain(x, b, r)):
        assert g.dtype == e.dtype == dtype
        np.testing.assert_array_equal(g.float().numpy(), e.float().numpy())


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.bfloat16])
def test_a_long_contiguous_chain_stays_exact_where_steps_write_their_outputs_directly(dtype):
    # 259000 contiguous elements: whole chunks, where a step whose register is an output (h, and g,
    # which later steps read back) writes it in place, and a partial last chunk, which does not.
    def chain(x, r):
        h = x + r
        g = F.gelu(h)
        return h, g, flow.tanh(g * 0.5 - h) * r

    rng = np.random.default_rng(1)
    x, r = (flow.tensor(rng.standard_normal((7, 1000, 37)), dtype=dtype) for _ in range(2))
    graph = Call(chain)
    got = graph(x, r)
    assert fused_parts(graph) == [["add", "gelu", "mul", "sub", "tanh", "mul"]]
    for g, e in zip(got, chain(x, r)):
        np.testing.assert_array_equal(g.float().numpy(), e.float().numpy())


def test_a_chain_whose_every_value_is_read_outside_stays_apart_on_the_cpu():
    # h = x + r kept for later and gelu(h): fused, only the re-read of h would be saved, and the
    # two streaming kernels ran faster (benchmarks/bench_fusion.py); one more step that stays
    # inside the chain makes it worth fusing.
    def kept(x, r):
        h = x + r
        return h, F.gelu(h)

    def inside(x, r):
        h = x + r
        return h, F.gelu(h) * 2

    x, r = flow.randn(4, 8), flow.randn(4, 8)
    graphs = Call(kept), Call(inside)
    for graph, fn in zip(graphs, (kept, inside)):
        for g, e in zip(graph(x, r), fn(x, r)):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
    assert fused_parts(graphs[0]) == []
    assert fused_parts(graphs[1]) == [["add", "gelu", "mul"]]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [flow.float32, flow.bfloat16])
def test_a_fused_chain_on_cuda_gives_what_eager_gives_bit_for_bit(dtype):
    def chain(x, b):
        h = F.gelu(x + b) * 0.5
        return flow.where(h > 0, h, flow.tanh(h)), h

    rng = np.random.default_rng(0)
    x = flow.tensor(rng.standard_normal((64, 67)), dtype=dtype, device="cuda")
    b = flow.tensor(rng.standard_normal((67,)), dtype=dtype, device="cuda")
    graph = Call(chain)
    got = graph(x, b)
    assert fused_parts(graph)
    for g, e in zip(got, chain(x, b)):
        np.testing.assert_array_equal(g.float().numpy(), e.float().numpy())


def test_the_environment_switch_turns_fusion_off(monkeypatch):
    x = flow.randn(4, 8)
    graph = Call(lambda x: flow.exp(x) * 2 + 1)
    graph(x)
    assert fused_parts(graph) == [["exp", "mul", "add"]]
    monkeypatch.setenv("OFL_GRAPH_FUSION", "0")
    off = Call(lambda x: flow.exp(x) * 2 + 1)
    np.testing.assert_array_equal(off(x).numpy(), graph(x).numpy())
    assert fused_parts(off) == []


def test_allow_fuse_add_to_output_false_keeps_residual_adds_apart():
    def block(x, b, r):
        return r + F.gelu(x + b)

    x, b, r = flow.randn(4, 8), flow.randn(8), flow.randn(4, 8)
    on = Call(block)
    want = on(x, b, r)
    assert fused_parts(on) == [["add", "gelu", "add"]]
    on.config.allow_fuse_add_to_output(False)  # a new trace
    np.testing.assert_array_equal(on(x, b, r).numpy(), want.numpy())
    assert fused_parts(on) == [["add", "gelu"]]  # the bias add starts the chain; r + joins none
    assert on.num_compiled == 2


def test_in_place_writes_and_mixed_shapes_are_not_fused_through():
    def fn(x, v):
        a = x * 2
        v.add_(1)  # written between a and its reader
        return a + v, (a + 1).sum(0) + 1  # the sum has another shape

    x, v = flow.randn(3, 4), flow.zeros(3, 4)
    want = fn(x, v.clone())
    got = Call(fn)(x, v.clone())
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


@pytest.mark.multiprocess
def test_fused_nodes_on_global_tensors_keep_their_parts_layouts_on_two_ranks():
    expect_clean_ranks("fusion_worker.py", 2)
