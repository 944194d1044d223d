"""flow.distributed through real processes started by the launcher (Gloo on loopback), plus the
store and the single-process defaults in this process."""

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.distributed as dist
from _launch import LAUNCH, clean_env, json_lines, launch, logs_by_rank, worker
from oneflowlike.distributed import _env
from oneflowlike.distributed.launch import free_port

needs_comm = pytest.mark.skipif(
    not hasattr(flow._C, "comm"), reason="this build has no oneflowlike._C.comm"
)


def _reports(log_dir):
    return {r: json_lines(text) for r, text in logs_by_rank(log_dir).items()}


def _run_ok(tmp_path, nproc, script, *args, timeout=120):
    r = launch(
        ["--nproc_per_node", str(nproc), "--log_dir", str(tmp_path), "--rdzv_timeout", "60"],
        [worker(script), *map(str, args)],
        timeout=timeout,
    )
    logs = logs_by_rank(tmp_path)
    assert r.returncode == 0, f"{r}\n" + "\n".join(
        f"--- rank {k} ---\n{v}" for k, v in logs.items()
    )
    return {k: json_lines(v)[-1] for k, v in logs.items()}


# --- in this process: environment parsing and the single-process job -------------------------


def test_read_env_defaults_to_one_process():
    e = _env.read_env({})
    assert (e.rank, e.world_size, e.local_rank, e.local_world_size, e.nnodes) == (0, 1, 0, 1, 1)


def test_read_env_follows_the_launcher():
    e = _env.read_env(
        dict(RANK="5", WORLD_SIZE="8", LOCAL_RANK="1", LOCAL_WORLD_SIZE="4", GROUP_RANK="1",
             GROUP_WORLD_SIZE="2", MASTER_ADDR="10.0.0.1", MASTER_PORT="1234",
             OFL_STORE_TOKEN="t")
    )  # fmt: skip
    assert (e.rank, e.local_rank, e.node_rank, e.nnodes, e.master_port) == (5, 1, 1, 2, 1234)
    assert e.token == "t" and e.master_addr == "10.0.0.1"


@pytest.mark.parametrize(
    "env, message",
    [
        ({"RANK": "4", "WORLD_SIZE": "4"}, "RANK=4 is outside WORLD_SIZE=4"),
        ({"RANK": "x"}, "RANK='x' is not an integer"),
        ({"RANK": "1", "WORLD_SIZE": "2"}, "needs MASTER_ADDR and MASTER_PORT"),
    ],
)
def test_read_env_names_bad_variables(env, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        _env.read_env(env)


def test_local_address_reaches_loopback_master():
    assert _env.local_address("127.0.0.1", 1234) == "127.0.0.1"


@needs_comm
def test_single_process_needs_no_launcher():
    dist.destroy()
    try:
        assert dist.get_rank() == 0 and flow.env.get_world_size() == 1
        x = flow.tensor([1.0, 2.0])
        dist.all_reduce(x)
        assert dist.is_initialized() and dist.world().size() == 1
        assert np.array(x.numpy()).tolist() == [1.0, 2.0]
        assert np.array(dist.all_gather(x).numpy()).tolist() == [1.0, 2.0]
        dist.barrier()
        assert dist.init() is dist.world()  # idempotent
    finally:
        dist.destroy()
    assert not dist.is_initialized()


# --- the store --------------------------------------------------------------------------------


@needs_comm
def test_store_operations_and_token():
    port = free_port()
    server = flow._C.comm.TcpStore("127.0.0.1", port, True, token="right", timeout_s=5)
    client = flow._C.comm.TcpStore("127.0.0.1", port, False, token="right", timeout_s=5)
    client.set("k", b"v")
    assert server.get("k") == b"v"
    assert client.add("n", 2) == 2 and server.add("n", 3) == 5
    assert client.compare_set("c", b"", b"x") == b"x"
    assert client.compare_set("c", b"y", b"z") == b"x"
    assert client.check(["k", "c"]) and not client.check(["k", "missing"])
    client.wait(["k"])
    assert server.remove("k") and not client.check(["k"])
    start = time.monotonic()
    with pytest.raises(Exception, match="missing"):
        client.wait(["missing"], 0.5)
    assert time.monotonic() - start < 5


@needs_comm
@pytest.mark.parametrize("token", ["wrong", ""])
def test_store_rejects_a_client_with_the_wrong_token(token):
    port = free_port()
    server = flow._C.comm.TcpStore("127.0.0.1", port, True, token="right", timeout_s=5)
    start = time.monotonic()
    with pytest.raises(Exception, match="(?i)token") as info:
        client = flow._C.comm.TcpStore("127.0.0.1", port, False, token=token, timeout_s=3)
        client.set("k", b"v")
    assert time.monotonic() - start < 5, "a rejected client must not retry until its timeout"
    assert str(port) in str(info.value) or "127.0.0.1" in str(info.value), info.value
    server.set("still", b"serving")
    assert server.get("still") == b"serving"


_FLOOD = """
import resource, socket, sys, time
import oneflowlike as flow
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # a thousand here, and the store's
if soft < 4096 and (hard == resource.RLIM_INFINITY or hard >= 4096):
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))
port = int(sys.argv[1])
store = flow._C.comm.TcpStore("127.0.0.1", port, True, timeout_s=5)
flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(1000)]
def served(key):
    start = time.monotonic()
    rank = flow._C.comm.TcpStore("127.0.0.1", port, False, timeout_s=10)
    rank.set(key, b"1")
    assert store.get(key) == b"1"
    return time.monotonic() - start
during = served("during")
for s in flood:
    s.close()
print(during, served("after"), flush=True)
"""


@needs_comm
@pytest.mark.multiprocess
def test_the_store_serves_ranks_during_and_after_a_thousand_hostile_connections():
    # Rank 0's stderr is a pipe nobody reads, as under a stalled log collector: the store's
    # lines about the flood used to fill it and stop the store for good.
    stalled_read, stalled_write = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _FLOOD, str(free_port())],
            stdout=subprocess.PIPE,
            stderr=stalled_write,
            text=True,
        )
        os.close(stalled_write)
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(stalled_read)
    assert proc.returncode == 0, out
    during, after = map(float, out.split())
    assert during < 5 and after < 5, out


