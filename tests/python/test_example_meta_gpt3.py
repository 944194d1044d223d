"""The meta-device example: GPT-3 175B builds and runs forward and backward without memory."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "meta" / "gpt3_175b.py"


def test_gpt3_175b_forward_and_backward_on_meta_in_seconds_and_well_under_a_gigabyte():
    out = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "parameters: 175,221,817,344" in out, out
    assert "logits: (1, 2048, 50257)" in out, out
    rss = float(re.search(r"peak RSS (\d+) MiB", out).group(1))
    assert rss < 1024, out
