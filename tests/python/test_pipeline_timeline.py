"""A measured pipeline (examples/parallel/pipeline_timeline.py, 2 ranks through the launcher):
each rank ran its stage's forwards and backwards in the schedule's order, every micro-batch once,
and the figure and the bubbles come out."""

import json
from pathlib import Path

import pytest

import oneflowlike as flow
from _launch import launch

pytestmark = pytest.mark.multiprocess

EXAMPLE = str(
    Path(__file__).resolve().parents[2] / "examples" / "parallel" / "pipeline_timeline.py"
)


@pytest.mark.parametrize("schedule,chunks", [("1f1b", 1), ("gpipe", 1), ("interleaved_1f1b", 2)])
def test_each_rank_runs_its_stages_in_the_schedules_order(tmp_path, schedule, chunks):
    fig, data = tmp_path / "pipeline.png", tmp_path / "pipeline.json"
    args = ["--schedule", schedule, "--chunks", str(chunks), "--micro-batches", "4"]
    args += ["--n-embd", "32", "--block-size", "16", "--batch-size", "8", "--steps", "2"]
    r = launch(["--nproc_per_node", "2"], [EXAMPLE, *args, "--out", str(fig), "--json", str(data)],
               timeout=300)  # fmt: skip
    assert r.returncode == 0, r
    report = json.loads(data.read_text())
    want = flow.nn.graph.pipeline_schedule(schedule, 2, 4, chunks)
    for rank in range(2):
        ran = sorted((a for a in report["actions"] if a["rank"] == rank), key=lambda a: a["start"])
        got = [("B" if a["backward"] else "F", a["micro"], a["stage"]) for a in ran]
        assert got == [(x.phase, x.micro, x.stage) for x in want.order[rank]], rank
    s = report["summary"]
    assert 0 <= s["measured_bubble"] < 1 and 0 <= s["schedule_bubble"] < 1
    assert s["textbook_bubble"] == pytest.approx(1 / (4 * chunks + 1))
    assert fig.stat().st_size > 10_000
