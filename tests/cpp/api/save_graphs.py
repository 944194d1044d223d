"""Saves what the C++ API tests load (run by ctest before them): the example GPT as a graph with
a dynamic batch, the same graph for one batch size only, and a graph with two named outputs;
in expected.safetensors, token ids at batches 1, 2 and 3 with Python eager's logits; and in
pipeline/, the inputs plan_pipeline planned the GPT's training pipeline from, with Python's plan
(python_plan.json) for ofl::plan_pipeline to match.

Usage: python3 save_graphs.py OUT_DIR"""

import json
import os
import sys

import oneflowlike as flow
from oneflowlike import nn
from examples.char_gpt.model import GPT, GPTConfig, generate_cached, save_for_generation

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")
sys.path.insert(0, os.path.join(EXAMPLES, "cpp"))
sys.path.insert(0, os.path.join(EXAMPLES, "parallel"))
from save_gpt import Logits  # noqa: E402
from gpt_layouts import TrainStep  # noqa: E402


class TwoOutputs(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, idx):
        logits = self.model(idx)[0]
        return logits, logits.softmax(-1)


def gpt_step(placement, micro_batches):
    """The GPT's training step on one stage's placement (meta tensors: nothing runs), two of its
    repeated blocks, for a batch of 16 sequences."""
    axes = len(placement.hierarchy)
    with flow.device("meta"):
        model = GPT(GPTConfig(65, 32, 2, 4, 64))
    model.to_global(placement, tuple([flow.sbp.broadcast] * axes))
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = flow.zeros(16 // micro_batches, 32, dtype=flow.int64, device="meta",
                   placement=placement, sbp=[flow.sbp.split(0)] * axes)  # fmt: skip
    return TrainStep(model, opt), [x, x]


def save_pipeline(out):
    """8 layers on a simulated 4-device cluster, within a budget one stage does not fit."""
    cluster = flow.boxing.ClusterSpec.cpu_loopback(4)
    kwargs = dict(cluster=cluster, micro_batches=(1, 4))
    free = flow.auto_parallel.plan_pipeline(gpt_step, 8, 4, **kwargs)
    plan = flow.auto_parallel.plan_pipeline(
        gpt_step, 8, 4, memory_budget=0.6 * free.stage_bytes[0], save=f"{out}/pipeline", **kwargs
    )
    assert plan.stages > 1, plan  # the test is of a pipeline
    fields = ["stages", "devices_per_stage", "micro_batches", "recompute", "first_layer",
              "stage_seconds", "stage_bytes", "seconds", "description", "options"]  # fmt: skip
    found = {k: getattr(plan, k) for k in fields}
    found["layouts"] = {k: flow.sbp.nd_sbp(v).to_string() for k, v in plan.intra.layouts.items()}
    with open(f"{out}/pipeline/python_plan.json", "w") as f:
        json.dump(found, f, indent=1)


PROMPTS = [[1, 2, 3], [4, 5, 6, 7, 8], [9]]  # ragged
CHARS = "abcdefghijklmnopq"


def save_generation(model, out, expected):
    """The model saved for ofl::Generator, with what Python makes of PROMPTS: the full window's
    logits after each prompt and each greedy token so far (gen_logits<i>: (tokens, V)), and the
    tokens Python's Decoder samples with seeds 11, 12, 13 (sampled<i>)."""
    save_for_generation(model, f"{out}/generation", chars=CHARS)
    with flow.no_grad():
        for i, prompt in enumerate(PROMPTS):
            tokens, rows = list(prompt), []
            for _ in range(model.cfg.block_size - len(prompt) + 1):
                rows.append(model(flow.tensor([tokens]))[0][0, -1])
                tokens.append(int(rows[-1].argmax()))
            expected[f"gen_logits{i}"] = flow.stack(rows)
    sampled = generate_cached(
        model, PROMPTS, 4, temperature=1.0, top_k=5, top_p=0.9, seeds=[11, 12, 13]
    )
    for i, tokens in enumerate(sampled):
        expected[f"sampled{i}"] = flow.tensor(tokens)


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
    save_generation(model, out, expected)
    flow.save(expected, f"{out}/expected.safetensors")
    save_pipeline(out)


if __name__ == "__main__":
    main(sys.argv[1])
