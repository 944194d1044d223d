"""Train a small character-level GPT on a text file, then sample from it.

python examples/char_gpt/train.py                       # 300 steps on examples/data/fortunes.txt
python examples/char_gpt/train.py --steps 2000 --out gpt.pt --prompt "The meaning of life"
"""

import argparse
import math
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import oneflowlike as flow

if __package__:
    from .data import CharDataset
    from .model import GPT, GPTConfig, generate
else:  # run as a script: python examples/char_gpt/train.py
    from data import CharDataset
    from model import GPT, GPTConfig, generate

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "data" / "fortunes.txt"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DEFAULT_DATA), help="UTF-8 text file to train on")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--block-size", type=int, default=64, help="context length in characters")
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps (default: steps/10)")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--eval-batches", type=int, default=10, help="batches for the val loss")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--prompt", default="\n", help="text the sample starts from")
    p.add_argument("--sample-len", type=int, default=300, help="characters to generate")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--out", default=None, help="save the trained state_dict to this path")
    return p.parse_args(argv)


def _lr_lambda(warmup: int, steps: int):
    """Linear warm-up, then cosine decay to a tenth of the peak learning rate."""

    def f(step):
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, t)))

    return f


def make_optimizer(model, lr, weight_decay):
    """AdamW that decays only matrices and embeddings, not biases and LayerNorm weights."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return flow.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99))


def evaluate(model, ds, split, batch_size, n_batches, seed):
    """Mean loss over n_batches batches drawn with a fixed seed (comparable between calls)."""
    rng = np.random.default_rng(seed)
    model.eval()
    total = 0.0
    with flow.no_grad():
        for _ in range(n_batches):
            x, y = ds.get_batch(split, batch_size, rng=rng)
            _, loss = model(x, y)
            total += loss.item()
    model.train()
    return total / n_batches


def main(argv=None):
    """Trains and samples; returns {'losses', 'val_loss', 'sample', 'seconds', 'model', ...}."""
    args = parse_args(argv)
    if not args.prompt:
        raise SystemExit("--prompt must contain at least one character")
    flow.manual_seed(args.seed)
    ds = CharDataset.from_file(args.data, args.block_size, seed=args.seed)
    prompt_ids = ds.encode(args.prompt)  # fail before training, not after
    cfg = GPTConfig(
        vocab_size=ds.vocab_size,
        block_size=args.block_size,
        n_layer=args.n_layer,
        n_head=args.n_head,
        n_embd=args.n_embd,
        dropout=args.dropout,
    )
    model = GPT(cfg)
    print(
        f"data: {args.data} ({len(ds.train_data)} train / {len(ds.val_data)} val chars, "
        f"vocab {ds.vocab_size}); model: {model.num_params() / 1e6:.2f}M parameters"
    )

    opt = make_optimizer(model, args.lr, args.weight_decay)
    warmup = args.warmup if args.warmup is not None else max(1, args.steps // 10)
    sched = flow.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(warmup, args.steps))

    model.train()
    losses = []
    start = time.perf_counter()
    bar = tqdm(range(args.steps), desc="train")
    for _ in bar:
        x, y = ds.get_batch("train", args.batch_size)
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.4f}", lr=f"{sched.get_last_lr()[0]:.2e}")
    seconds = time.perf_counter() - start

    val_loss = evaluate(model, ds, "val", args.batch_size, args.eval_batches, args.seed + 1)
    tail = losses[-10:]
    print(
        f"{args.steps} steps in {seconds:.1f}s ({args.steps / max(seconds, 1e-9):.2f} steps/s); "
        f"train loss (last {len(tail)}) {sum(tail) / max(1, len(tail)):.4f}; val loss {val_loss:.4f}"
    )

    if args.out:
        flow.save(model.state_dict(), args.out)
        print(f"saved state_dict to {args.out}")

    prompt = flow.from_numpy(prompt_ids[None, :])
    gen = flow.Generator(args.seed)
    out = generate(model, prompt, args.sample_len, args.temperature, args.top_k, generator=gen)
    sample = ds.decode(out.numpy()[0, len(args.prompt) :])
    print(f"--- sample ---\n{args.prompt}{sample}\n--------------")
    return {
        "losses": losses,
        "val_loss": val_loss,
        "sample": sample,
        "seconds": seconds,
        "model": model,
        "dataset": ds,
    }


if __name__ == "__main__":
    main()
