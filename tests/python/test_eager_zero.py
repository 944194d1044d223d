"""Eager ZeRO (parameters split S(0), global/gather_ahead) across real processes: it trains as one
process does, gathers every parameter in one fused all-gather per forward and none in the
backward, and gathers a parameter written in place again; OFL_GATHER_AHEAD=0 gathers per op."""

import pytest

from _launch import expect_clean_ranks

pytestmark = pytest.mark.multiprocess


@pytest.mark.parametrize("nproc,ahead", [(2, "1"), (4, "1"), (2, "0")])
def test_eager_zero_gathers_its_parameters_once_a_step_and_trains_as_one_process(nproc, ahead):
    expect_clean_ranks("gather_ahead_worker.py", nproc, env={"OFL_GATHER_AHEAD": ahead})
