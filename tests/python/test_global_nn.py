"""nn ops on global tensors across real processes (dist_workers/nn_worker.py): dropout draws each
shard by logical element index, so it equals the single-process dropout for the same seed under
every layout; layer_norm's split rows give partial-sum parameter gradients."""

import pytest

from _launch import json_lines, launch, worker


@pytest.mark.parametrize("nproc,mesh", [(2, "1d"), (3, "1d"), (4, "2x2")])
def test_global_dropout_and_layer_norm_equal_the_single_process_ones(nproc, mesh):
    r = launch(
        ["--nproc_per_node", str(nproc), "--rdzv_timeout", "60"],
        [worker("nn_worker.py"), mesh],
        timeout=300,
    )
    assert r.returncode == 0, r
    reports = json_lines(r.stdout)
    assert sorted(rep["rank"] for rep in reports) == list(range(nproc)), r
    for rep in reports:
        assert rep["problems"] == [], rep["problems"]
