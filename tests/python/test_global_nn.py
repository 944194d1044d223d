"""nn ops on global tensors across real processes (dist_workers/nn_worker.py): dropout draws each
shard by logical element index, so it equals the single-process dropout for the same seed under
every layout; layer_norm's split rows give partial-sum parameter gradients."""

import pytest

from _launch import expect_clean_ranks

pytestmark = pytest.mark.multiprocess


@pytest.mark.parametrize("nproc,mesh", [(2, "1d"), (3, "1d"), (4, "2x2")])
def test_global_dropout_and_layer_norm_equal_the_single_process_ones(nproc, mesh):
    expect_clean_ranks("nn_worker.py", nproc, mesh, timeout=300, rdzv_timeout=60)
