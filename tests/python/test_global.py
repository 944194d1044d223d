"""Global tensors across real processes: to_global/to_local, boxing, creation, errors."""

import pytest

from _launch import expect_clean_ranks

pytestmark = pytest.mark.multiprocess


@pytest.mark.parametrize("nproc", [1, 2, 3, 4])
def test_global_tensors_behave_on_every_rank(nproc):
    expect_clean_ranks("global_worker.py", nproc)


@pytest.mark.parametrize("nproc,mesh", [(2, "1d"), (3, "1d"), (4, "1d"), (4, "2x2")])
def test_every_layout_pair_reshards_to_the_same_logical_tensor(nproc, mesh):
    expect_clean_ranks("reshard_pairs_worker.py", nproc, mesh, timeout=300, rdzv_timeout=60)


@pytest.mark.parametrize("nproc", [2, 4])
def test_local_to_global_follows_oneflow_semantics_on_ranks_that_differ(nproc):
    expect_clean_ranks("local_to_global_worker.py", nproc)
