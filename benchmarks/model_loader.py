"""The example char-GPT (examples/char_gpt/model.py) as a module of either framework: the very
same source with `oneflowlike` replaced by `torch`, so both run one architecture and
initialisation scheme; and its training step, eager or as a graph."""

import sys
import types
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "examples" / "char_gpt" / "model.py"


def load_model_module(framework):
    source = MODEL.read_text()
    if framework != "oneflowlike":
        source = source.replace("oneflowlike", framework)
    if framework == "torch":
        # torch.nn has no Graph; only generation uses the file's graph classes.
        source = source.replace("(flow.nn.Graph)", "(object)")
    module = types.ModuleType(f"gpt_{framework}")
    module.__dict__["__file__"] = str(MODEL)
    sys.modules[module.__name__] = module  # dataclasses look the module up by name
    exec(compile(source, str(MODEL), "exec"), module.__dict__)
    return module


def train_step(model, opt, x, y):
    """One step (forward, backward, optimizer) on the batch (x, y), as a function to time; it
    returns the loss."""

    def step():
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def graph_train_step(
    model,
    opt,
    x,
    y,
    auto_parallel=False,
    memory_budget=None,
    micro_batches=1,
    schedule="1f1b",
    pipeline=False,
    cudagraph=False,
):
    """The same step as an nn.Graph (examples/parallel/gpt_layouts.py's TrainStep), traced on
    its first call (with auto_parallel, planned then, within memory_budget bytes per device:
    flow.auto_parallel; with `pipeline`, stages and micro-batches too), the batch in
    `micro_batches` (through the pipeline stages, if any, by `schedule`); with `cudagraph`, captured
    and replayed as a CUDA graph. The graph keeps its gradients inside the step: the eager .grad are dropped.
    """
    sys.path.insert(0, str(MODEL.parents[1] / "parallel"))
    from gpt_layouts import TrainStep

    graph = TrainStep(model, opt)
    graph.config.enable_auto_parallel(auto_parallel, memory_budget=memory_budget, pipeline=pipeline)
    graph.config.set_gradient_accumulation_steps(micro_batches)
    graph.config.set_pipeline_schedule(schedule)
    graph.config.enable_cudagraph(cudagraph)
    opt.zero_grad()

    def step():
        return graph(x, y)

    step.graph = graph  # for the cost model's prediction of the compiled step
    return step
