"""GPT-3 175B on the meta device: build it, run a training step's forward and backward, and
report parameter count, shapes, time and peak memory, all without allocating a single weight.

    python examples/meta/gpt3_175b.py [--layers 96] [--batch 1] [--seq 2048] [--ranks 1024]

With --ranks N the step runs data parallel on a simulated placement of N ranks (an H100
cluster of N / 8 nodes of 8 for the cost model) in this one process: every op picks its SBP
signature, every rank's shard shape is known, and the predicted compute and communication
are summed, with no communication and no memory.

The model is the example GPT (examples/char_gpt/model.py) at GPT-3's published size: 96 layers,
width 12288, 96 heads, a 50257-token vocabulary and 2048 positions (Brown et al. 2020, table 2.1).
"""

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import oneflowlike as flow  # noqa: E402
from char_gpt.model import GPT, GPTConfig  # noqa: E402


def peak_rss_mib() -> float:
    """This program's peak resident memory: Linux's VmHWM, which starts afresh at exec (the
    ru_maxrss of getrusage keeps the peak of the process that forked it: a child of a 1 GB test
    runner read 1 GB before it allocated anything)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=96)
    p.add_argument("--width", type=int, default=12288)
    p.add_argument("--heads", type=int, default=96)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--ranks", type=int, default=0, help="simulate data parallelism on N ranks")
    args = p.parse_args(argv)

    cfg = GPTConfig(
        vocab_size=50257,
        block_size=args.seq,
        n_layer=args.layers,
        n_head=args.heads,
        n_embd=args.width,
    )
    rss_start = peak_rss_mib()
    t0 = time.perf_counter()
    with flow.device("meta"):
        model = GPT(cfg)
    t_build = time.perf_counter() - t0

    if args.ranks:
        spec = flow.boxing.ClusterSpec.h100_ib(max(1, args.ranks // 8), min(8, args.ranks))
        flow.boxing.set_cluster_spec(spec)
        placement = flow.placement("cpu", list(range(args.ranks)))
        model = model.to_global(placement=placement, sbp=flow.sbp.broadcast)
        idx = flow.zeros(
            args.batch * args.ranks, args.seq, dtype=flow.int64, device="meta",
            placement=placement, sbp=flow.sbp.split(0),
        )  # fmt: skip
    else:
        idx = flow.zeros(args.batch, args.seq, dtype=flow.int64, device="meta")
    with flow.boxing.cost_log() as costs:
        t0 = time.perf_counter()
        logits, loss = model(idx, idx)
        t_forward = time.perf_counter() - t0
        t0 = time.perf_counter()
        loss.backward()
        t_backward = time.perf_counter() - t0

    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    assert all(p.grad is not None and p.grad.shape == p.shape for p in params)
    assert all(p.device.type == "meta" and p.grad.device.type == "meta" for p in params)
    print(f"GPT-3 config: {cfg.n_layer} layers, width {cfg.n_embd}, {cfg.n_head} heads")
    print(f"parameters: {n:,} ({n * 4 / 2**30:,.0f} GiB in float32, none allocated)")
    print(f"logits: {tuple(logits.shape)} {logits.dtype} on {logits.device}; loss {loss.shape}")
    print(f"build {t_build:.2f} s, forward {t_forward:.2f} s, backward {t_backward:.2f} s")
    if args.ranks:
        comm = sum(c["comm_seconds"] for c in costs)
        compute = sum(c["compute_seconds"] for c in costs)
        shards = logits.local_shapes()
        print(f"simulated {args.ranks} ranks: {len(costs)} global ops and reshards priced")
        print(f"rank 0 holds logits {shards[0]}, rank {args.ranks - 1} {shards[args.ranks - 1]}")
        print(f"predicted step: compute {compute:.2f} s, communication {comm:.2f} s")
    print(f"peak RSS {peak_rss_mib():.0f} MiB (at start {rss_start:.0f} MiB)")
    return n


if __name__ == "__main__":
    main()
