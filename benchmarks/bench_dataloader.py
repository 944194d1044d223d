"""DataLoader throughput against torch.utils.data, on this machine in one run.

python benchmarks/bench_dataloader.py [--quick]

One synthetic CIFAR-like dataset for both: 20,000 samples of a (3, 32, 32) uint8 image and an
int label, each sample made float32, normalised and flipped with numpy (the per-sample
transform). Batches of 64, one epoch per repeat (worker start-up included), with num_workers 0,
1 and 2. Each library runs in its own child process; each row prints samples/s, best of 3
repeats with [min-max], and ours/torch (above 1.0x: oneflowlike is faster).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import run_child  # noqa: E402

BATCH = 64
WORKERS = (0, 1, 2)
REPEATS = 3
MEAN = np.array([0.49, 0.48, 0.45], np.float32).reshape(3, 1, 1)
STD = np.array([0.25, 0.24, 0.26], np.float32).reshape(3, 1, 1)


class Images:
    """Map-style: sample i is (normalised float32 image, label), flipped for odd i."""

    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.images = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
        self.labels = rng.integers(0, 10, size=n)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        x = (self.images[i].astype(np.float32) / 255.0 - MEAN) / STD
        if i % 2:
            x = x[:, :, ::-1]
        return np.ascontiguousarray(x), int(self.labels[i])


def measure(lib, n):
    """{num_workers: [samples/s per repeat]} for `lib`'s DataLoader."""
    if lib == "torch":
        import torch.utils.data as tud

        base, loader_cls = tud.Dataset, tud.DataLoader
    else:
        import oneflowlike.utils.data as fud

        base, loader_cls = fud.Dataset, fud.DataLoader
    dataset = type("Images", (Images, base), {})(n)
    rates = {}
    for workers in WORKERS:
        rates[workers] = []
        for _ in range(REPEATS):
            loader = loader_cls(dataset, batch_size=BATCH, shuffle=False, num_workers=workers)
            start = time.perf_counter()
            seen = sum(len(y) for _, y in loader)
            rates[workers].append(seen / (time.perf_counter() - start))
            assert seen == n
    return rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="5,000 samples instead of 20,000")
    ap.add_argument("--lib", help=argparse.SUPPRESS)  # child mode: measure one library
    args = ap.parse_args()
    n = 5000 if args.quick else 20000
    if args.lib:
        print(json.dumps(measure(args.lib, n)))
        return
    extra = ["--quick"] if args.quick else []
    ours = run_child(__file__, "oneflowlike", extra)
    theirs = run_child(__file__, "torch", extra)
    print(f"{n} samples of (3, 32, 32) float32 + label, batch {BATCH}, one epoch, samples/s")
    print(f"best of {REPEATS} [min-max]; ratio = ours / torch (above 1.0x: oneflowlike faster)")
    header = f"{'num_workers':>11s} {'oneflowlike':>26s} {'torch':>26s} {'ratio':>7s}"
    print(header)
    print("-" * len(header))
    for w in map(str, WORKERS):

        def cell(rates):
            return f"{max(rates):8.0f} [{min(rates):.0f}-{max(rates):.0f}]"

        ratio = max(ours[w]) / max(theirs[w])
        print(f"{w:>11s} {cell(ours[w]):>26s} {cell(theirs[w]):>26s} {ratio:6.2f}x")


if __name__ == "__main__":
    main()
