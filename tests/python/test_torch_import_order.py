"""PyTorch and oneflowlike in one process, in either import order (users convert weights with
both loaded): the library loads NCCL only when a NCCL communicator is made, so a PyTorch
imported after it brings its own (core/comm/nccl/nccl_api.h). Fresh interpreters: the order is
the point."""

import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.multiprocess


@pytest.mark.parametrize(
    "order", [("oneflowlike", "torch"), ("torch", "oneflowlike")], ids=["ours_first", "torch_first"]
)
def test_pytorch_and_oneflowlike_import_in_either_order(order):
    code = "; ".join(f"import {m}" for m in order) + (
        "; import oneflowlike as flow; t = torch.arange(3.0); "
        "assert flow.from_dlpack(t).tolist() == [0, 1, 2]; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