# --- real processes through the launcher ------------------------------------------------------


@needs_comm
@pytest.mark.parametrize("nproc", [2, 3, 4])
@pytest.mark.multiprocess
def test_every_collective_and_dtype_class(tmp_path, nproc):
    reports = _run_ok(tmp_path, nproc, "collectives_worker.py")
    assert sorted(reports) == list(range(nproc))
    for rank, rep in reports.items():
        assert rep["env"] == [rank, nproc, rank] and rep["nodes"] == 1
        assert rep["checks"] > 200
    assert len({rep["checks"] for rep in reports.values()}) == 1


@needs_comm
@pytest.mark.multiprocess
def test_sub_groups(tmp_path):
    reports = _run_ok(tmp_path, 4, "groups_worker.py")
    assert [reports[r]["groups"] for r in range(4)] == ["ok"] * 4


def _timeout_job(tmp_path, phase):
    """Rank 2 of 3 never arrives; returns the error of the rank the launcher names."""
    r = launch(
        ["--nproc_per_node", "3", "--log_dir", str(tmp_path), "--rdzv_timeout", "3"],
        [worker("timeout_worker.py"), "2", phase],
        timeout=60,
    )
    assert r.returncode == 1 and r.seconds < 20, r
    named = re.search(r"rank ([01]) \(local [01], pid \d+\) exited with code 1", r.stderr)
    assert named, r
    reports = _reports(tmp_path)
    # One of ranks 0 and 1 names rank 2: rank 0 holds the store, and if rank 1 asks after rank 0
    # has gone, rank 0 printed first. (The launcher may name either: it sees both exit.)
    naming = [
        rep for rank in (0, 1) for rep in reports[rank] if "did not arrive: [2]" in rep["error"]
    ]
    assert naming, {rank: logs_by_rank(tmp_path)[rank] for rank in (0, 1)}
    for rank in (0, 1):  # the later one may find rank 0's store gone when it asks who is missing
        for rep in reports[rank]:
            assert "timed out" in rep["error"] and rep["seconds"] < 10, rep
    return naming[0]["error"]


@needs_comm
@pytest.mark.multiprocess
def test_a_rank_that_never_joins_times_out_naming_it(tmp_path):
    _timeout_job(tmp_path, "init")


@needs_comm
@pytest.mark.multiprocess
def test_a_rank_that_skips_a_collective_times_out_naming_it(tmp_path):
    message = _timeout_job(tmp_path, "collective")
    assert "all_reduce" in message


@needs_comm
@pytest.mark.parametrize("how, code, cause", [
    ("exit:5", 5, "exited with code 5"),
    ("kill", 137, "was killed by SIGKILL"),
])  # fmt: skip
@pytest.mark.multiprocess
def test_a_rank_dying_mid_job_stops_the_job(tmp_path, how, code, cause):
    r = launch(
        ["--nproc_per_node", "4", "--log_dir", str(tmp_path), "--rdzv_timeout", "30"],
        [worker("crash_worker.py"), "1", how],
    )
    assert r.returncode == code, r
    assert re.search(rf"rank 1 \(local 1, pid \d+\) {cause}", r.stderr), r
    assert r.seconds < 15, r
    assert "rank 0 at step 4" in logs_by_rank(tmp_path)[0]


@needs_comm
@pytest.mark.multiprocess
def test_launchers_with_different_tokens_do_not_meet(tmp_path):
    port = free_port()
    common = ["--nnodes", "2", "--nproc_per_node", "1", "--master_port", str(port)]
    common += ["--rdzv_timeout", "3", "--log_dir", str(tmp_path)]
    procs = [
        subprocess.Popen(
            [*LAUNCH, *common, "--node_rank", str(n), "--rdzv_token", tok,
             worker("allreduce_worker.py")],
            env=clean_env(), stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        for n, tok in ((0, "alpha"), (1, "beta"))
    ]
    errs = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] != [0, 0], errs
    assert procs[1].returncode != 0, errs
    assert re.search("(?i)token", logs_by_rank(tmp_path)[1]), logs_by_rank(tmp_path)[1]
