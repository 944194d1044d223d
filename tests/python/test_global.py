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
