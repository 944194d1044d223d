"""Global tensors on "cuda" placements across real processes (the GPU tier): every layout pair
reshards to the same logical tensor as on the CPU, through NCCL where each rank has its own GPU
and through Gloo with host staging where ranks share one (or when asked for). Skips, saying
why, where no GPU is visible."""

import numpy as np
import pytest

import oneflowlike as flow
from _launch import expect_clean_ranks
from test_cuda import needs_gpu
from test_parallel_training import _parallel, _single

pytestmark = needs_gpu
GPUS = flow.cuda.device_count()


@pytest.mark.parametrize("backend", ["auto", "gloo"])
def test_every_layout_pair_reshards_on_a_cuda_placement(backend):
    # auto: NCCL on two GPUs, host staging when both ranks share the only one
    expect_clean_ranks(
        "reshard_pairs_worker.py", 2, "1d", "cuda", timeout=300, env={"OFL_COMM_BACKEND": backend}
    )


@pytest.mark.skipif(GPUS < 4, reason=f"needs 4 GPUs for a 2x2 mesh of NCCL ranks, has {GPUS}")
def test_a_2x2_mesh_of_gpus_reshards_through_nccl():
    expect_clean_ranks(
        "reshard_pairs_worker.py", 4, "2x2", "cuda", timeout=300, env={"OFL_COMM_BACKEND": "nccl"}
    )


@pytest.mark.parametrize("layout", ["dp", "tp", "zero"])
def test_the_example_gpt_trains_on_cuda_placements_like_one_cpu_process(
    tmp_path, one_process, layout
):
    # four ranks: NCCL on four GPUs, else host staging through Gloo
    want_losses, want_params = _single(one_process, "sgd")
    report, params = _parallel(tmp_path, layout, "sgd", extra=["--device", "cuda"])
    np.testing.assert_allclose(report["losses"], want_losses, rtol=1e-4)
    for name in want_params:
        np.testing.assert_allclose(params[name], want_params[name], rtol=1e-3, atol=1e-4)
