"""Pipeline parallelism: two stages on two ranks, micro-batches under the 1F1B schedule.

    python -m oneflowlike.distributed.launch --nproc_per_node 2 examples/tour/08_pipeline.py

As docs/pipelines.md shows: in an nn.Graph, each stage's modules are put on their own placement
with `module.to(nn.graph.GraphModule).set_stage(stage_id, placement)`, the batch is cut into
micro-batches by `config.set_gradient_accumulation_steps`, and `config.set_pipeline_schedule`
orders their forwards and backwards. Rank 0 runs the first stage, rank 1 the second; the
activations and their gradients cross between them. The graph returns the micro-batches'
losses; their mean, and the parameters after every step, equal one device's full-batch step.
"""

import numpy as np

import oneflowlike as flow
import oneflowlike.nn as nn

BATCH_SIZE = 16
MICRO_BATCHES = 4
STEPS = 5
B = flow.sbp.broadcast
P0 = flow.placement("cpu", ranks=[0])
P1 = flow.placement("cpu", ranks=[1])
rank = flow.env.get_rank()


class Stage0Module(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear0 = nn.Linear(4 * 4, 32)
        self.relu0 = nn.ReLU()

    def forward(self, x):
        return self.relu0(self.linear0(self.flatten(x)))


class Stage1Module(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(32, 32)
        self.relu1 = nn.ReLU()
        self.linear2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.linear2(self.relu1(self.linear1(x)))


class PipelineModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.m_stage0 = Stage0Module()
        self.m_stage1 = Stage1Module()

    def forward(self, x):
        return self.m_stage1(self.m_stage0(x))


def make_model():
    flow.manual_seed(0)  # the same initial parameters on both ranks and in the reference
    return PipelineModule()


class PipelineGraph(nn.Graph):
    def __init__(self, module_pipeline, optimizer):
        super().__init__()
        self.module_pipeline = module_pipeline
        self.module_pipeline.m_stage0.to(nn.graph.GraphModule).set_stage(stage_id=0, placement=P0)
        self.module_pipeline.m_stage1.to(nn.graph.GraphModule).set_stage(stage_id=1, placement=P1)
        self.loss_fn = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(MICRO_BATCHES)
        self.config.set_pipeline_schedule("1f1b")
        self.add_optimizer(optimizer)

    def build(self, x, y):
        out = self.module_pipeline(x)
        loss = self.loss_fn(out, y)
        loss.backward()
        return loss


rng = np.random.default_rng(0)
images = rng.standard_normal((BATCH_SIZE, 1, 4, 4)).astype(np.float32)
labels = rng.integers(0, 10, BATCH_SIZE)

# One device, the whole batch at once: the reference.
reference_model = make_model()
sgd = flow.optim.SGD(reference_model.parameters(), lr=0.1)
reference = []
for _ in range(STEPS):
    loss = nn.CrossEntropyLoss()(reference_model(flow.tensor(images)), flow.tensor(labels))
    sgd.zero_grad()
    loss.backward()
    sgd.step()
    reference.append(loss.item())

module_pipeline = make_model()
graph_pipeline = PipelineGraph(
    module_pipeline, flow.optim.SGD(module_pipeline.parameters(), lr=0.1)
)
x = flow.tensor(images).to_global(P0, B)  # the batch goes to the first stage
y = flow.tensor(labels).to_global(P1, B)  # the targets to the last
losses = []
for _ in range(STEPS):
    micro_losses = graph_pipeline(x, y)  # on P1: one loss per micro-batch
    losses.append(micro_losses.numpy().mean())

if rank == 0:
    print(f"pipeline, {MICRO_BATCHES} micro-batches:", " ".join(f"{v:.5f}" for v in losses))
    print("one device, whole batch:  ", " ".join(f"{v:.5f}" for v in reference))
assert tuple(micro_losses.shape) == (MICRO_BATCHES,), micro_losses.shape
assert np.allclose(losses, reference, rtol=1e-5), (losses, reference)
assert losses[-1] < losses[0], losses
for (name, p), q in zip(module_pipeline.named_parameters(), reference_model.parameters()):
    assert np.allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6), name
