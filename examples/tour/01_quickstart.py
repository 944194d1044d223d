"""Quickstart: a small classifier trained from a Dataset through a DataLoader.

    python examples/tour/01_quickstart.py

The data is synthetic (four Gaussian blobs in 16 dimensions), so nothing is downloaded. The
same epochs run once with the loader in the main process (num_workers=0) and once with two
worker processes (num_workers=2): the batches, and so the losses, are the same.
"""

import numpy as np

import oneflowlike as flow
import oneflowlike.nn as nn
from oneflowlike.utils.data import DataLoader, Dataset

BATCH_SIZE = 32
EPOCHS = 3
CLASSES = 4
FEATURES = 16


class Blobs(Dataset):
    """CLASSES clusters of points; a sample is (features, label), as numpy and an int."""

    centers = np.random.default_rng(0).normal(0, 2, (CLASSES, FEATURES)).astype(np.float32)

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, CLASSES, n)
        self.points = self.centers[self.labels] + rng.normal(0, 1, (n, FEATURES)).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.points[i], int(self.labels[i])


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(FEATURES, 64),
            nn.ReLU(),
            nn.Linear(64, CLASSES),
        )

    def forward(self, x):
        return self.linear_relu_stack(x)


def train(num_workers):
    flow.manual_seed(0)  # the same initial model and the same shuffles for both runs
    loader = DataLoader(
        Blobs(512, seed=0),
        BATCH_SIZE,
        shuffle=True,
        num_workers=num_workers,
        generator=flow.Generator().manual_seed(0),
    )
    model = NeuralNetwork()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1)
    epoch_losses = []
    for _ in range(EPOCHS):
        total = 0.0
        for x, y in loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        epoch_losses.append(total / len(loader))
    x, y = next(iter(DataLoader(Blobs(256, seed=1), batch_size=256)))  # unseen points, same blobs
    with flow.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    return epoch_losses, accuracy


in_process, accuracy = train(num_workers=0)
losses = " ".join(f"{v:.4f}" for v in in_process)
print(f"num_workers=0: loss per epoch {losses}, accuracy on unseen points {accuracy:.1%}")
with_workers, _ = train(num_workers=2)
print("num_workers=2: loss per epoch", " ".join(f"{v:.4f}" for v in with_workers))

assert in_process[-1] < 0.5 * in_process[0], in_process
assert accuracy > 0.9, accuracy
assert np.allclose(in_process, with_workers, rtol=1e-6), (in_process, with_workers)
