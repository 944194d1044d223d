"""The acceptance test of global ops: the example GPT trains 8 steps on 4 CPU ranks through the
launcher under each parallel layout, eagerly and in graph mode, and every step's loss and every
final parameter match the single-process eager run (examples/parallel/gpt_layouts.py)."""

from pathlib import Path

import numpy as np
import pytest

from _launch import json_lines, launch

pytestmark = pytest.mark.multiprocess

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "parallel" / "gpt_layouts.py")
RTOL = 1e-5
# Steps a run trains: enough for momentum and Adam's moments to carry several gradients (an eager
# global step on 4 ranks sharing 2 cores is about half a second).
STEPS = 8


def _single(one_process, optimizer):
    """The single-process eager run's losses and final parameters (run once a session)."""
    report, params = one_process(
        EXAMPLE, "--layout", "single", "--optimizer", optimizer, "--steps", str(STEPS), save=True
    )
    return report["losses"], params


def _parallel(tmp_path, layout, optimizer, mode="eager", extra=()):
    out = tmp_path / f"{layout}_{optimizer}.npz"
    graph = ["--graph"] if mode == "graph" else []
    r = launch(
        ["--nproc_per_node", "4"],
        [
            EXAMPLE,
            "--layout",
            layout,
            "--optimizer",
            optimizer,
            "--steps",
            str(STEPS),
            "--save",
            str(out),
        ]
        + [*graph, *extra],
        timeout=300,
    )
    assert r.returncode == 0, r
    return json_lines(r.stdout)[0], np.load(out)


def _check_losses(got, want):
    assert len(got) == len(want) == STEPS
    for step, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= RTOL * abs(w), f"step {step}: {g} vs {w}"


# What each layout must have done to the parameters (a sample; the example lists them all).
EXPECTED_SBP = {
    "dp": {"blocks.0.attn.query.weight": "(B)", "head.weight": "(B)"},
    "tp": {
        "blocks.0.attn.query.weight": "(S(0))",
        "blocks.0.attn.proj.weight": "(S(1))",
        "blocks.0.mlp.fc.bias": "(S(0))",
        "blocks.0.mlp.proj.bias": "(B)",
    },
    "zero": {"blocks.0.mlp.fc.weight": "(S(0))", "tok_emb.weight": "(S(0))"},
    "2d": {"blocks.0.attn.key.weight": "(B, S(0))", "blocks.1.mlp.proj.weight": "(B, S(1))"},
    "seq": {"blocks.0.attn.query.weight": "(B)"},
}


@pytest.mark.parametrize(
    "layout,mode",
    [(layout, mode) for layout in ["dp", "tp", "zero", "2d", "seq"] for mode in ["eager", "graph"]]
    + [("auto", "graph")],  # the planner's layouts (flow.auto_parallel)
)
def test_layout_trains_like_one_process(tmp_path, one_process, layout, mode):
    want_losses, want_params = _single(one_process, "sgd")
    report, params = _parallel(tmp_path, layout, "sgd", mode)
    _check_losses(report["losses"], want_losses)
    for name in want_params:
        a, b = want_params[name], params[name]
        err = np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-3)
        assert err <= RTOL, f"{layout}: parameter {name} differs by {err:.2e}"
    for name, sbp in EXPECTED_SBP.get(layout, {}).items():
        assert report["param_sbp"][name] == sbp, (name, report["param_sbp"][name])
        # Momentum buffers take their parameter's layout: split parameters, split states.
        assert report["state_sbp"][name] == [sbp], (name, report["state_sbp"][name])
    if mode == "graph" and layout == "zero":
        # The split parameters' gathers go out fused (eager mode runs 56 one by one), and so do
        # the gradients' reduce-scatters.
        assert report["collectives"]["all_gather"] <= 3, report["collectives"]
        assert report["collectives"]["reduce_scatter(sum)"] <= 2, report["collectives"]


def test_auto_under_a_budget_too_small_for_data_parallel_shards_and_trains_like_one_process(
    tmp_path, one_process
):
    """Data parallel holds 382 kB a rank in parameters, gradients and momentum alone; within
    300 kB for those and the activations the backward reads, the planner shards, and the step
    still trains like one process."""
    want_losses, want_params = _single(one_process, "sgd")
    budget = 300_000
    report, params = _parallel(tmp_path, "auto", "sgd", "graph", ["--memory-budget", str(budget)])
    _check_losses(report["losses"], want_losses)
    for name in want_params:
        a, b = want_params[name], params[name]
        assert np.linalg.norm(a - b) <= RTOL * max(np.linalg.norm(a), 1e-3), name
    assert report["state_bytes"] <= budget
    assert any("S(" in sbp for sbp in report["param_sbp"].values())


@pytest.mark.parametrize("optimizer", ["adamw", "adamw-fused"])
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_zero_with_adamw_matches_one_process(tmp_path, one_process, mode, optimizer):
    """Adam's states are sharded with the parameters; the losses match step for step (fused:
    its update ops on the shards). (The final parameters are not compared: the attention key's
    bias has a zero gradient in exact arithmetic, and Adam turns its rounding noise into
    full-size steps in any run.)"""
    want_losses, _ = _single(one_process, optimizer)
    report, _ = _parallel(tmp_path, "zero", optimizer, mode)
    _check_losses(report["losses"], want_losses)
    assert report["state_sbp"]["blocks.0.mlp.fc.weight"] == ["(S(0))"]


CNN = str(Path(__file__).resolve().parent / "dist_workers" / "cnn_worker.py")


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("layout,ranks", [("dp", 2), ("dp", 4), ("cp", 3)])
def test_cnn_layout_trains_like_one_process(one_process, layout, ranks, mode):
    """conv2d, batch_norm, max/avg pooling on global tensors: data parallel (batch norm's
    statistics are the whole batch's, as SyncBatchNorm's) and channel parallel, uneven."""
    want, _ = one_process(CNN)
    graph = ["--graph"] if mode == "graph" else []
    r = launch(["--nproc_per_node", str(ranks)], [CNN, "--layout", layout, *graph], timeout=120)
    assert r.returncode == 0, r
    got = json_lines(r.stdout)[0]
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=RTOL)
    assert got["state"].keys() == want["state"].keys()
    for name, value in want["state"].items():
        np.testing.assert_allclose(got["state"][name], value, rtol=RTOL, atol=1e-7, err_msg=name)
