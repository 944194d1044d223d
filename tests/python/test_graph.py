"""nn.Graph on one process: inference and training graphs traced once per input signature and
run by the C++ executor, equal to eager mode bit for bit; clear errors for what tracing cannot
do."""

import sys
from pathlib import Path

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from char_gpt.model import GPT, GPTConfig  # noqa: E402


class Forward(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, idx):
        logits, _ = self.model(idx)
        return logits


def gpt():
    flow.manual_seed(0)
    return GPT(GPTConfig(vocab_size=17, block_size=8, n_layer=2, n_head=2, n_embd=16))


def test_gpt_forward_graph_equals_eager_and_sees_parameter_updates():
    model = gpt().eval()
    graph = Forward(model)
    idx = flow.randint(0, 17, (2, 8))
    with flow.no_grad():
        want = model(idx)[0].numpy()
    np.testing.assert_array_equal(graph(idx).numpy(), want)
    assert graph.num_compiled == 1

    with flow.no_grad():  # parameters are bound by reference: the graph sees the update
        for p in model.parameters():
            p.mul_(0.5)
        want = model(idx)[0].numpy()
    np.testing.assert_array_equal(graph(idx).numpy(), want)
    assert graph.num_compiled == 1


def test_a_new_input_signature_traces_again_and_repr_prints_the_ir():
    graph = Forward(gpt().eval())
    assert "not compiled yet" in repr(graph)
    graph(flow.randint(0, 17, (2, 8)))
    graph(flow.randint(0, 17, (3, 5)))
    graph(flow.randint(0, 17, (2, 8)))
    assert graph.num_compiled == 2
    text = repr(graph)
    assert text.startswith("Forward(inputs: (2, 8) int64 cpu;")
    assert "= embedding(" in text and "= matmul(" in text and "= variable : (17, 16)" in text


def test_dropout_in_a_graph_draws_as_the_same_eager_calls():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    x = flow.randn(8, 4)
    flow.manual_seed(3)
    with flow.no_grad():
        eager = [model(x).numpy() for _ in range(2)]
    graph = G()
    flow.manual_seed(3)
    got = [graph(x).numpy() for _ in range(2)]
    np.testing.assert_array_equal(got[0], eager[0])
    np.testing.assert_array_equal(got[1], eager[1])
    assert not np.array_equal(got[0], got[1])
    model.eval()  # dropout off: a new trace, not the cached one
    np.testing.assert_array_equal(graph(x).numpy(), model(x).detach().numpy())
    assert graph.num_compiled == 2


