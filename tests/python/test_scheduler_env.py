"""Jobs started by a scheduler instead of our launcher (issue 46): srun's SLURM_* and mpirun's
OMPI_COMM_WORLD_* / PMI_* variables give each rank its place, as PyTorch Lightning and DeepSpeed
read them; RANK and WORLD_SIZE (our launcher, torchrun, Kubernetes' PyTorchJob) win where set.
The variables as read (unit), and real ranks joining on loopback with nothing else (multiprocess).
"""

import json
import random
import socket
import subprocess
import sys

import numpy as np
import pytest

from oneflowlike.distributed._env import first_host, read_env, scheduler_env
from _launch import clean_env, json_lines, launch, worker

SLURM = {
    "SLURM_PROCID": "5",
    "SLURM_NTASKS": "8",
    "SLURM_LOCALID": "1",
    "SLURM_NODEID": "2",
    "SLURM_TASKS_PER_NODE": "2(x4)",
    "SLURM_NNODES": "4",
    "SLURM_JOB_NODELIST": "gpu[07-10]",
    "SLURM_JOB_ID": "4281234",
}


@pytest.mark.unit
def test_srun_gives_each_rank_its_place_and_the_first_node_hosts_the_store():
    env = read_env(SLURM)
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size) == (5, 8, 1, 2)
    assert (env.node_rank, env.nnodes) == (2, 4)
    # The first node of the list, at 10000 + the job id's last four digits (Lightning's rule).
    assert (env.master_addr, env.master_port) == ("gpu07", 11234)
    # MASTER_ADDR and MASTER_PORT set win; so do RANK and WORLD_SIZE (a launcher inside srun).
    env = read_env({**SLURM, "MASTER_ADDR": "head", "MASTER_PORT": "29500"})
    assert (env.master_addr, env.master_port) == ("head", 29500)
    assert scheduler_env({**SLURM, "RANK": "0", "WORLD_SIZE": "1"}) == {}
    # An interactive allocation's shell is one process.
    assert read_env({**SLURM, "SLURM_JOB_NAME": "interactive"}).world_size == 1


@pytest.mark.unit
def test_slurm_node_lists_and_task_counts_as_slurm_writes_them():
    assert first_host("node1") == "node1"
    assert first_host("node[07-09,12],gpu1") == "node07"
    assert first_host("a1,b[2-3]") == "a1"
    assert first_host("n[1-2]-ib") == "n1-ib"
    uneven = {**SLURM, "SLURM_TASKS_PER_NODE": "3(x2),2", "SLURM_NODEID": "2"}
    assert read_env(uneven).local_world_size == 2


@pytest.mark.unit
def test_mpirun_gives_each_rank_its_place_and_needs_the_master_named():
    ompi = {
        "OMPI_COMM_WORLD_RANK": "3",
        "OMPI_COMM_WORLD_SIZE": "4",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
        "OMPI_COMM_WORLD_NODE_RANK": "1",
    }
    with pytest.raises(RuntimeError, match=r"WORLD_SIZE=4 needs MASTER_ADDR .*mpirun"):
        read_env(ompi)
    env = read_env({**ompi, "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"})
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size) == (3, 4, 1, 2)
    assert env.node_rank == 1
    pmi = {"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}
    env = read_env({**pmi, "MASTER_ADDR": "h", "MASTER_PORT": "1"})
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size) == (1, 2, 1, 2)
    with pytest.raises(RuntimeError, match=r"SLURM_PROCID='x' is not an integer"):
        read_env({**SLURM, "SLURM_PROCID": "x"})


def _free_port_in(lo, hi):
    for _ in range(200):
        port = random.randint(lo, hi)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    pytest.skip(f"no free port in {lo}..{hi}")


def _run_ranks(envs):
    procs = [
        subprocess.Popen([sys.executable, worker("scheduler_worker.py")], env=clean_env(**e),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for e in envs
    ]  # fmt: skip
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, out + err
    return sorted((json_lines(out)[0] for out, _ in outs), key=lambda r: r["rank"])


@pytest.mark.multiprocess
def test_ranks_started_as_srun_starts_them_join_without_the_launcher():
    port = _free_port_in(10000, 19999)
    job = f"77{port - 10000:04d}"  # the port Lightning's rule derives from the job id
    got = _run_ranks(
        {"SLURM_PROCID": r, "SLURM_NTASKS": 2, "SLURM_LOCALID": r, "SLURM_NODEID": 0,
         "SLURM_TASKS_PER_NODE": "2", "SLURM_NNODES": 1, "SLURM_JOB_NODELIST": "localhost",
         "SLURM_JOB_ID": job}  # fmt: skip
        for r in range(2)
    )
    assert [{k: g[k] for k in ("rank", "world", "local_rank", "sum")} for g in got] == [
        {"rank": r, "world": 2, "local_rank": r, "sum": 3.0} for r in range(2)
    ]
    _trains_as_the_launcher_does(got)


@pytest.mark.multiprocess
def test_ranks_started_as_mpirun_starts_them_join_without_the_launcher():
    port = _free_port_in(20000, 60000)
    got = _run_ranks(
        {"OMPI_COMM_WORLD_RANK": r, "OMPI_COMM_WORLD_SIZE": 3, "OMPI_COMM_WORLD_LOCAL_RANK": r,
         "OMPI_COMM_WORLD_LOCAL_SIZE": 3, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        for r in range(3)
    )  # fmt: skip
    assert [{k: g[k] for k in ("rank", "world", "local_rank", "sum")} for g in got] == [
        {"rank": r, "world": 3, "local_rank": r, "sum": 6.0} for r in range(3)
    ]
    _trains_as_the_launcher_does(got)


@pytest.mark.multiprocess
def test_pods_of_a_pytorchjob_join_with_torchruns_variables_and_train_as_the_launcher():
    """Kubeflow's PyTorchJob starts one pod a rank with torchrun's variables (no token, no
    launcher): four processes train as four of our launcher's ranks do."""
    port = _free_port_in(20000, 60000)
    got = _run_ranks(
        {"RANK": r, "WORLD_SIZE": 4, "LOCAL_RANK": 0, "LOCAL_WORLD_SIZE": 1, "GROUP_RANK": r,
         "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        for r in range(4)
    )  # fmt: skip
    assert [(g["rank"], g["world"], g["sum"]) for g in got] == [(r, 4, 10.0) for r in range(4)]
    _trains_as_the_launcher_does(got)


_LAUNCHED = {}


def _trains_as_the_launcher_does(got):
    """Every rank ends with the same weights, equal to those 4 ranks of our launcher reach."""
    if not _LAUNCHED:
        r = launch(["--nproc_per_node", "4"], [worker("scheduler_worker.py")], timeout=120)
        assert r.returncode == 0, r
        _LAUNCHED.update(next(g for g in json_lines(r.stdout) if g["rank"] == 0))
    for g in got:
        np.testing.assert_allclose(g["losses"], _LAUNCHED["losses"], rtol=1e-5)
        for mine, theirs in zip(g["weights"], _LAUNCHED["weights"]):
            np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
