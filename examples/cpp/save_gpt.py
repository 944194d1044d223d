"""Saves the example GPT (examples/char_gpt) as a graph the C++ API and inference_server load.

    python3 examples/cpp/save_gpt.py OUT_DIR [--state-dict trained.safetensors] [--vocab-size 65]
        [--generation] [--data input.txt]
    python3 -m oneflowlike.distributed.launch --nproc_per_node 2 examples/cpp/save_gpt.py OUT_DIR \
        --tensor-parallel       # Megatron-style over the ranks: C++ loads it on as many ranks

Without --state-dict the weights are a seeded initialisation; with one (train.py --out), the
sizes must be the ones it was trained with. The graph is traced at a batch of 1 and saved with a
dynamic batch: the C++ side runs any number of rows (a tensor-parallel graph keeps its batch).
With --generation, OUT_DIR/generation is saved for ofl::Generator and the server's
/v1/completions (save_for_generation: a KV cache, prefill and step graphs); --data names the text
the model was trained on, whose characters (sorted, as CharDataset's) are the vocabulary of text
prompts. With --tensor-parallel, the generation graph is saved for --batch sequences (C++
decodes up to that many at once on as many ranks).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import oneflowlike as flow  # noqa: E402
from oneflowlike import nn  # noqa: E402
from examples.char_gpt.model import GPT, GPTConfig, save_for_generation  # noqa: E402
from examples.parallel.gpt_layouts import megatron  # noqa: E402


class Logits(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, idx):
        return self.model(idx)[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--state-dict", default=None)
    p.add_argument("--vocab-size", type=int, default=65)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=1, help="the batch traced (fixed when parallel)")
    p.add_argument("--tensor-parallel", action="store_true", help="over the launcher's ranks")
    p.add_argument("--generation", action="store_true", help="also save OUT/generation")
    p.add_argument("--data", default=None, help="the training text: its characters' vocabulary")
    args = p.parse_args()
    chars = None
    if args.data:
        with open(args.data, encoding="utf-8") as f:
            chars = "".join(sorted(set(f.read())))  # CharDataset's vocabulary
        args.vocab_size = len(chars)
    flow.manual_seed(args.seed)
    cfg = GPTConfig(args.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd)
    model = GPT(cfg).eval()
    if args.state_dict:
        model.load_state_dict(flow.load(args.state_dict))
    idx = flow.zeros(args.batch, cfg.block_size, dtype=flow.int64)
    if args.tensor_parallel:
        place = flow.placement("cpu", ranks=list(range(flow.distributed.get_world_size())))
        model.to_global(place, megatron)
        idx = idx.to_global(place, flow.sbp.broadcast)
    graph = Logits(model)
    graph(idx)
    graph.save(args.out)
    if args.generation:
        # A tensor-parallel model's is saved for --batch sequences.
        batch = args.batch if args.tensor_parallel else None
        save_for_generation(model, os.path.join(args.out, "generation"), chars, batch)
    if flow.distributed.get_rank() == 0:
        print(f"saved {graph!r}".splitlines()[0], "to", args.out)


if __name__ == "__main__":
    main()