class Fn(nn.Graph):
    """A graph whose build() is fn."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, x):
        return self.fn(x)


def test_a_graph_traces_again_when_its_modules_change_however_they_change():
    """Setting `training` directly (as a decoder does), replacing a child through a container,
    deleting one: each is seen at the next call, though the call no longer walks the modules."""
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 4))
    graph, x = Fn(model), flow.randn(2, 4)
    graph(x)
    graph(x)
    assert graph.num_compiled == 1
    model[1].training = False
    graph(x)
    assert graph.num_compiled == 2
    model[2] = nn.Linear(4, 3)
    assert graph(x).shape == (2, 3)
    del model._modules["2"]  # straight into the children: seen as well
    assert graph(x).shape == (2, 4)
    assert graph.num_compiled == 4


@pytest.mark.parametrize(
    "fn,op",
    [
        (lambda x: x.sum().item(), "item"),
        (lambda x: x.numpy(), "numpy"),
        (lambda x: x if x.sum() > 0 else -x, "bool"),
    ],
)
def test_data_inside_build_raises_naming_the_op(fn, op):
    with pytest.raises(RuntimeError, match=rf"\[{op}\] data is not available while tracing"):
        Fn(fn)(flow.randn(3))
    # A failed trace leaves nothing open: eager ops run as usual afterwards.
    assert not (flow.ones(2) + 1).is_traced


def test_wrong_inputs_raise_naming_the_signature():
    graph = Forward(gpt().eval())
    with pytest.raises(TypeError, match=r"Forward.build\(idx\) takes 1 inputs, got 2"):
        graph(flow.zeros(2, 8), flow.zeros(2, 8))
    with pytest.raises(TypeError, match=r"input 0 of Forward.build\(idx\) is a list"):
        graph([1, 2])
    with pytest.raises(TypeError, match="add_optimizer expects an Optimizer"):
        graph.add_optimizer(None)


def test_traced_tensors_print_without_data():
    class Show(nn.Graph):
        def build(self, x):
            self.text = repr(x * 2)
            return x

    g = Show()
    g(flow.ones(2, 3))
    assert g.text == "tensor(<traced>, size=(2, 3), dtype=oneflowlike.float32, device='cpu')"


class WithDeadCode(nn.Graph):
    def build(self, x):
        unused = (x * 3).exp()  # noqa: F841 (dropped by the dead_code pass)
        return x.neg()


def test_dead_code_is_dropped_and_the_print_variable_shows_each_pass(capfd, monkeypatch):
    monkeypatch.setenv("OFL_GRAPH_PRINT", "1")
    g = WithDeadCode()
    np.testing.assert_array_equal(g(flow.ones(2)).numpy(), [-1.0, -1.0])
    err = capfd.readouterr().err
    traced, after = err.split("[graph] after dead_code:")[:2]
    assert "= exp(" in traced and "= exp(" not in after and "= neg(" in after
    for name in ("assign_sbp", "insert_boxing", "bucket_grads", "gather_params"):
        assert f"[graph] after {name}:" in err
    assert "exp(" not in repr(g)


class TrainStep(nn.Graph):
    def __init__(self, model, opt, sched=None):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, lr_sch=sched)

    def build(self, idx, targets):
        _, loss = self.model(idx, targets)
        loss.backward()
        return loss


def eager_step(model, opt, idx, targets, sched=None):
    """One eager training step; its loss as a float."""
    _, loss = model(idx, targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    return loss.numpy().item()


def batches(n):
    flow.manual_seed(1)
    return [(flow.randint(0, 17, (4, 8)), flow.randint(0, 17, (4, 8))) for _ in range(n)]


OPTIMIZERS = {
    "adamw+steplr": lambda ps: (
        lambda o: (o, flow.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5))
    )(flow.optim.AdamW(ps, lr=1e-2)),
    "adam+l2": lambda ps: (flow.optim.Adam(ps, lr=1e-2, weight_decay=0.1), None),
    # The fused update (the default on CUDA): its per-step scalars are graph inputs too.
    "fused adamw+steplr": lambda ps: (
        lambda o: (o, flow.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5))
    )(flow.optim.AdamW(ps, lr=1e-2, fused=True)),
    "fused adam+l2": lambda ps: (
        flow.optim.Adam(ps, lr=1e-2, weight_decay=0.1, fused=True),
        None,
    ),
    "sgd+nesterov": lambda ps: (
        flow.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
        None,
    ),
    "sgd+dampening": lambda ps: (flow.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.3), None),
    # OneFlow's per-group keys: a learning-rate factor and gradient clipping by joint norm.
    "adamw groups: lr_scale, clip": lambda ps: (
        lambda o: (o, flow.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5))
    )(flow.optim.AdamW(_groups(ps), lr=1e-2)),
    "sgd groups: lr_scale, clip": lambda ps: (
        flow.optim.SGD(_groups(ps), lr=0.1, momentum=0.9),
        None,
    ),
    "adam without bias correction": lambda ps: (
        flow.optim.Adam(ps, lr=1e-2, do_bias_correction=False),
        None,
    ),
}


def _groups(params):
    ps = list(params)
    return [
        {"params": ps[::2], "lr_scale": 0.25, "clip_grad_max_norm": 0.05, "clip_grad_norm_type": 2},
        {"params": ps[1::2], "clip_grad_max_norm": 0.01, "clip_grad_norm_type": float("inf")},
    ]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_training_graph_steps_exactly_as_eager(name):
    data = batches(3)
    model = gpt()
    opt, sched = OPTIMIZERS[name](model.parameters())
    eager = [eager_step(model, opt, idx, targets, sched) for idx, targets in data]

    twin = gpt()
    twin_opt, twin_sched = OPTIMIZERS[name](twin.parameters())
    graph = TrainStep(twin, twin_opt, twin_sched)
    got = [graph(idx, targets).item() for idx, targets in data]
    assert got == eager
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert graph.num_compiled == 1
    assert all(p.grad is None for p in twin.parameters())  # the graph keeps its gradients
    if sched is not None:
        assert twin_opt.param_groups[0]["lr"] == opt.param_groups[0]["lr"] == 1e-2 / 8


def test_graph_and_eager_steps_alternate():
    data = batches(4)
    model = gpt()
    opt = flow.optim.AdamW(model.parameters(), lr=1e-2)
    for idx, targets in data:
        eager_step(model, opt, idx, targets)

    twin = gpt()
    twin_opt = flow.optim.AdamW(twin.parameters(), lr=1e-2)
    graph = TrainStep(twin, twin_opt)
    for i, (idx, targets) in enumerate(data):
        if i % 2:
            graph(idx, targets)
        else:
            eager_step(twin, twin_opt, idx, targets)
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert all(s["step"] == 4 for s in twin_opt.state.values())


def test_gradient_accumulation_steps_once_on_the_mean_of_micro_batch_losses():
    data = batches(2)
    model = gpt()
    opt = flow.optim.AdamW(model.parameters(), lr=1e-2)
    eager = []
    for idx, targets in data:
        opt.zero_grad()
        for i in range(2):
            _, loss = model(idx[2 * i : 2 * i + 2], targets[2 * i : 2 * i + 2])
            (loss / 2).backward()
            eager.append(loss.item())
        opt.step()

    twin = gpt()
    twin_opt = flow.optim.AdamW(twin.parameters(), lr=1e-2)
    graph = TrainStep(twin, twin_opt)
    graph.config.set_gradient_accumulation_steps(2)
    got = []
    for idx, targets in data:
        losses = graph(idx, targets)
        assert tuple(losses.shape) == (2,)
        got += losses.numpy().tolist()
    np.testing.assert_allclose(got, eager, rtol=1e-6)
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert all(s["step"] == 2 for s in twin_opt.state.values())

    with pytest.raises(ValueError, match=r"input 0 of shape \(3, 8\) does not split into 2"):
        graph(flow.zeros(3, 8, dtype=flow.int64), flow.zeros(3, 8, dtype=flow.int64))


def test_activation_checkpointing_recomputes_blocks_and_lowers_peak_memory():
    def train(checkpointed):
        flow.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=17, block_size=32, n_layer=4, n_head=2, n_embd=32))
        if checkpointed:
            for block in model.blocks:
                block.to(nn.graph.GraphModule).activation_checkpointing = True
        graph = TrainStep(model, flow.optim.AdamW(model.parameters(), lr=1e-2))
        flow.manual_seed(1)
        idx, targets = flow.randint(0, 17, (16, 32)), flow.randint(0, 17, (16, 32))
        losses = [graph(idx, targets).item() for _ in range(2)]
        return losses, model, graph

    plain_losses, plain, plain_graph = train(False)
    ckpt_losses, ckpt, ckpt_graph = train(True)
    assert ckpt_losses == plain_losses
    for a, b in zip(plain.parameters(), ckpt.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # Each block's forward runs twice: once in the forward, once recomputed for its backward.
    assert repr(ckpt_graph).count("= gelu(") == 2 * repr(plain_graph).count("= gelu(") == 8
    assert ckpt_graph.peak_bytes < 0.8 * plain_graph.peak_bytes
    assert ckpt.blocks[0].to(nn.graph.GraphModule).activation_checkpointing


def test_checkpoint_in_eager_mode_replays_dropout():
    flow.manual_seed(0)
    block = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 8)).train()
    x = flow.randn(4, 8, requires_grad=True)
    flow.manual_seed(5)
    block(x).sum().backward()
    want = [x.grad.numpy()] + [p.grad.numpy() for p in block.parameters()]
    x.grad = None
    block.zero_grad()
    block.to(nn.graph.GraphModule).activation_checkpointing = True
    flow.manual_seed(5)
    block(x).sum().backward()
    got = [x.grad.numpy()] + [p.grad.numpy() for p in block.parameters()]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_save_writes_the_ir_the_weights_and_a_manifest(tmp_path):
    import json

    model = gpt().eval()
    graph = Forward(model)
    with pytest.raises(RuntimeError, match="call the graph once first"):
        graph.save(tmp_path / "g")
    idx = flow.randint(0, 17, (2, 8))
    graph(idx)
    graph.save(tmp_path / "g")
    graph.save(tmp_path / "g")  # over an earlier save
    files = sorted(p.name for p in (tmp_path / "g").iterdir())
    assert files == ["graph.json", "manifest.json", "weights.safetensors"]
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["format"] == "oneflowlike-graph" and manifest["format_version"] == 1
    assert manifest["inputs"] == "(2, 8) int64 cpu" and manifest["training"] is False
    ir = json.loads((tmp_path / "g" / "graph.json").read_text())
    assert len(ir["nodes"]) == graph._last.num_nodes and len(ir["inputs"]) == 1
    assert {"type": "bool", "value": True} in [n["attrs"].get("causal") for n in ir["nodes"]]
    weights = flow.load(str(tmp_path / "g" / "weights.safetensors"))
    by_value = {v["value"]: v["name"] for v in ir["variables"]}
    assert len(weights) == len(by_value)
    tok = model.tok_emb.weight.numpy()
    assert any(w.shape == tok.shape and np.array_equal(w.numpy(), tok) for w in weights.values())
    assert [p.name for p in tmp_path.iterdir()] == ["g"]  # nothing left aside


# --- global tensors (one rank here; tests/python/test_parallel_training.py runs 4) ---

ONE = flow.placement("cpu", ranks=[0])
B, S = flow.sbp.broadcast, flow.sbp.split


def test_a_global_training_graph_steps_as_eager_and_prints_layouts_and_boxing():
    data = [(i.to_global(ONE, S(0)), t.to_global(ONE, S(0))) for i, t in batches(3)]
    model = gpt().to_global(ONE, B)
    opt = flow.optim.AdamW(model.parameters(), lr=1e-2)
    eager = [eager_step(model, opt, idx, targets) for idx, targets in data]

    twin = gpt().to_global(ONE, B)
    graph = TrainStep(twin, flow.optim.AdamW(twin.parameters(), lr=1e-2))
    got = [graph(idx, targets).numpy().item() for idx, targets in data]
    assert got == eager
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    text = repr(graph)
    assert "(4, 8) int64 cpu S(0) on cpu[0]" in text  # the inputs' layouts
    assert " = reduce(" in text  # the parameters' gradients, P(sum) -> B, fused
    # A new SBP is a new signature.
    idx, targets = batches(1)[0]
    graph(idx.to_global(ONE, B), targets.to_global(ONE, B))
    assert graph.num_compiled == 2


@pytest.mark.parametrize(
    "fn,error",
    [
        (
            lambda x: (x * 2).sbp,
            r"\[sbp\] the SBP of a traced tensor is chosen when the graph compiles",
        ),
        (lambda x: x.to_local(), r"\[to_local\] a traced tensor has no shard yet"),
        (lambda x: x + flow.ones(4), r"\[add\] mixes a local tensor of shape \(4,\) with global"),
    ],
)
def test_global_graphs_raise_naming_the_op(fn, error):
    with pytest.raises(RuntimeError, match=error):
        Fn(fn)(flow.randn(4).to_global(ONE, B))


def test_a_global_graph_reshards_where_build_asks():
    x = flow.randn(4, 6).to_global(ONE, B)
    graph = Fn(lambda t: (t.to_global(sbp=S(1)) * 2).to_global(sbp=S(0)))
    out = graph(x)
    assert out.sbp == (S(0),)
    np.testing.assert_array_equal(out.numpy(), x.numpy() * 2)
    assert "S(1) on cpu[0]" in repr(graph)


def test_activation_checkpointing_replays_dropout_in_a_graph():
    class Step(nn.Graph):
        def __init__(self, model, opt):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            return loss

    def train(checkpointed):
        flow.manual_seed(0)
        block = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.GELU(), nn.Linear(16, 8))
        model = nn.Sequential(block, nn.Linear(8, 8)).train()
        block.to(nn.graph.GraphModule).activation_checkpointing = checkpointed
        graph = Step(model, flow.optim.SGD(model.parameters(), lr=0.1))
        flow.manual_seed(3)
        x = flow.randn(4, 8)
        losses = [graph(x).item() for _ in range(3)]
        return losses, model, graph

    plain_losses, plain, _ = train(False)
    ckpt_losses, ckpt, graph = train(True)
    assert ckpt_losses == plain_losses
    assert len(set(plain_losses)) == 3  # each step draws its own mask
    for a, b in zip(plain.parameters(), ckpt.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert repr(graph).count("= dropout(") == 2  # the forward's and its replay


def test_save_removes_the_folders_killed_saves_left_and_puts_an_earlier_save_back(tmp_path):
    import json
    import os

    from oneflowlike import _safetensors
    from oneflowlike.nn.graph import _save

    graph = Forward(gpt().eval())
    graph(flow.randint(0, 17, (2, 8)))
    # No process of this pid runs here: the writer of the folders a killed save would leave.
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    dead = next(p for p in range(top - 1, 1, -1) if not _safetensors._pid_alive(p))
    host = _safetensors.HOST

    def leftover(base, kind, pid, fill="0"):
        folder = tmp_path / f".{base}.{kind}-{fill * 16}-{host}-{pid}"
        folder.mkdir()
        (folder / "weights.safetensors").write_bytes(b"\0" * 4096)
        return folder

    killed = leftover("g", "graph", dead)
    running = leftover("g", "graph", os.getpid())  # a save in progress here: kept
    another = leftover("h", "graph", dead)  # another path's: left to its own saves
    graph.save(tmp_path / "g")
    assert not killed.exists() and running.exists() and another.exists()
    assert (tmp_path / "g" / "manifest.json").exists()

    # Killed between moving the earlier save aside and putting its own in place: the earlier
    # save is back at its path before anything else happens to it.
    os.rename(tmp_path / "g", leftover("g", "graph-old", dead, "1") / "previous")
    assert not (tmp_path / "g").exists()
    _save._remove_stale_temps(str(tmp_path / "g"))
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["format"] == "oneflowlike-graph"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".g.")) == [running.name]


def test_a_saved_graph_loads_in_cpp_and_runs_alike(tmp_path):
    """graph/serialize.h's loader (the C++ API's): graph.json and weights.safetensors give back a
    graph that runs like the one saved, with no Python module; a damaged folder raises naming
    the file."""
    model = gpt().eval()
    graph = Forward(model)
    idx = flow.randint(0, 17, (2, 8))
    want = graph(idx)
    graph.save(tmp_path / "g")
    loaded = flow._C.CompiledGraph.load(str(tmp_path / "g"))
    got = loaded.run([idx])
    want = want if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    (tmp_path / "g" / "weights.safetensors").write_bytes(b"\x10")
    with pytest.raises(RuntimeError, match=r"weights\.safetensors is 1 bytes: too short"):
        flow._C.CompiledGraph.load(str(tmp_path / "g"))
    with pytest.raises(RuntimeError, match=r"cannot open .*nowhere/graph\.json"):
        flow._C.CompiledGraph.load(str(tmp_path / "nowhere"))


def test_save_marks_what_follows_the_batch_and_the_cpp_loader_runs_any_batch(tmp_path):
    """graph.save traces again at another batch size: the shapes and attributes that follow the
    batch are marked, and the C++ loader rebuilds the graph for a new batch from the marks."""
    import json

    model = gpt().eval()
    graph = Forward(model)
    graph(flow.randint(0, 17, (2, 8)))
    graph.save(tmp_path / "g")
    ir = json.loads((tmp_path / "g" / "graph.json").read_text())
    assert ir["batch"] == 2 and ir["input_names"] == ["idx"] and ir["single_output"]
    assert ir["values"][ir["inputs"][0]]["batch"] == [[0, 1]]
    views = [n["attrs"]["shape"] for n in ir["nodes"] if n["op"] == "view"]
    assert views and all(v["value"][0] == 2 and v["batch"] == [[0, 1]] for v in views)
    for batch in (1, 5):
        idx = flow.randint(0, 17, (batch, 8))
        got = flow._C.CompiledGraph.load_at(str(tmp_path / "g"), batch).run([idx])[0]
        with flow.no_grad():
            np.testing.assert_allclose(got.numpy(), model(idx)[0].numpy(), atol=1e-5)


class _Cut(nn.Graph):
    def build(self, x):
        return x.flatten()[: x.shape[0] + 1]


def test_save_raises_when_the_graph_does_not_follow_the_batch(tmp_path):
    graph = _Cut()
    graph(flow.ones(2, 3))
    with pytest.raises(
        ValueError,
        match=r"differs at dimension 0 of node \d+'s \(slice\) output \(3 and 4\).* of 2 only",
    ):
        graph.save(tmp_path / "g")
    graph.save(tmp_path / "g", dynamic_batch=False)
    assert "batch" not in (tmp_path / "g" / "graph.json").read_text()
    model = gpt()
    step = TrainStep(model, flow.optim.SGD(model.parameters(), lr=0.1))
    step(flow.randint(0, 17, (2, 8)), flow.randint(0, 17, (2, 8)))
    with pytest.raises(ValueError, match="a training graph .* its batch size only"):
        step.save(tmp_path / "t", dynamic_batch=True)
