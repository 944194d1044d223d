"""One AdamW step over the example GPT's parameters: the fused update (three ops a parameter,
the default on CUDA) against the unfused one (a dozen elementwise ops a parameter), in one
process, on the CPU or a GPU.

python benchmarks/bench_optimizer.py [--device cuda] [--rounds 3]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import oneflowlike as flow  # noqa: E402
from _timing import bench, fmt_time  # noqa: E402
from examples.char_gpt.model import GPT, GPTConfig  # noqa: E402

SIZES = {"C=128 L=2": (128, 2, 4), "C=256 L=4": (256, 4, 8), "C=768 L=12": (768, 12, 12)}


def step_time(size, fused, device):
    width, layers, heads = SIZES[size]
    flow.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=65, block_size=64, n_layer=layers, n_head=heads, n_embd=width))
    model.to(device)
    opt = flow.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)
    for p in model.parameters():
        p.grad = flow.randn(*p.shape).to(device)
    sync = flow.cuda.synchronize if device == "cuda" else (lambda: None)

    def call():
        opt.step()
        sync()

    return bench(call)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sizes = list(SIZES) if args.device == "cuda" else list(SIZES)[:2]
    print(f"cores: {os.cpu_count()}; device: {args.device}; AdamW step, fused vs unfused")
    for size in sizes:
        for r in range(args.rounds):
            fused = step_time(size, True, args.device)
            unfused = step_time(size, False, args.device)
            print(
                f"{size} round {r}: fused {fmt_time(fused)}, unfused {fmt_time(unfused)}, "
                f"{unfused / fused:.2f}x"
            )


if __name__ == "__main__":
    main()
