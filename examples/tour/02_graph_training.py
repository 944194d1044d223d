"""The quickstart's training step as an nn.Graph.

    python examples/tour/02_graph_training.py

`build()` holds the whole step: forward, loss, `loss.backward()` and, through `add_optimizer`,
the optimizer's update. The first call traces it into a graph that runs in C++; later calls run
the compiled graph. The graph and the eager loop, started from the same parameters and fed the
same batches, give the same losses.
"""

import numpy as np

import oneflowlike as flow
import oneflowlike.nn as nn
from oneflowlike.utils.data import DataLoader, TensorDataset

BATCH_SIZE = 32
EPOCHS = 3

flow.manual_seed(0)
centers = flow.randn(4, 16)
labels = flow.randint(0, 4, (512,))
points = centers[labels] + flow.randn(512, 16)
dataset = TensorDataset(points, labels)


def make_model():
    flow.manual_seed(1)  # the same initial parameters every time
    return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))


class TrainGraph(nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def run(step_fn):
    loader = DataLoader(
        dataset, BATCH_SIZE, shuffle=True, generator=flow.Generator().manual_seed(0)
    )
    return [step_fn(x, y).item() for _ in range(EPOCHS) for x, y in loader]


# Eager mode.
model = make_model()
optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()


def eager_step(x, y):
    loss = loss_fn(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


eager = run(eager_step)

# Graph mode: the same model and optimizer, built afresh.
graph_model = make_model()
graph = TrainGraph(graph_model, flow.optim.SGD(graph_model.parameters(), lr=0.1, momentum=0.9))
graph_losses = run(graph)

per_epoch = len(graph_losses) // EPOCHS
first, last = np.mean(graph_losses[:per_epoch]), np.mean(graph_losses[-per_epoch:])
print(f"graph: mean loss of the first epoch {first:.4f}, of the last {last:.4f}")
print(f"eager: the same {len(eager)} losses, last {eager[-1]:.4f} (graph {graph_losses[-1]:.4f})")

assert last < 0.5 * first, graph_losses
assert np.allclose(graph_losses, eager, rtol=1e-5, atol=1e-6), (graph_losses, eager)
for (name, p), q in zip(graph_model.named_parameters(), model.parameters()):
    assert np.allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6), name
