"""Automatic mixed precision: bfloat16 on the CPU, eagerly and in an nn.Graph.

    python examples/tour/04_amp.py

Under `flow.autocast("cpu", dtype=flow.bfloat16)` the matmuls run in bfloat16 while the
parameters, their gradients and the loss stay float32. In a graph, `config.enable_amp(True)`
traces `build()` under the same autocast (bfloat16 is the CPU's default). Both train the model,
and the graph gives the eager losses.
"""

import numpy as np

import oneflowlike as flow
import oneflowlike.nn as nn

STEPS = 30

flow.manual_seed(0)
centers = flow.randn(10, 64)
labels = flow.randint(0, 10, (128,))
x = centers[labels] + 2 * flow.randn(128, 64)


def setup():
    flow.manual_seed(1)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return model, flow.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)


loss_fn = nn.CrossEntropyLoss()

# Eager mode: the forward under autocast, the backward and the step outside it.
model, optimizer = setup()
eager = []
for _ in range(STEPS):
    with flow.autocast("cpu", dtype=flow.bfloat16):
        logits = model(x)
        loss = loss_fn(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    eager.append(loss.item())
weight = model[0].weight
print(f"eager: logits {logits.dtype}, loss {loss.dtype}, weight {weight.dtype}", end="")
print(f" (grad {weight.grad.dtype}); loss {eager[0]:.4f} -> {eager[-1]:.4f}")
assert logits.dtype == flow.bfloat16 and loss.dtype == flow.float32
assert weight.dtype == flow.float32 and weight.grad.dtype == flow.float32


# Graph mode, as OneFlow's AMP tutorial writes it.
class CustomGraph(nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.add_optimizer(optimizer)
        self.config.enable_amp(True)

    def build(self, x, y):
        y_pred = self.model(x)
        loss = self.loss_fn(y_pred, y)
        loss.backward()
        return y_pred, loss


graph = CustomGraph(*setup())
graph_losses = []
for _ in range(STEPS):
    y_pred, loss = graph(x, labels)
    graph_losses.append(loss.item())
print(f"graph: logits {y_pred.dtype}; loss {graph_losses[0]:.4f} -> {graph_losses[-1]:.4f}")

assert y_pred.dtype == flow.bfloat16
assert eager[-1] < 0.2 * eager[0], eager
assert np.allclose(graph_losses, eager, rtol=1e-3, atol=1e-3), (graph_losses, eager)
