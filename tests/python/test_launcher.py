"""The launcher with plain-Python ranks: environment, logs, -m / --no_python, failure handling."""

import argparse
import os
import re
import signal
import subprocess
import time

import pytest

from _launch import LAUNCH, WORKERS, alive, clean_env, json_lines, launch, logs_by_rank, worker
from oneflowlike.distributed import launch as launch_mod

pytestmark = pytest.mark.multiprocess  # all but child_envs' test start the launcher


def _cpus():
    return len(os.sched_getaffinity(0))


def test_sets_each_rank_environment(tmp_path):
    r = launch(
        ["--nproc_per_node", "3", "--log_dir", str(tmp_path), "--rdzv_timeout", "7"],
        [worker("env_worker.py"), "--lr", "0.1", "-m", "x"],
    )
    assert r.returncode == 0, r
    infos = {int(i["RANK"]): i for log in logs_by_rank(tmp_path).values() for i in json_lines(log)}
    assert sorted(infos) == [0, 1, 2]
    threads = str(max(1, _cpus() // 3))
    for rank, i in infos.items():
        assert i["LOCAL_RANK"] == str(rank) and i["WORLD_SIZE"] == "3"
        assert i["LOCAL_WORLD_SIZE"] == "3" and i["GROUP_WORLD_SIZE"] == "1"
        assert i["GROUP_RANK"] == i["NODE_RANK"] == "0"
        assert i["MASTER_ADDR"] == "127.0.0.1" and int(i["MASTER_PORT"]) > 0
        assert i["OMP_NUM_THREADS"] == i["OFL_NUM_THREADS"] == threads
        assert float(i["OFL_COMM_TIMEOUT_S"]) == 7.0
        assert re.fullmatch(r"[0-9a-f]{32}", i["OFL_STORE_TOKEN"])
        assert i["argv"] == ["--lr", "0.1", "-m", "x"]
    assert len({i["OFL_STORE_TOKEN"] for i in infos.values()}) == 1
    assert len({i["MASTER_PORT"] for i in infos.values()}) == 1


def test_keeps_thread_counts_and_token_already_set():
    env = clean_env(OMP_NUM_THREADS=5, OFL_NUM_THREADS=6, OFL_STORE_TOKEN="sekrit")
    r = launch(["--nproc_per_node", "2", "--master_port", "29999"], [worker("env_worker.py")], env)
    assert r.returncode == 0, r
    infos = json_lines(r.stdout)
    assert len(infos) == 2
    for i in infos:
        assert (i["OMP_NUM_THREADS"], i["OFL_NUM_THREADS"]) == ("5", "6")
        assert i["OFL_STORE_TOKEN"] == "sekrit" and i["MASTER_PORT"] == "29999"
        assert i["OFL_COMM_TIMEOUT_S"] is None


def test_two_launchers_on_one_machine_form_one_world():
    common = ["--nnodes", "2", "--nproc_per_node", "2", "--master_port", "29998"]
    procs = [
        subprocess.Popen(
            [
                *LAUNCH,
                *common,
                "--node_rank",
                str(n),
                "--rdzv_token",
                "tok",
                worker("env_worker.py"),
            ],
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (0, 1)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    infos = {int(i["RANK"]): i for out, _ in outs for i in json_lines(out)}
    assert sorted(infos) == [0, 1, 2, 3]
    for rank, i in infos.items():
        assert i["NODE_RANK"] == str(rank // 2) and i["LOCAL_RANK"] == str(rank % 2)
        assert i["WORLD_SIZE"] == "4" and i["GROUP_WORLD_SIZE"] == "2"
        assert i["OFL_STORE_TOKEN"] == "tok"


def test_log_dir_writes_one_log_per_rank_and_nothing_to_stdout(tmp_path):
    logs = tmp_path / "logs"
    r = launch(["--nproc_per_node", "4", "--log_dir", str(logs)], [worker("env_worker.py")])
    assert r.returncode == 0, r
    assert r.stdout == ""
    assert sorted(os.listdir(logs)) == [f"rank_{i}.log" for i in range(4)]
    for rank, text in logs_by_rank(logs).items():
        assert [i["RANK"] for i in json_lines(text)] == [str(rank)]


def test_module_flag_runs_a_module():
    env = clean_env(PYTHONPATH=os.pathsep.join([str(WORKERS), os.environ.get("PYTHONPATH", "")]))
    r = launch(["--nproc_per_node", "2", "-m"], ["env_worker", "a"], env)
    assert r.returncode == 0, r
    assert sorted(i["RANK"] for i in json_lines(r.stdout)) == ["0", "1"]
    assert all(i["argv"] == ["a"] for i in json_lines(r.stdout))


def test_no_python_runs_an_executable():
    r = launch(["--nproc-per-node", "2", "--no_python"], ["sh", "-c", 'echo "rank=$RANK"'])
    assert r.returncode == 0, r
    assert sorted(r.stdout.split()) == ["rank=0", "rank=1"]


def test_missing_executable_is_reported():
    r = launch(["--no_python"], ["/nonexistent/program"])
    assert r.returncode == 1 and "cannot start '/nonexistent/program'" in r.stderr, r


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--nnodes", "2", "--node_rank", "2"], "--node_rank 2 is outside [0, 2)"),
        (["--nproc_per_node", "0"], "must be >= 1"),
        (["-m", "--no_python"], "exclude each other"),
    ],
)
def test_bad_arguments_are_refused(argv, message):
    r = launch(argv, ["x.py"])
    assert r.returncode == 2 and message in r.stderr, r


def _pids(pid_dir, n):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [pid_dir / f"{r}.pid" for r in range(n)]
        if all(p.exists() for p in found):
            return [int(p.read_text()) for p in found]
        time.sleep(0.05)
    raise AssertionError(f"ranks did not start: {os.listdir(pid_dir)}")


def _fail_job(tmp_path, how, *extra):
    r = launch(
        ["--nproc_per_node", "4"], [worker("exit_worker.py"), str(tmp_path), "2", how, *extra]
    )
    pids = _pids(tmp_path, 4)
    assert not any(alive(p) for p in pids), "a rank outlived the launcher"
    return r, pids


def test_crashed_rank_stops_the_others_and_is_named(tmp_path):
    r, pids = _fail_job(tmp_path, "code:3")
    assert r.returncode == 3, r
    assert f"rank 2 (local 2, pid {pids[2]}) exited with code 3" in r.stderr, r
    assert r.seconds < 10, r
    assert {(tmp_path / f"{i}.stopped").read_text() for i in (0, 1, 3)} == {"SIGTERM"}


def test_killed_rank_stops_the_others_and_is_named(tmp_path):
    r, pids = _fail_job(tmp_path, "kill")
    assert r.returncode == 128 + signal.SIGKILL, r
    assert f"rank 2 (local 2, pid {pids[2]}) was killed by SIGKILL" in r.stderr, r
    assert r.seconds < 10, r


def test_ranks_ignoring_sigterm_are_killed_after_the_grace_period(tmp_path):
    r, _ = _fail_job(tmp_path, "code:1", "--ignore-sigterm")
    assert r.returncode == 1 and "rank 2 (local 2" in r.stderr, r
    assert launch_mod.GRACE_S <= r.seconds < launch_mod.GRACE_S + 8, r


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_launcher_stops_every_rank(tmp_path, sig):
    p = subprocess.Popen(
        [*LAUNCH, "--nproc_per_node", "3", worker("exit_worker.py"), str(tmp_path), "-1", "none"],
        env=clean_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pids = _pids(tmp_path, 3)
        start = time.monotonic()
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 128 + sig, err
    assert time.monotonic() - start < launch_mod.GRACE_S, err
    assert f"got {sig.name}" in err
    assert not any(alive(q) for q in pids)
    assert {(tmp_path / f"{i}.stopped").read_text() for i in range(3)} == {sig.name}


def test_child_envs_counts_ranks_from_the_node_rank():
    args = argparse.Namespace(
        nnodes=3, node_rank=2, nproc_per_node=2, master_addr="10.0.0.1", master_port=1234,
        token="t", rdzv_timeout=None, log_dir=None,
    )  # fmt: skip
    envs = launch_mod.child_envs(args, {"OMP_NUM_THREADS": "9"})
    assert [(e["RANK"], e["LOCAL_RANK"]) for e in envs] == [("4", "0"), ("5", "1")]
    assert {e["WORLD_SIZE"] for e in envs} == {"6"} and envs[0]["OMP_NUM_THREADS"] == "9"
    assert envs[0]["OFL_NUM_THREADS"] == str(max(1, _cpus() // 2))


def test_ranks_do_not_outlive_a_killed_launcher(tmp_path):
    p = subprocess.Popen(
        [*LAUNCH, "--nproc_per_node", "2", worker("exit_worker.py"), str(tmp_path), "-1", "none"],
        env=clean_env(),
    )
    pids = _pids(tmp_path, 2)
    p.kill()
    p.wait(timeout=10)
    deadline = time.monotonic() + 5
    while any(alive(q) for q in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(q) for q in pids)


def test_oneflows_and_torchs_spellings_of_the_flags_are_accepted():
    """OneFlow's --logdir and --redirect_stdout_and_stderr (logs in ./log by default) and
    torch.distributed.launch's --use_env (ranks always get LOCAL_RANK in their environment)."""
    parse = launch_mod.parse_args
    assert parse(["--nproc_per_node=2", "--logdir", "out", "train.py"]).log_dir == "out"
    assert parse(["--redirect_stdout_and_stderr", "train.py"]).log_dir == "log"
    assert parse(["--redirect_stdout_and_stderr", "--logdir=x", "train.py"]).log_dir == "x"
    assert parse(["--use_env", "train.py", "--lr", "1"]).training_script_args == ["--lr", "1"]
    assert parse(["train.py"]).log_dir is None
