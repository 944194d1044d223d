"""The distributed example runs through the launcher and every rank reports the right sums."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.multiprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_collectives_example_on_three_ranks():
    cmd = [
        sys.executable, "-m", "oneflowlike.distributed.launch", "--nproc_per_node", "3",
        "--rdzv_timeout", "30", os.path.join(ROOT, "examples", "distributed", "collectives.py"),
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = sorted(line for line in out.stdout.splitlines() if line.startswith("rank "))
    assert len(lines) == 3
    for rank, line in enumerate(lines):
        assert line.startswith(f"rank {rank}/3: all_reduce [3.0, 3.0] all_gather [0, 1, 2]")
        assert "all_gather_v [0, 1, 1, 2, 2, 2]" in line
    assert lines[0].endswith("even-group size 2") and lines[2].endswith("even-group size 2")
