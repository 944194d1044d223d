"""Saves what the C++ API tests load (run by ctest before them): the example GPT as a graph with
a dynamic batch, the same graph for one batch size only, and a graph with two named outputs;
and in expected.safetensors, token ids at batches 1, 2 and 3 with Python eager's logits.

Usage: python3 save_graphs.py OUT_DIR"""

import os
import sys

import oneflowlike as flow
from oneflowlike import nn
from examples.char_gpt.model import GPT, GPTConfig

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "cpp"))
from save_gpt import Logits  # noqa: E402


class TwoOutputs(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, idx):
        logits = self.model(idx)[0]
        return logits, logits.softmax(-1)


def main(out):
    flow.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=17, block_size=8, n_layer=2, n_head=2, n_embd=16)).eval()
    expected = {}
    with flow.no_grad():
        for batch in (1, 2, 3):
            idx = flow.randint(0, 17, (batch, 8))
            expected[f"idx{batch}"] = idx
            expected[f"logits{batch}"] = model(idx)[0]
    graph = Logits(model)
    graph(expected["idx2"])
    graph.save(f"{out}/gpt")
    graph.save(f"{out}/gpt_static", dynamic_batch=False)
    two = TwoOutputs(model)
    two(expected["idx2"])
    two.save(f"{out}/two_outputs")
    flow.save(expected, f"{out}/expected.safetensors")


if __name__ == "__main__":
    main(sys.argv[1])
