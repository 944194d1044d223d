"""The meta-device example: GPT-3 175B builds and runs forward and backward without memory."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.multiprocess

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "meta" / "gpt3_175b.py"


def test_gpt3_175b_forward_and_backward_on_meta_in_seconds_and_well_under_a_gigabyte():
    out = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "parameters: 175,221,817,344" in out, out
    assert "logits: (1, 2048, 50257)" in out, out
    rss = float(re.search(r"peak RSS (\d+) MiB", out).group(1))
    assert rss < 1024, out


def test_gpt3_175b_data_parallel_on_a_simulated_1024_rank_cluster():
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--ranks", "1024"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "logits: (1024, 2048, 50257)" in out, out
    assert "rank 0 holds logits (1, 2048, 50257), rank 1023 (1, 2048, 50257)" in out, out
    comm = float(re.search(r"communication ([\d.]+) s", out).group(1))
    assert comm > 0, out  # the gradients' all-reduce is priced
    assert float(re.search(r"peak RSS (\d+) MiB", out).group(1)) < 1024, out
