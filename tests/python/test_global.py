"""Global tensors across real processes: to_global/to_local, boxing, creation, errors."""

import pytest

from _launch import json_lines, launch, worker


@pytest.mark.parametrize("nproc", [1, 2, 3, 4])
def test_global_tensors_behave_on_every_rank(nproc):
    r = launch(
        ["--nproc_per_node", str(nproc), "--rdzv_timeout", "30"],
        [worker("global_worker.py")],
        timeout=120,
    )
    assert r.returncode == 0, r
    reports = json_lines(r.stdout)
    assert sorted(rep["rank"] for rep in reports) == list(range(nproc)), r
    for rep in reports:
        assert rep["problems"] == [], (rep, r)


@pytest.mark.parametrize("nproc,mesh", [(2, "1d"), (3, "1d"), (4, "1d"), (4, "2x2")])
def test_every_layout_pair_reshards_to_the_same_logical_tensor(nproc, mesh):
    r = launch(
        ["--nproc_per_node", str(nproc), "--rdzv_timeout", "60"],
        [worker("reshard_pairs_worker.py"), mesh],
        timeout=300,
    )
    assert r.returncode == 0, r
    reports = json_lines(r.stdout)
    assert sorted(rep["rank"] for rep in reports) == list(range(nproc)), r
    for rep in reports:
        assert rep["problems"] == [], rep["problems"][:10]
