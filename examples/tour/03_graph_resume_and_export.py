"""Resume graph training from a checkpoint, then export the trained model as a graph.

    python examples/tour/03_graph_resume_and_export.py

`graph.state_dict()` holds the module's state and the optimizer's (and the lr scheduler's), as
OneFlow's nn.Graph does; `flow.save` writes it and `graph.load_state_dict` loads it into a new
graph before its first call. Training interrupted after 4 steps and resumed that way gives the
same losses as 8 steps straight. `flow.save(graph, dir)` then exports an inference graph for the
C++ API (`build/examples/run_graph dir ...`, see the README). Files go to a temporary folder.
"""

import json
import os
import tempfile

import numpy as np

import oneflowlike as flow
import oneflowlike.nn as nn

flow.manual_seed(0)
true_w = flow.randn(8, 1)
batches = []
for _ in range(8):
    x = flow.randn(16, 8)
    batches.append((x, x.matmul(true_w) + 0.1 * flow.randn(16, 1)))


def setup(seed):
    flow.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = flow.optim.AdamW(model.parameters(), lr=0.02)
    scheduler = flow.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    return model, optimizer, scheduler


class TrainGraph(nn.Graph):
    def __init__(self, model, optimizer, scheduler):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer, lr_sch=scheduler)

    def build(self, x, y):
        loss = (self.model(x) - y).square().mean()
        loss.backward()
        return loss


class InferGraph(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


straight = TrainGraph(*setup(seed=1))
want = [straight(x, y).item() for x, y in batches]

with tempfile.TemporaryDirectory() as tmp:
    first = TrainGraph(*setup(seed=1))
    got = [first(x, y).item() for x, y in batches[:4]]
    flow.save(first.state_dict(), os.path.join(tmp, "step4"))  # model, _optimizer0, _lr_scheduler0

    model, optimizer, scheduler = setup(seed=2)  # other weights until the checkpoint is loaded
    resumed = TrainGraph(model, optimizer, scheduler)
    resumed.load_state_dict(flow.load(os.path.join(tmp, "step4")))
    got += [resumed(x, y).item() for x, y in batches[4:]]
    print("straight:", " ".join(f"{v:.4f}" for v in want))
    print("resumed: ", " ".join(f"{v:.4f}" for v in got))
    assert np.allclose(got, want, rtol=1e-6), (got, want)
    assert want[-1] < 0.5 * want[0], want

    model.eval()
    infer = InferGraph(model)
    x = batches[0][0]
    y = infer(x)
    flow.save(infer, os.path.join(tmp, "exported"))  # the same as infer.save(dir)
    exported = sorted(os.listdir(os.path.join(tmp, "exported")))
    with open(os.path.join(tmp, "exported", "graph.json")) as f:
        doc = json.load(f)
    print(f"exported: {', '.join(exported)}; inputs {doc['input_names']}")
    assert {"graph.json", "manifest.json"} <= set(exported), exported
    assert doc["input_names"] == ["x"], doc["input_names"]
    weights = flow.load(os.path.join(tmp, "exported", "weights.safetensors")).values()
    for name, p in model.named_parameters():  # the weights are saved by the graph's own names
        assert any(np.array_equal(w.numpy(), p.numpy()) for w in weights), name
    with flow.no_grad():
        assert np.allclose(y.numpy(), model(x).numpy(), rtol=1e-6)
