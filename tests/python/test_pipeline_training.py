"""Pipelines on 4 CPU ranks through the launcher (examples/parallel/gpt_layouts.py): the example
GPT in 2 and 4 stages (GraphModule.set_stage), alone, with data parallel and with tensor parallel
inside the stages, under every schedule, trains like one process: every step's loss and every
final parameter match the single-process eager run."""

import numpy as np
import pytest

from _launch import expect_clean_ranks, json_lines, launch
from test_parallel_training import EXAMPLE, RTOL

pytestmark = pytest.mark.multiprocess

STEPS = 6


def _single(one_process, args):
    """The single-process eager run of the model `args` (once a session for each model)."""
    return one_process(EXAMPLE, *args, "--optimizer", "sgd", "--steps", str(STEPS), save=True)


def _run(tmp_path, name, args, nproc):
    out = tmp_path / f"{name}.npz"
    cmd = [EXAMPLE, *args, "--optimizer", "sgd", "--steps", str(STEPS), "--save", str(out)]
    r = launch(["--nproc_per_node", str(nproc)], cmd, timeout=300)
    assert r.returncode == 0, r
    return json_lines(r.stdout)[0], np.load(out)


def _check_like_one_process(got, params, want, want_params):
    """Every step's loss and every final parameter as the single-process run's."""
    for step, (g, w) in enumerate(zip(got["losses"], want["losses"], strict=True)):
        assert abs(g - w) <= RTOL * abs(w), f"step {step}: {g} vs {w}"
    for name in want_params:
        a, b = want_params[name], params[name]
        err = np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-3)
        assert err <= RTOL, f"{got['layout']}: parameter {name} differs by {err:.2e}"


@pytest.mark.parametrize(
    "layout,n_layer,schedule,micro,chunks",
    [
        ("pp2", 2, "1f1b", 4, 1),
        ("pp2", 3, "gpipe", 2, 1),  # uneven: 2 blocks in the first stage, 1 in the second
        ("pp4", 4, "1f1b", 4, 1),
        ("pp4", 4, "gpipe", 8, 1),
        ("pp2", 4, "interleaved_1f1b", 4, 2),  # 4 virtual stages on 2 ranks
        ("pp2xdp", 2, "1f1b", 2, 1),
        ("pp2xdp", 2, "gpipe", 4, 1),
        ("pp2xtp", 2, "1f1b", 2, 1),
        ("pp2xtp", 2, "gpipe", 1, 1),
    ],
)
def test_pipeline_trains_like_one_process(
    tmp_path, one_process, layout, n_layer, schedule, micro, chunks
):
    model = ["--n-layer", str(n_layer)]
    want, want_params = _single(one_process, model)
    args = [*model, "--layout", layout, "--graph", "--schedule", schedule]
    args += ["--micro-batches", str(micro), "--chunks", str(chunks)]
    got, params = _run(tmp_path, layout, args, nproc=4)
    _check_like_one_process(got, params, want, want_params)
    # Each stage's ranks send their activations on and receive the gradients back.
    assert got["collectives"].get("send_recv", 0) >= 2 * max(micro, 1)


@pytest.mark.parametrize("layout", ["pp2", "pp2xtp"])
def test_eager_stages_train_like_one_process(tmp_path, one_process, layout):
    """Without a graph the stages run one after another on their ranks: the same losses."""
    want, want_params = _single(one_process, [])
    got, params = _run(tmp_path, layout, ["--layout", layout], nproc=4)
    _check_like_one_process(got, params, want, want_params)


def test_bad_pipelines_raise_naming_the_modules_and_stages():
    expect_clean_ranks("pipeline_errors_worker.py", 4)


def test_enable_auto_parallel_chooses_the_stages_and_trains_like_one_process(tmp_path, one_process):
    """graph.config.enable_auto_parallel(True, memory_budget=600000, pipeline=True): the model
    and the batch on every rank; the first call plans stages, micro-batches and layouts on meta
    copies of the graph's modules (flow.auto_parallel.plan_pipeline), lays the model out and
    moves the targets to the last stage. Within 600 kB a device (a 4-block model holds about
    700 kB in parameters, gradients and momentum in one process) the plan is a pipeline."""
    model = ["--n-layer", "4"]
    want, want_params = _single(one_process, model)
    args = [*model, "--layout", "auto", "--pipeline", "--graph", "--memory-budget", "600000"]
    got, params = _run(tmp_path, "auto_stages", args, nproc=4)
    assert got["pipeline"].split(" ")[1] == "stages", got["pipeline"]
    _check_like_one_process(got, params, want, want_params)
    # Rank 0, in the first stage, sends each micro-batch's activations on and receives their
    # gradients back; the batch and the targets cross to their stages once a step, not once a
    # micro-batch.
    micro = int(got["pipeline"].split(", ")[1].split(" ")[0])
    assert got["collectives"]["send_recv"] == 2 * micro + 2, (got["pipeline"], got["collectives"])


def test_enable_auto_parallel_with_the_interleaved_schedule_trains_like_one_process(
    tmp_path, one_process
):
    """enable_auto_parallel(pipeline=True, chunks=(2,)): the planner weighs only the interleaved
    schedule (two virtual stages a device), the graph runs it (interleaved_1f1b), and the
    losses and parameters are the one-process run's."""
    model = ["--n-layer", "4"]
    want, want_params = _single(one_process, model)
    args = [*model, "--layout", "auto", "--pipeline", "--graph", "--memory-budget", "600000"]
    got, params = _run(tmp_path, "auto_interleaved", [*args, "--chunks", "2"], nproc=4)
    assert "interleaved in 2 chunks a device" in got["pipeline"], got["pipeline"]
    _check_like_one_process(got, params, want, want_params)


def test_enable_auto_parallel_interleaves_layers_the_virtual_stages_do_not_divide(
    tmp_path, one_process
):
    """5 blocks in 2 virtual stages a device (chunks=(2,)): the plan gives the virtual stages
    unequal layer counts, and the graph trains like one process."""
    model = ["--n-layer", "5"]
    want, want_params = _single(one_process, model)
    args = [*model, "--layout", "auto", "--pipeline", "--graph", "--memory-budget", "600000"]
    got, params = _run(tmp_path, "auto_uneven", [*args, "--chunks", "2"], nproc=4)
    assert "interleaved in 2 chunks a device" in got["pipeline"], got["pipeline"]
    # A first row per virtual stage: 5 blocks in 2 or 4 of them, never evenly.
    first = [int(r) for r in got["pipeline"].split("first layers: ")[1].split()]
    assert len(first) in (2, 4), got["pipeline"]
    _check_like_one_process(got, params, want, want_params)
